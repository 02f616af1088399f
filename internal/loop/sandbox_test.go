package loop

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// sandboxRefusal is a gate error the sandbox caused, as gate.SandboxError
// is one.
type sandboxRefusal struct{ command string }

func (e *sandboxRefusal) Summary() string {
	return "the gate `" + e.command + "` exited 1 while the sandbox refused it: gate.example:80 is not in sandbox.allow-hosts"
}
func (e *sandboxRefusal) Error() string {
	return e.Summary() + "\nthe gate's output ended:\n    could not fetch"
}
func (e *sandboxRefusal) SandboxFailed() {}

// A gate the sandbox made fail after the agent's done claim: the
// iteration is sandbox_failed, not an attempt, the task stays open, the
// agent is not called again, and the run stops with the error naming what
// was refused and the key.
func TestSandboxFailureStopsTheRunBeforeTheNextAgentCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	f.repo = &memRepo{}
	f.agent.before = func(int) { f.repo.tree++ }
	g := &cmdGate{project: []string{"npm test"}, repo: f.repo,
		refuses: func(_ string, tree int) bool { return tree > 0 }}
	events, err := gateRun(t.Context(), t, f, g)
	var sf SandboxFailure
	if !errors.As(err, &sf) {
		t.Fatalf("Run = %v, want the sandbox's failure", err)
	}
	if f.agent.calls != 1 {
		t.Errorf("the agent ran %d times, want 1", f.agent.calls)
	}
	if diff := cmp.Diff([]string{"A:sandbox_failed"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	rec := f.store.history[0]
	if rec.Error != sf.Summary() || !strings.Contains(rec.Error, "gate.example:80 is not in sandbox.allow-hosts") {
		t.Errorf("the iteration's error: %q", rec.Error)
	}
	ts := f.store.st.Tasks["A"]
	if ts.Attempts != 0 || ts.Failed || ts.LastError != "" {
		t.Errorf("task A's state: %+v; want no attempt counted", ts)
	}
	if a, _ := f.plan.p.Task("A"); a.Status != task.StatusOpen {
		t.Errorf("task A is %s, want open", a.Status)
	}
	if f.store.st.Status != state.StatusFailed || f.store.st.Message != sf.Summary() {
		t.Errorf("state: %s %q", f.store.st.Status, f.store.st.Message)
	}
	if got := eventsOf(events, EventRunEnded); len(got) != 1 || got[0] != sf.Summary() {
		t.Errorf("run_ended: %q", got)
	}
}

// Before the first agent call the baseline says the same, and a gate the
// sandbox made fail is never made advisory.
func TestSandboxFailureInTheBaselineIsNeverAdvisory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.opts.AllowFailingGates = true
	f.repo = &memRepo{}
	g := &cmdGate{project: []string{"npm test"}, repo: f.repo, refuses: func(string, int) bool { return true }}
	events, err := gateRun(t.Context(), t, f, g)
	var sf SandboxFailure
	if !errors.As(err, &sf) {
		t.Fatalf("Run = %v, want the sandbox's failure", err)
	}
	if f.agent.calls != 0 {
		t.Errorf("the agent ran %d times", f.agent.calls)
	}
	if len(f.store.st.AdvisoryGates) != 0 {
		t.Errorf("advisory gates: %q", f.store.st.AdvisoryGates)
	}
	if got := eventsOf(events, EventRunEnded); len(got) != 1 || got[0] != sf.Summary() {
		t.Errorf("run_ended: %q", got)
	}

	// As ralph run checks it, before the run exists.
	_, err = CheckBaseline(t.Context(), g, true, nil)
	if !errors.As(err, &sf) {
		t.Errorf("CheckBaseline = %v, want the sandbox's failure", err)
	}
}
