package ui

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/words"
)

// PlainOptions configure the line renderer.
type PlainOptions struct {
	// Color adds ANSI colors (terminals without NO_COLOR).
	Color bool
	// Verbose also shows assistant text and tool results.
	Verbose bool
}

// Plain writes one line per thing worth knowing: for logs, pipes and CI.
type Plain struct {
	mu   sync.Mutex
	w    io.Writer
	opts PlainOptions
}

// NewPlain returns a line renderer writing to w.
func NewPlain(w io.Writer, opts PlainOptions) *Plain { return &Plain{w: w, opts: opts} }

const (
	ansiReset  = "\x1b[0m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiBold   = "\x1b[1m"
)

func (p *Plain) color(code, s string) string {
	if !p.opts.Color {
		return s
	}
	return code + s + ansiReset
}

// Handle writes the lines for one event.
func (p *Plain) Handle(e loop.Event) {
	e = TextEvent(e) // text, never commands, to the terminal
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Worker > 0 {
		// With --parallel, lines of several workers interleave: each says
		// whose it is.
		out := p.w
		p.w = &prefixWriter{w: out, prefix: fmt.Sprintf("w%d ", e.Worker)}
		defer func() { p.w = out }()
	}
	switch e.Kind {
	case loop.EventRunStarted:
		pp := e.Plan
		fmt.Fprintf(p.w, "%s run %s · plan %s (%s, %d/%d done) · %s\n", p.color(ansiBold, "ralph"),
			e.RunID, pp.Path, pp.Format, pp.Done, pp.Total, e.Message)
	case loop.EventIterationStarted:
		bound := ""
		if e.MaxIterations > 0 {
			bound = fmt.Sprintf("/%d", e.MaxIterations)
		}
		on := ""
		if e.Message != "" {
			on = " · " + e.Message // the agent and model a route chose
		}
		fmt.Fprintf(p.w, "%s %s %s%s\n", p.color(ansiBold, fmt.Sprintf("[%d%s]", e.Iteration, bound)), e.Task.ID, e.Task.Title, on)
	case loop.EventAgent:
		p.agentLine(e.Agent)
	case loop.EventIterationEnded:
		p.ended(e)
	case loop.EventTaskFailed:
		fmt.Fprintf(p.w, "  %s %s: %s\n", p.color(ansiRed, "✗ task failed"), e.Task.ID, e.Message)
	case loop.EventWaiting:
		if e.Until == nil {
			// Waiting for an answer: no end but the answer.
			fmt.Fprintf(p.w, "  %s %s\n", p.color(ansiYellow, "⏳"), e.Message)
			break
		}
		fmt.Fprintf(p.w, "  %s until %s (%s): %s\n", p.color(ansiYellow, "⏳ waiting"),
			e.Until.Local().Format("15:04:05"), e.Until.Sub(e.Time).Round(time.Second), e.Message)
	case loop.EventQuestion:
		fmt.Fprintf(p.w, "  %s %s asks: %s\n  (answer with `ralph answer TEXT`, or on ralph serve's page)\n",
			p.color(ansiYellow, "?"), e.Task.ID, e.Message)
	case loop.EventAnswered:
		fmt.Fprintf(p.w, "  %s %s: %s\n", p.color(ansiYellow, "✎ answered"), e.Task.ID, oneLine(e.Message, 200))
	case loop.EventWarning:
		fmt.Fprintf(p.w, "  %s %s\n", p.color(ansiYellow, "! warning:"), e.Message)
	case loop.EventQuota:
		fmt.Fprintf(p.w, "  %s %s\n", p.color(ansiDim, "◔ quota:"), e.Message)
	case loop.EventReview:
		fmt.Fprintf(p.w, "  %s %s\n", p.color(ansiDim, "⌕"), e.Message)
	case loop.EventPaused:
		fmt.Fprintf(p.w, "%s %s\n", p.color(ansiYellow, "‖ paused"), e.Message)
	case loop.EventResumed:
		fmt.Fprintf(p.w, "%s\n", p.color(ansiYellow, "▶ resumed"))
	case loop.EventTaskSkipped:
		fmt.Fprintf(p.w, "  %s %s: %s\n", p.color(ansiYellow, "↷ skipped"), e.Task.ID, e.Message)
	case loop.EventAgentSwitched:
		fmt.Fprintf(p.w, "  %s %s → %s: %s\n", p.color(ansiYellow, "⇄ agent"), e.From, e.To, e.Message)
	case loop.EventWorker:
		fmt.Fprintf(p.w, "%s %s: %s\n", p.color(ansiBold, "worker"), e.WorkerID, e.Message)
	case loop.EventLeftOut:
		// The lines as the user pastes them into .gitignore.
		fmt.Fprintf(p.w, "  %s %s\n", p.color(ansiYellow, "⊘"), e.Message)
		for _, l := range e.LeftOut {
			fmt.Fprintf(p.w, "    %s\n", l.Line)
		}
	case loop.EventRunEnded:
		t := e.Totals
		fmt.Fprintf(p.w, "%s %s · %d/%d tasks done · %s · %s tokens · %s\n",
			p.color(ansiBold, "ralph"), statusLine(e.Status, e.Message), e.Plan.Done, e.Plan.Total, words.Count(t.Iterations, "iteration"),
			tokens(t.InputTokens+t.OutputTokens+t.CacheReadTokens+t.CacheWriteTokens), state.FormatCost(t.CostUSD, t.CostSource))
	}
}

// statusLine is the run's status and why it ended, the why left out when
// it says no more than the status ("interrupted: interrupted").
func statusLine(status, msg string) string {
	if msg == "" || strings.EqualFold(msg, status) {
		return status
	}
	if rest, ok := strings.CutPrefix(msg, status+": "); ok {
		msg = rest
	}
	return status + ": " + msg
}

func (p *Plain) agentLine(a *agent.Event) {
	switch a.Kind {
	case agent.EventToolCall:
		fmt.Fprintf(p.w, "  %s %s %s\n", p.color(ansiDim, "→"), a.Tool, oneLine(a.ToolInput, 100))
	case agent.EventError:
		fmt.Fprintf(p.w, "  %s %s\n", p.color(ansiRed, "! agent error:"), oneLine(a.Text, 200))
	case agent.EventText:
		if p.opts.Verbose {
			fmt.Fprintf(p.w, "  %s\n", oneLine(a.Text, 200))
		}
	default:
		// The other values need nothing here.
	}
}

func (p *Plain) ended(e loop.Event) {
	r := e.Record
	mark := p.color(ansiYellow, "•")
	switch r.Outcome {
	case state.OutcomeTaskDone, state.OutcomePlanDone:
		mark = p.color(ansiGreen, "✓")
	case state.OutcomeFatalError, state.OutcomeTaskFailed, state.OutcomeGateFailed, state.OutcomeSandboxFailed,
		state.OutcomeGuardRejected, state.OutcomeReviewRejected, state.OutcomeReviewFailed, state.OutcomeCommitRefused:
		mark = p.color(ansiRed, "✗")
	default:
		// The other values need nothing here.
	}
	parts := []string{fmt.Sprintf("%s %s", mark, r.Outcome), (time.Duration(r.DurationMS) * time.Millisecond).String()}
	if n := r.InputTokens + r.OutputTokens + r.CacheReadTokens + r.CacheWriteTokens; n > 0 {
		parts = append(parts, tokens(n)+" tokens")
	}
	// "unknown" only for tokens without a price: an agent that reports
	// no usage at all (plain text) has nothing to show.
	if n := r.InputTokens + r.OutputTokens + r.CacheReadTokens + r.CacheWriteTokens; r.CostUSD > 0 || (r.CostSource == state.CostUnknown && n > 0) {
		parts = append(parts, state.FormatCost(r.CostUSD, r.CostSource))
	}
	if r.FilesChanged > 0 {
		parts = append(parts, words.Count(r.FilesChanged, "file"))
	}
	if r.Commit != "" {
		parts = append(parts, "commit "+r.Commit[:min(7, len(r.Commit))])
	}
	parts = append(parts, evidenceParts(r)...)
	line := "  " + strings.Join(parts, " · ")
	if r.Error != "" {
		line += ": " + oneLine(r.Error, 200)
	}
	fmt.Fprintln(p.w, line)
}

// evidenceParts say what checked a claim beyond the gates: the guard's
// findings, when it found some, and the reviewer's verdict.
func evidenceParts(r *state.Record) []string {
	var parts []string
	if g := r.Guard; g != nil && (len(g.Findings) > 0 || g.Error != "") {
		parts = append(parts, "guard: "+state.GuardLine(g))
	}
	if v := r.Review; v != nil {
		parts = append(parts, "review "+state.ReviewLine(v))
	}
	return parts
}

// Close does nothing: run_ended already said how the run ended.
func (p *Plain) Close(error) {}

func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// prefixWriter starts every line written through it with prefix. Each
// Handle call writes whole lines, so a line never straddles two events.
type prefixWriter struct {
	w      io.Writer
	prefix string
	mid    bool // inside a line
}

func (pw *prefixWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, c := range b {
		if !pw.mid {
			out = append(out, pw.prefix...)
			pw.mid = true
		}
		out = append(out, c)
		if c == '\n' {
			pw.mid = false
		}
	}
	if _, err := pw.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}
