package session

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/notify"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/redact"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/ui"
)

// runView is what the renderers show of a run besides its events, and the
// handles the TUI's keys steer it with. run and demo share it.
type runView struct {
	dir          string
	plan         *task.Plan
	failed       func(id string) bool // tasks earlier runs gave up on
	agent, model string
	// newDecoder decodes the agent's raw output, for the transcript pager.
	newDecoder func() agent.Decoder
	// stop cancels the run's context (q, Ctrl-C in the TUI); steer takes
	// p and s.
	stop  context.CancelFunc
	steer *loop.Steering
	// notify announces milestones ([notify]); log records its failures.
	// pageURL is where a question can be answered (ralph serve's page).
	notify  config.Notify
	pageURL func() string
	// programs is the run's lookup of the programs it starts outside the
	// sandbox; notifyBox the sandbox of notify.sandbox's command.
	programs  *proc.Outside
	notifyBox proc.Wrapper
	log       *slog.Logger
}

// exitInterrupted is the exit code of an interrupted run (DESIGN.md §2),
// for a forced exit from the TUI.
const exitInterrupted = 130

// newRenderer picks how a run is shown: JSON lines with --json, plain
// lines with --no-tui or without a terminal, the TUI otherwise.
func newRenderer(f *Host, noTUI, jsonOut bool, v runView) (ui.Renderer, error) {
	r := screenRenderer(f, noTUI, jsonOut, v)
	nopts := notify.Options{Dir: v.dir, Environ: f.Environ(), Programs: v.programs, Sandbox: v.notifyBox, Log: v.log, PageURL: v.pageURL,
		Warn: func(msg string) { r.Handle(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: msg}) }}
	if v.steer != nil {
		// A reply to the question's Telegram message answers it.
		steer := v.steer
		nopts.Answer = func(task, text string) { steer.Answer(loop.Answer{Task: task, Text: text, By: "telegram"}) }
	}
	n, err := notify.New(v.notify, nopts)
	if err != nil {
		r.Close(err)
		return nil, err
	}
	if n == nil {
		return r, nil
	}
	// The screen is given back first; the notifier may then wait a little
	// for its last deliveries.
	return ui.Tee{r, n}, nil
}

// screenRenderer is the renderer for the terminal or the pipe.
func screenRenderer(f *Host, noTUI, jsonOut bool, v runView) ui.Renderer {
	io := f.IO
	env := f.Environ()
	color := io.TTY && Getenv(env, "NO_COLOR") == ""
	switch {
	case jsonOut:
		return ui.NewJSON(io.Out)
	case noTUI || !io.TTY || Getenv(env, "TERM") == "dumb":
		return ui.NewPlain(io.Out, ui.PlainOptions{Color: color})
	}
	var tasks []ui.TaskItem
	if v.plan != nil {
		for _, t := range v.plan.Tasks {
			item := ui.TaskItem{ID: t.ID, Title: t.Title, State: ui.TaskOpen}
			switch {
			case t.Status == task.StatusDone:
				item.State = ui.TaskDone
			case t.Status == task.StatusFailed || v.failed != nil && v.failed(t.ID):
				item.State = ui.TaskFailed
			}
			tasks = append(tasks, item)
		}
	}
	opts := ui.TUIOptions{
		Plan: relTo(v.dir, v.plan), Agent: v.agent, Model: v.model, Tasks: tasks, Color: color,
		Stop: v.stop, Env: env, Summary: io.Out,
		Force: func() {
			fmt.Fprintln(io.ErrOut, "ralph: forced exit")
			f.ForceKill()
			os.Exit(exitInterrupted)
		},
	}
	if v.steer != nil {
		opts.Control = v.steer
	}
	if v.newDecoder != nil {
		opts.Transcript = func(runID string, iteration int) (string, agent.Decoder) {
			return TranscriptPath(v.dir, runID, iteration), v.newDecoder()
		}
	}
	return ui.NewTUI(opts)
}

// failedIn says which tasks earlier runs recorded as failed.
func failedIn(store *state.Store) func(id string) bool {
	st, err := store.LoadState()
	if err != nil {
		return nil
	}
	return func(id string) bool { return st.Tasks[id].Failed }
}

// TranscriptPath is where an iteration's raw output is.
func TranscriptPath(dir, runID string, iteration int) string {
	_, out := state.TranscriptFiles(dir, runID, iteration)
	return out
}

func relTo(dir string, p *task.Plan) string {
	if p == nil {
		return ""
	}
	if rel, err := filepath.Rel(dir, p.Path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return p.Path
}

// Getenv returns the last value of name in environ.
func Getenv(environ []string, name string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// redacting is handle with every event redacted first (redactEvent).
func redacting(handle func(loop.Event)) func(loop.Event) {
	return func(e loop.Event) { handle(redactEvent(e)) }
}

// redactEvent hides the secrets in what an event says (redact.String),
// before the terminal, --json, ralph.log, the control channel, ralph serve
// or a notification sees it. The event's own records are not changed.
func redactEvent(e loop.Event) loop.Event {
	e.Message = redact.String(e.Message)
	if a := e.Agent; a != nil {
		text, input := redact.String(a.Text), redact.String(a.ToolInput)
		if text != a.Text || input != a.ToolInput {
			c := *a
			c.Text, c.ToolInput = text, input
			e.Agent = &c
		}
	}
	if r := e.Record; r != nil {
		if msg := redact.String(r.Error); msg != r.Error {
			c := *r
			c.Error = msg
			e.Record = &c
		}
	}
	return e
}
