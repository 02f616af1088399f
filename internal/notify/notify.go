// Package notify announces a run's milestones (started, a task done or
// failed, waiting for a usage limit, completed, stopped) to Slack,
// Discord, Telegram, ntfy, a JSON webhook and a shell command, as [notify]
// in ralph.toml configures them.
//
// It is fed the loop's events like a renderer, and it must never slow the
// loop or stop it: Handle only queues (a bounded queue per target; when
// it is full the notification is dropped and logged), each target
// delivers in its own goroutine with a timeout per attempt and retries
// with backoff, and Close waits a bounded time for what is queued.
// Addresses and tokens are secrets: they never appear in what it logs or
// reports.
package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/state"
)

// Event is one notification: what every target is sent (the webhook gets
// it as JSON, the command in its environment, the chats its Text).
type Event struct {
	Event   string    `json:"event"`
	Text    string    `json:"text"`
	Project string    `json:"project"`
	RunID   string    `json:"run_id"`
	Time    time.Time `json:"time"`
	// Task is the task of task_done, task_failed, waiting_for_limit and
	// question.
	Task *loop.TaskRef `json:"task,omitempty"`
	// Until is when a usage limit resets (waiting_for_limit).
	Until *time.Time `json:"until,omitempty"`
	// Status is how the run ended (completed, stopped).
	Status    string  `json:"status,omitempty"`
	TasksDone int     `json:"tasks_done"`
	TasksAll  int     `json:"tasks_total"`
	CostUSD   float64 `json:"cost_usd"`
}

// Options are what the notifier needs besides the config.
type Options struct {
	// Project names the project in messages (the directory's base name).
	Project string
	// Dir is the project's directory, Environ ralph's environment, from
	// which the command target's is made.
	Dir     string
	Environ []string
	// Programs is the run's lookup of the programs ralph starts outside
	// the sandbox, whose PATH the command runs with; nil: one made for
	// Dir. Sandbox is the run's sandbox, letting in only notify.env's
	// variables and the event's, for notify.sandbox; nil for none.
	Programs *proc.Outside
	Sandbox  proc.Wrapper
	// Log receives delivery failures (with secrets redacted); nil: none.
	Log *slog.Logger
	// Warn, when set, is told of a notification that could not be
	// delivered (secrets redacted), to show the user.
	Warn func(msg string)
	// PageURL, when set, returns the address of a page where a question
	// can be answered (ralph serve's), for the question's message.
	PageURL func() string
	// Answer, when set, is given the answers to questions that come as
	// replies to the question's Telegram message.
	Answer func(task, text string)
	// Client sends the HTTP requests (tests); nil: a default client.
	Client *http.Client
	// Backoff is the wait before the first retry, doubled after each;
	// CloseWait bounds how long Close waits for queued deliveries.
	Backoff   time.Duration
	CloseWait time.Duration
}

// queueSize bounds the notifications waiting for one target.
const queueSize = 64

// Notifier delivers events to the configured targets. It is a renderer:
// Handle and Close.
type Notifier struct {
	opts    Options
	events  map[string]bool
	workers []*worker
	timeout time.Duration
	retries int
	secrets []string
	ctx     context.Context // ends deliveries still running when Close gives up
	cancel  context.CancelFunc
	closed  sync.Once
}

// target is one destination.
type target interface {
	// name is how logs call it: slack, telegram, ...
	name() string
	send(ctx context.Context, e Event) error
}

