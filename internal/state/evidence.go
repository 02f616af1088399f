package state

import (
	"fmt"
	"strings"
	"time"
)

// GateRun is one gate command run on a done claim, for the evidence of
// the task.
type GateRun struct {
	Command string `json:"command"`
	// Result is "ok", "failed", "timeout", or "advisory" for an advisory
	// gate that failed without rejecting the task.
	Result     string `json:"result"`
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"`
	// Reused: the tree was unchanged since the command last ran on it;
	// that result stands.
	Reused bool `json:"reused,omitempty"`
}

// GuardEvidence is what the tamper guard found in a task's diff.
type GuardEvidence struct {
	// Mode is the guard setting it ran under: warn or strict.
	Mode     string         `json:"mode"`
	Findings []GuardFinding `json:"findings"`
	// Blocking counts the findings the task's own text did not ask for.
	Blocking int `json:"blocking"`
	// Error says why the diff could not be read, when it could not.
	Error string `json:"error,omitempty"`
}

// GuardFinding is one change that weakens a check.
type GuardFinding struct {
	Rule    string `json:"rule"`
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Text    string `json:"text,omitempty"`
	Allowed bool   `json:"allowed,omitempty"`
}

// ReviewEvidence is the reviewer's verdict on a done claim, and what the
// review cost.
type ReviewEvidence struct {
	// Verdict is SHIP, REVISE, or "failed" when no reviewer answered
	// within its attempts.
	Verdict string `json:"verdict"`
	// Agent and Model are who reviewed; Focus is what an end-of-run
	// reviewer looked for.
	Agent    string   `json:"agent"`
	Model    string   `json:"model,omitempty"`
	Focus    string   `json:"focus,omitempty"`
	Attempts int      `json:"attempts"`
	Findings []string `json:"findings,omitempty"`
	Error    string   `json:"error,omitempty"`

	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	CostSource       string  `json:"cost_source,omitempty"` // reported, estimated or unknown (cost.go)
	DurationMS       int64   `json:"duration_ms"`
}

// By is who reviewed: agent/model, or the agent alone.
func (r *ReviewEvidence) By() string {
	if r.Model == "" {
		return r.Agent
	}
	return r.Agent + "/" + r.Model
}

// Tokens is every token the review used.
func (r *ReviewEvidence) Tokens() int64 {
	return r.InputTokens + r.OutputTokens + r.CacheReadTokens + r.CacheWriteTokens
}

// GatesLine is the gates as one line: "go vet ./... ok 1.2s; go test
// ./... ok 3.4s" (the Ralph-Gates trailer).
func GatesLine(runs []GateRun) string {
	parts := make([]string, len(runs))
	for i, g := range runs {
		d := time.Duration(g.DurationMS) * time.Millisecond
		parts[i] = fmt.Sprintf("%s %s %s", strings.Join(strings.Fields(g.Command), " "), g.Result, roundDuration(d))
	}
	return strings.Join(parts, "; ")
}

// GuardLine is the guard's findings as a few words: "0 findings", "2
// findings (1 allowed)" (the Ralph-Guard trailer).
func GuardLine(g *GuardEvidence) string {
	if g.Error != "" {
		return "not read: " + strings.Join(strings.Fields(g.Error), " ")
	}
	n := len(g.Findings)
	s := fmt.Sprintf("%d finding%s", n, plural(n))
	if allowed := n - g.Blocking; allowed > 0 {
		s += fmt.Sprintf(" (%d allowed)", allowed)
	}
	return s
}

// ReviewLine is the verdict and who gave it: "SHIP by claude/sonnet" (the
// Ralph-Review trailer).
func ReviewLine(r *ReviewEvidence) string {
	return r.Verdict + " by " + r.By()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// roundDuration shows a gate's time as people read it: 1.2s, 350ms, 2m3s.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
