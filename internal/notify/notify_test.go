package notify

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// sink is a local server standing in for every service: it records what
// each target was sent, by the event it announces.
type sink struct {
	mu   sync.Mutex
	got  map[string][]string // target → events, in arrival order
	fail map[string]int      // target → failures still to answer with
	srv  *httptest.Server
}

func newSink(t *testing.T) *sink {
	t.Helper()
	s := &sink{got: map[string][]string{}, fail: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var target, event string
	switch r.URL.Path {
	case "/slack":
		var m struct{ Text string }
		_ = json.Unmarshal(body, &m)
		target, event = "slack", eventOf(m.Text)
	case "/discord":
		var m struct{ Content string }
		_ = json.Unmarshal(body, &m)
		target, event = "discord", eventOf(m.Content)
	case "/tg/bot123:SECRET-TOKEN/sendMessage":
		var m struct {
			ChatID string `json:"chat_id"`
			Text   string
		}
		_ = json.Unmarshal(body, &m)
		if m.ChatID != "42" {
			http.Error(w, "bad chat", http.StatusBadRequest)
			return
		}
		target, event = "telegram", eventOf(m.Text)
	case "/ntfy/secret-topic":
		if r.Header.Get("Authorization") != "Bearer NTFY-TOKEN" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		target = "ntfy"
		event = strings.ReplaceAll(strings.TrimPrefix(r.Header.Get("Title"), "ralph: "), " ", "_")
	case "/webhook":
		var e Event
		_ = json.Unmarshal(body, &e)
		if r.Header.Get("X-Token") != "HEADER-SECRET" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad headers", http.StatusBadRequest)
			return
		}
		target, event = "webhook", e.Event
	default:
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail[target] > 0 {
		s.fail[target]--
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	s.got[target] = append(s.got[target], event)
	if target == "telegram" {
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
}

// eventOf reads the event back from a chat message.
func eventOf(text string) string {
	for marker, event := range map[string]string{
		"run started": "started", "✓ ": "task_done", "✗ ": "task_failed",
		"usage limit hit": "waiting_for_limit", "⇄ claude → codex": "agent_switched", " asks: ": "question", "tasks done ($": "completed", "run stuck": "stopped",
	} {
		if strings.Contains(text, marker) {
			return event
		}
	}
	return "?" + text
}

func (s *sink) events() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for k, v := range s.got {
		out[k] = slices.Clone(v)
	}
	return out
}

func (s *sink) config() config.Notify {
	c := config.Defaults().Notify
	c.SlackWebhook = s.srv.URL + "/slack"
	c.DiscordWebhook = s.srv.URL + "/discord"
	c.TelegramAPI, c.TelegramToken, c.TelegramChatID = s.srv.URL+"/tg", "123:SECRET-TOKEN", "42"
	c.NtfyServer, c.NtfyTopic, c.NtfyToken = s.srv.URL+"/ntfy", "secret-topic", "NTFY-TOKEN"
	c.WebhookURL, c.WebhookHeaders = s.srv.URL+"/webhook", []string{"X-Token: HEADER-SECRET"}
	return c
}

// run is every milestone of a run, and events that are not milestones.
func run() []loop.Event {
	ref := &loop.TaskRef{ID: "US-001", Title: "Create the greeting"}
	until := t0.Add(4 * time.Hour)
	soon := t0.Add(10 * time.Second)
	plan := &loop.PlanProgress{Total: 2, Done: 1}
	return []loop.Event{
		{Kind: loop.EventRunStarted, Time: t0, RunID: "r1", Plan: &loop.PlanProgress{Total: 2}},
		{Kind: loop.EventIterationStarted, Time: t0, Iteration: 1, Task: ref},
		{Kind: loop.EventIterationEnded, Time: t0, Iteration: 1, Task: ref, Plan: plan,
			Record: &state.Record{TaskID: "US-001", Outcome: state.OutcomeTaskDone}},
		{Kind: loop.EventIterationEnded, Time: t0, Iteration: 2, Task: ref,
			Record: &state.Record{TaskID: "US-002", Outcome: state.OutcomeNoMarker}},
		{Kind: loop.EventTaskFailed, Time: t0, Task: &loop.TaskRef{ID: "US-002"}, Message: "failed after 3 attempts"},
		{Kind: loop.EventWaiting, Time: t0, Until: &soon, Message: "transient error (1/5): HTTP 529"},
		{Kind: loop.EventWaiting, Time: t0, Until: &until, Message: "usage limit: You've hit your limit"},
		{Kind: loop.EventAgentSwitched, Time: t0, Task: ref, From: "claude", To: "codex", Until: &until,
			Message: "codex stands in for claude, limited until 2026-11-21T16:00:00Z"},
		{Kind: loop.EventQuestion, Time: t0, Task: ref, Message: "hello or hi?"},
		{Kind: loop.EventWaiting, Time: t0, Message: "waiting for an answer: US-001: hello or hi?"},
		{Kind: loop.EventRunEnded, Time: t0, Status: "done", Plan: &loop.PlanProgress{Total: 2, Done: 2}, Totals: &state.Totals{CostUSD: 0.5}},
		{Kind: loop.EventRunEnded, Time: t0, Status: "stuck", Message: "no progress", Plan: plan},
	}
}

var allEvents = []string{"started", "task_done", "task_failed", "waiting_for_limit", "agent_switched", "question", "completed", "stopped"}

func TestEachEventDeliveredOnceToEveryTarget(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	dir, out := t.TempDir(), t.TempDir()
	cfg := s.config()
	cfg.Command = "echo $RALPH_EVENT >> " + filepath.Join(out, "events.txt")
	n, err := New(cfg, Options{Dir: dir, Environ: os.Environ(), Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range run() {
		n.Handle(e)
	}
	n.Close(nil)
	want := map[string][]string{}
	for _, target := range []string{"slack", "discord", "telegram", "ntfy", "webhook"} {
		want[target] = allEvents
	}
	if diff := cmp.Diff(want, s.events()); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(out, "events.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Join(allEvents, "\n")+"\n", string(b)); diff != "" {
		t.Errorf("command runs (-want +got):\n%s", diff)
	}
}

func TestOnlyTheConfiguredEvents(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	cfg := config.Notify{SlackWebhook: s.srv.URL + "/slack", Events: []string{"completed", "stopped"}, Retries: 1}
	n, err := New(cfg, Options{Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range run() {
		n.Handle(e)
	}
	n.Close(nil)
	if diff := cmp.Diff(map[string][]string{"slack": {"completed", "stopped"}}, s.events()); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

func TestRetriesWithBackoffDeliverOnce(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	s.fail["slack"] = 2
	cfg := config.Notify{SlackWebhook: s.srv.URL + "/slack", Events: []string{"started"}, Retries: 3}
	n, err := New(cfg, Options{Backoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n.Handle(run()[0])
	n.Close(nil)
	if diff := cmp.Diff(map[string][]string{"slack": {"started"}}, s.events()); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

func TestNoTargetsNoNotifier(t *testing.T) {
	t.Parallel()
	n, err := New(config.Defaults().Notify, Options{})
	if n != nil || err != nil {
		t.Errorf("New(defaults) = %v, %v; want nil, nil", n, err)
	}
	_, err = New(config.Notify{TelegramToken: "x"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "telegram-chat-id") {
		t.Errorf("telegram without a chat: %v", err)
	}
}

// A target that hangs or fails costs the loop nothing: Handle returns at
// once whatever the queue holds, Close gives up after CloseWait, and the
// failures are logged without the secrets.
func TestFailingTargetsNeverBlockAndKeepSecrets(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var hits atomic.Int32
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // connection refused from now on

	var logs bytes.Buffer
	var warned []string
	var mu sync.Mutex
	cfg := config.Defaults().Notify
	cfg.SlackWebhook = hang.URL + "/services/T000/B000/SLACKSECRET"
	cfg.TelegramAPI, cfg.TelegramToken, cfg.TelegramChatID = downURL, "999:TGSECRET", "1"
	cfg.NtfyServer, cfg.NtfyTopic = downURL, "NTFYSECRETTOPIC"
	cfg.WebhookURL = downURL + "/hook?key=WEBHOOKSECRET"
	cfg.Timeout = config.Duration(50 * time.Millisecond)
	cfg.Retries = 2
	n, err := New(cfg, Options{Backoff: time.Millisecond, CloseWait: 300 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Warn: func(msg string) {
			mu.Lock()
			warned = append(warned, msg)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	// Handle queues and never delivers inline: with every target failing,
	// the bounded queues fill ("queue full" below) instead of the loop
	// waiting on them.
	for range 100 {
		for _, e := range run() {
			n.Handle(e)
		}
	}
	n.Close(nil)
	mu.Lock()
	all := logs.String() + strings.Join(warned, "\n")
	mu.Unlock()
	if !strings.Contains(all, "not delivered") || !strings.Contains(all, "queue full") {
		t.Errorf("failures not reported:\n%s", all)
	}
	for _, secret := range []string{"SLACKSECRET", "TGSECRET", "NTFYSECRETTOPIC", "WEBHOOKSECRET"} {
		if strings.Contains(all, secret) {
			t.Errorf("a secret (%s) leaked into the logs:\n%s", secret, all)
		}
	}
	if hits.Load() == 0 {
		t.Error("the hanging target was never tried")
	}
}

// A wait for a window --quota-reserve protects is announced like a usage
// limit; a run whose cost is estimated says so.
func TestQuotaWaitAndEstimatedCost(t *testing.T) {
	t.Parallel()
	n := &Notifier{opts: Options{Project: "p"}}
	until := t0.Add(30 * time.Hour)
	ev, ok := n.event(loop.Event{Kind: loop.EventWaiting, Time: t0, Until: &until, Message: "quota: the seven_day window is 85% used"})
	if !ok || ev.Event != "waiting_for_limit" || !strings.Contains(ev.Text, "quota reserve reached, waiting until") {
		t.Errorf("quota wait: %v %+v", ok, ev)
	}
	ev, ok = n.event(loop.Event{Kind: loop.EventRunEnded, Time: t0, Status: "done", Plan: &loop.PlanProgress{Total: 2, Done: 2},
		Totals: &state.Totals{CostUSD: 1.5, CostSource: state.CostEstimated}})
	if !ok || !strings.Contains(ev.Text, "all 2 tasks done (~$1.50)") {
		t.Errorf("completed: %v %q", ok, ev.Text)
	}
}