// New returns a notifier for the targets cfg configures, or nil when it
// configures none.
func New(cfg config.Notify, opts Options) (*Notifier, error) {
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.CloseWait <= 0 {
		opts.CloseWait = 10 * time.Second
	}
	if opts.Project == "" {
		opts.Project = filepath.Base(opts.Dir)
	}
	targets, secrets, err := targets(cfg, opts)
	if err != nil || len(targets) == 0 {
		return nil, err
	}
	n := &Notifier{opts: opts, events: map[string]bool{}, timeout: cfg.Timeout.D(), retries: cfg.Retries,
		secrets: secrets}
	if n.timeout <= 0 {
		n.timeout = 10 * time.Second
	}
	for _, e := range cfg.Events {
		n.events[e] = true
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	for _, t := range targets {
		if tg, ok := t.(telegram); ok && tg.replies != nil {
			go tg.replies.run(n.ctx)
		}
		w := &worker{n: n, t: t, queue: make(chan Event, queueSize), done: make(chan struct{})}
		n.workers = append(n.workers, w)
		go w.run()
	}
	return n, nil
}

// targets builds the configured targets and lists the secrets among the
// settings.
func targets(cfg config.Notify, opts Options) ([]target, []string, error) {
	var ts []target
	var secrets []string
	h := httpTarget{client: opts.Client}
	if u := cfg.SlackWebhook; u != "" {
		ts = append(ts, slack{h, u})
		secrets = append(secrets, u)
	}
	if u := cfg.DiscordWebhook; u != "" {
		ts = append(ts, discord{h, u})
		secrets = append(secrets, u)
	}
	if cfg.TelegramToken != "" || cfg.TelegramChatID != "" {
		if cfg.TelegramToken == "" || cfg.TelegramChatID == "" {
			return nil, nil, fmt.Errorf("[notify] telegram needs both telegram-token and telegram-chat-id")
		}
		tg := telegram{httpTarget: h, api: strings.TrimRight(cfg.TelegramAPI, "/"), token: cfg.TelegramToken, chat: cfg.TelegramChatID}
		if opts.Answer != nil {
			tg.replies = newTelegramReplies(opts.Answer)
			tg.replies.t = tg
		}
		ts = append(ts, tg)
		secrets = append(secrets, cfg.TelegramToken)
	}
	if cfg.NtfyTopic != "" {
		ts = append(ts, ntfy{h, strings.TrimRight(cfg.NtfyServer, "/"), cfg.NtfyTopic, cfg.NtfyToken})
		secrets = append(secrets, cfg.NtfyTopic, cfg.NtfyToken)
	}
	if u := cfg.WebhookURL; u != "" {
		headers := http.Header{}
		for _, line := range cfg.WebhookHeaders {
			k, v, _ := strings.Cut(line, ":")
			headers.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			secrets = append(secrets, strings.TrimSpace(v))
		}
		ts = append(ts, webhook{h, u, headers})
		secrets = append(secrets, u)
	}
	if c := cfg.Command; c != "" {
		cmd, err := newCommand(cfg, opts)
		if err != nil {
			return nil, nil, err
		}
		ts = append(ts, cmd)
		// A command may hold a token (curl -H ...): failures name it not.
		secrets = append(secrets, c)
	}
	return ts, secrets, nil
}

// Handle turns a loop event into a notification, if it is a milestone
// that is asked for, and queues it for every target. It never blocks.
func (n *Notifier) Handle(e loop.Event) {
	ev, ok := n.event(e)
	if !ok || !n.events[ev.Event] {
		return
	}
	for _, w := range n.workers {
		w.enqueue(ev)
	}
}

// Close waits, at most Options.CloseWait, for the queued notifications to
// be delivered; what is left is dropped and logged.
func (n *Notifier) Close(error) {
	n.closed.Do(func() {
		for _, w := range n.workers {
			w.mu.Lock()
			w.closed = true
			close(w.queue)
			w.mu.Unlock()
		}
		deadline := time.NewTimer(n.opts.CloseWait)
		defer deadline.Stop()
		for _, w := range n.workers {
			select {
			case <-w.done:
			case <-deadline.C:
				n.cancel()
				n.logf("notify: gave up on undelivered notifications after %s", n.opts.CloseWait)
				for _, w := range n.workers {
					<-w.done
				}
				return
			}
		}
		n.cancel()
	})
}

// event maps a loop event onto a milestone.
func (n *Notifier) event(e loop.Event) (Event, bool) {
	ev := Event{Project: n.opts.Project, RunID: e.RunID, Time: e.Time, Task: e.Task}
	if e.Plan != nil {
		ev.TasksDone, ev.TasksAll = e.Plan.Done, e.Plan.Total
	}
	cost := ""
	if e.Totals != nil {
		ev.CostUSD = e.Totals.CostUSD
		cost = e.Totals.CostSource
	}
	where := "ralph · " + n.opts.Project
	switch e.Kind {
	case loop.EventRunStarted:
		ev.Event = "started"
		ev.Text = fmt.Sprintf("%s: run started, %d of %d tasks done", where, ev.TasksDone, ev.TasksAll)
	case loop.EventIterationEnded:
		r := e.Record
		if r == nil || (r.Outcome != state.OutcomeTaskDone && r.Outcome != state.OutcomePlanDone) {
			return ev, false
		}
		ev.Event = "task_done"
		ev.Text = fmt.Sprintf("%s: ✓ %s done (iteration %d, %d of %d tasks done)", where, taskName(e.Task, r.TaskID), e.Iteration, ev.TasksDone, ev.TasksAll)
	case loop.EventTaskFailed:
		ev.Event = "task_failed"
		ev.Text = fmt.Sprintf("%s: ✗ %s %s", where, taskName(e.Task, ""), e.Message)
	case loop.EventWaiting:
		// Short backoffs after transient errors are not worth a message.
		quota := strings.HasPrefix(e.Message, "quota")
		if !strings.HasPrefix(e.Message, "usage limit") && !quota || e.Until == nil {
			return ev, false
		}
		what := "usage limit hit"
		if quota {
			what = "quota reserve reached" // --quota-reserve: the account's window is nearly used
		}
		ev.Event, ev.Until = "waiting_for_limit", e.Until
		ev.Text = fmt.Sprintf("%s: %s, waiting until %s (%s)", where, what,
			e.Until.Local().Format("Mon 15:04"), e.Until.Sub(e.Time).Round(time.Minute))
	case loop.EventAgentSwitched:
		ev.Event, ev.Until = "agent_switched", e.Until
		ev.Text = fmt.Sprintf("%s: ⇄ %s → %s: %s", where, e.From, e.To, e.Message)
	case loop.EventQuestion:
		ev.Event = "question"
		answerAt := "`ralph answer TEXT`"
		if n.opts.PageURL != nil {
			if u := n.opts.PageURL(); u != "" {
				answerAt = u + " or with " + answerAt
			}
		}
		ev.Text = fmt.Sprintf("%s: ? %s asks: %s\n(answer on %s)", where, taskName(e.Task, ""), e.Message, answerAt)
	case loop.EventRunEnded:
		ev.Status = e.Status
		if e.Status == "done" {
			ev.Event = "completed"
			approx := "" // an estimate from tokens says so, as receipts do
			if cost == state.CostEstimated {
				approx = "~"
			}
			ev.Text = fmt.Sprintf("%s: all %d tasks done (%s$%.2f)", where, ev.TasksAll, approx, ev.CostUSD)
		} else {
			ev.Event = "stopped"
			ev.Text = fmt.Sprintf("%s: run %s with %d of %d tasks done: %s", where, e.Status, ev.TasksDone, ev.TasksAll, e.Message)
		}
	default:
		return ev, false
	}
	return ev, true
}

func taskName(t *loop.TaskRef, ids string) string {
	switch {
	case t == nil:
		return ids
	case ids != "" && ids != t.ID:
		return ids
	case t.Title == "":
		return t.ID
	}
	return t.ID + " " + t.Title
}

// redact removes the secrets from a text meant for logs or the screen.
func (n *Notifier) redact(s string) string {
	for _, sec := range n.secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "<redacted>")
		}
	}
	return s
}

