package tracker_test

import (
	"slices"
	"testing"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/tracker"
)

func TestReceiptAddsUpATasksIterations(t *testing.T) {
	t.Parallel()
	history := []state.Record{
		{RunID: "r1", TaskID: "#1", DurationMS: 60_000, InputTokens: 1000, OutputTokens: 500, CostUSD: 0.1,
			Outcome: state.OutcomeGateFailed, Error: "go test failed"},
		{RunID: "r1", TaskID: "#2", DurationMS: 5_000, Outcome: state.OutcomeTaskDone, Commit: "bbbb"},
		{RunID: "r2", TaskID: "#1", DurationMS: 30_000, CacheReadTokens: 11_000, CostUSD: 0.32,
			Outcome: state.OutcomeTaskDone, Commit: "0123456789abcdef",
			Gates:  []state.GateRun{{Command: "go test ./...", Result: "ok", DurationMS: 1200}},
			Guard:  &state.GuardEvidence{Mode: "warn"},
			Review: &state.ReviewEvidence{Verdict: "SHIP", Agent: "codex"}},
	}
	r := tracker.ReceiptOf(history, "#1")
	if got, want := r.Line(), "2 iterations, 1m30s, 12.5k tokens, $0.42"; got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
	if !slices.Equal(r.Commits, []string{"0123456789abcdef"}) || r.RunID != "r2" || r.LastError != "go test failed" {
		t.Errorf("receipt %+v", r)
	}
	if r.Gates != "go test ./... ok 1.2s" || r.Guard != "0 findings" || r.Review != "SHIP by codex" || r.Verdict != "SHIP" {
		t.Errorf("evidence %q %q %q", r.Gates, r.Guard, r.Review)
	}
	if got := tracker.ReceiptOf(history, "#9"); got.Iterations != 0 || got.Line() != "0 iterations, 0s, 0 tokens" {
		t.Errorf("a task without history: %+v", got)
	}
}
