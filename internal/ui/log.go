package ui

import (
	"log/slog"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/loop"
)

// Log writes loop events to a structured log (.ralph/ralph.log): the
// record of what happened that survives the terminal. The agent's own
// events are logged at debug level only (--debug): the transcript already
// has them.
type Log struct{ l *slog.Logger }

// NewLog returns a renderer that logs to l.
func NewLog(l *slog.Logger) *Log { return &Log{l: l} }

// Handle logs one event.
func (g *Log) Handle(e loop.Event) {
	attrs := []any{"run", e.RunID}
	if e.Iteration > 0 {
		attrs = append(attrs, "iteration", e.Iteration)
	}
	if e.Task != nil {
		attrs = append(attrs, "task", e.Task.ID)
	}
	switch e.Kind {
	case loop.EventAgent:
		a := e.Agent
		attrs = append(attrs, "kind", a.Kind)
		switch a.Kind {
		case agent.EventToolCall:
			attrs = append(attrs, "tool", a.Tool, "input", a.ToolInput)
		case agent.EventError:
			g.l.Warn("agent error", append(attrs, "text", a.Text)...)
			return
		default:
			attrs = append(attrs, "text", oneLine(a.Text, 300))
		}
		g.l.Debug("agent", attrs...)
	case loop.EventIterationEnded:
		r := e.Record
		g.l.Info("iteration ended", append(attrs, "outcome", r.Outcome, "duration_ms", r.DurationMS,
			"exit_code", r.ExitCode, "marker", r.Marker, "cost_usd", r.CostUSD, "cost_source", r.CostSource, "files_changed", r.FilesChanged,
			"commit", r.Commit, "error", r.Error)...)
	case loop.EventWarning:
		g.l.Warn(e.Message, attrs...)
	case loop.EventWaiting:
		g.l.Info("waiting", append(attrs, "until", e.Until, "why", e.Message)...)
	case loop.EventRunEnded:
		g.l.Info("run ended", append(attrs, "status", e.Status, "message", e.Message)...)
	default:
		g.l.Info(string(e.Kind), append(attrs, "message", e.Message)...)
	}
}

// Close does nothing: the log file belongs to whoever opened it.
func (g *Log) Close(error) {}

// Tee sends every event to each renderer in turn.
type Tee []Renderer

// Handle passes e on.
func (t Tee) Handle(e loop.Event) {
	for _, r := range t {
		r.Handle(e)
	}
}

// Close closes each renderer.
func (t Tee) Close(err error) {
	for _, r := range t {
		r.Close(err)
	}
}