func (n *Notifier) logf(format string, args ...any) {
	msg := n.redact(fmt.Sprintf(format, args...))
	if n.opts.Log != nil {
		n.opts.Log.Warn(msg)
	}
	if n.opts.Warn != nil {
		n.opts.Warn(msg)
	}
}

// worker delivers one target's notifications in order.
type worker struct {
	n       *Notifier
	t       target
	mu      sync.Mutex
	closed  bool
	queue   chan Event
	done    chan struct{}
	dropped int
}

func (w *worker) enqueue(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	select {
	case w.queue <- e:
	default:
		w.dropped++
		if w.dropped == 1 || w.dropped%100 == 0 {
			w.n.logf("notify %s: queue full, dropped %s (%d dropped so far)", w.t.name(), e.Event, w.dropped)
		}
	}
}

func (w *worker) run() {
	defer close(w.done)
	for e := range w.queue {
		w.deliver(e)
	}
}

// deliver sends one notification, retrying with backoff: a failing
// target costs its own goroutine time, never the loop's.
func (w *worker) deliver(e Event) {
	n := w.n
	wait := n.opts.Backoff
	var err error
	for attempt := 0; attempt <= n.retries; attempt++ {
		if attempt > 0 {
			select {
			case <-n.ctx.Done():
				n.logf("notify %s: %s not delivered: %v", w.t.name(), e.Event, err)
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, time.Minute)
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.timeout)
		err = w.t.send(ctx, e)
		cancel()
		if err == nil {
			return
		}
		if isPermanent(err) {
			break
		}
	}
	n.logf("notify %s: %s not delivered: %v", w.t.name(), e.Event, err)
}

// payload is the event as the webhook and the command get it.
func payload(e Event) []byte {
	b, _ := json.Marshal(e)
	return b
}
