package loop

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// cmdGate is a CommandGate whose commands fail while fails says so, given
// the tree they run on.
type cmdGate struct {
	project []string
	task    []string
	repo    *memRepo
	fails   func(command string, tree int) bool
	// refuses, when it says so, fails the command with a sandboxRefusal.
	refuses func(command string, tree int) bool
	// runs lists the commands run, with the tree they ran on.
	runs []string
	// cancel, when set, is called when a command starts.
	cancel func()
}

func (g *cmdGate) ProjectCommands() []string       { return g.project }
func (g *cmdGate) TaskCommands(task.Task) []string { return g.task }
func (g *cmdGate) RunCommand(ctx context.Context, c string) (GateResult, error) {
	if g.cancel != nil {
		g.cancel()
	}
	g.runs = append(g.runs, c+"@"+strconv.Itoa(g.repo.tree))
	if g.refuses != nil && g.refuses(c, g.repo.tree) {
		res := GateResult{ExitCode: 1, Output: "could not fetch gate.example\n", Duration: time.Second}
		return res, &sandboxRefusal{command: c}
	}
	if g.fails != nil && g.fails(c, g.repo.tree) {
		return GateResult{ExitCode: 1, Output: "--- FAIL: TestX\nFAIL " + c + "\n", Duration: time.Second}, nil
	}
	return GateResult{Output: "ok\n", Duration: time.Second}, nil
}

// Check is there for the loop's Gate; the loop must not call it.
func (g *cmdGate) Check(context.Context, task.Task) (bool, string, error) {
	panic("Check called on a CommandGate")
}

// gateRun runs the fixture with g as its gate, and returns the events.
func gateRun(ctx context.Context, t *testing.T, f *fixture, g *cmdGate) ([]Event, error) {
	t.Helper()
	var events []Event
	deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Gate: g, Now: f.clock.Now, Sleep: f.clock.Sleep,
		Jitter: func(time.Duration) time.Duration { return 0 },
		Emit:   func(e Event) { events = append(events, e) }}
	if f.repo != nil {
		deps.Repo = f.repo
	}
	err := Run(ctx, f.opts, deps)
	return events, err
}

func eventsOf(events []Event, kind EventKind) []string {
	var out []string
	for _, e := range events {
		if e.Kind == kind {
			out = append(out, e.Message)
		}
	}
	return out
}

func TestBaselineFailureStopsBeforeTheAgent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.repo = &memRepo{}
	g := &cmdGate{project: []string{"go vet ./...", "go test ./..."}, repo: f.repo,
		fails: func(c string, _ int) bool { return c == "go test ./..." }}
	events, err := gateRun(t.Context(), t, f, g)
	var be *BaselineError
	if !errors.As(err, &be) {
		t.Fatalf("Run = %v, want a BaselineError", err)
	}
	if f.agent.calls != 0 {
		t.Errorf("the agent ran %d times", f.agent.calls)
	}
	// Every project gate ran, once, on the starting tree: the user learns
	// all that fails at once.
	if diff := cmp.Diff([]string{"go vet ./...@0", "go test ./...@0"}, g.runs); diff != "" {
		t.Errorf("gate runs (-want +got):\n%s", diff)
	}
	summary := "the gate `go test ./...` fails before any change: fix it, or run with --allow-failing-gates to treat it as advisory for this run"
	msg := err.Error()
	if !strings.HasPrefix(msg, summary+"\n") || !strings.Contains(msg, "gate failed: `go test ./...` exited 1 after 1s:\n    --- FAIL: TestX") {
		t.Errorf("error:\n%s", msg)
	}
	if f.store.st.Status != state.StatusFailed || f.store.st.Message != summary {
		t.Errorf("state: %s %q", f.store.st.Status, f.store.st.Message)
	}
	if got := eventsOf(events, EventRunEnded); len(got) != 1 || got[0] != summary {
		t.Errorf("run_ended: %q", got)
	}
}

func TestBaselineManyFailures(t *testing.T) {
	t.Parallel()
	e := &BaselineError{Failed: []FailedGate{{Command: "a"}, {Command: "b"}}}
	if want := "the gates `a`, `b` fail before any change: fix them, or run with --allow-failing-gates to treat them as advisory for this run"; e.Summary() != want {
		t.Errorf("Summary = %q", e.Summary())
	}
}

func TestAllowFailingGatesMakesThemAdvisory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	f.opts.AllowFailingGates = true
	f.repo = &memRepo{}
	f.agent.before = func(int) { f.repo.tree++ }
	g := &cmdGate{project: []string{"go test ./...", "go vet ./..."}, repo: f.repo,
		fails: func(c string, tree int) bool { return c == "go test ./..." || (c == "go vet ./..." && tree == 2) }}
	events, err := gateRun(t.Context(), t, f, g)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"go test ./..."}, f.store.st.AdvisoryGates); diff != "" {
		t.Errorf("state.json advisory_gates (-want +got):\n%s", diff)
	}
	started := eventsOf(events, EventRunStarted)
	if len(started) != 1 || !strings.Contains(started[0], "advisory gates (failing before any change, --allow-failing-gates): `go test ./...`") {
		t.Errorf("run header: %q", started)
	}
	// A passed in spite of go test; B failed go vet once, which is not
	// advisory.
	if diff := cmp.Diff([]string{"A:task_done", "B:gate_failed", "B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	warns := eventsOf(events, EventWarning)
	if len(warns) == 0 || warns[0] != "the advisory gate `go test ./...` failed (exited 1 after 1s); A is not rejected for it (--allow-failing-gates)" {
		t.Errorf("warnings: %q", warns)
	}
	// B's error is the failing gate, not the advisory one; the advisory
	// failure is in the evidence too.
	rec := f.store.history[1]
	if !strings.HasPrefix(rec.Error, "gate failed: `go vet ./...` exited 1") {
		t.Errorf("B's error: %q", rec.Error)
	}
	if p := f.agent.prompts[2]; !strings.Contains(p, "(advisory, not rejecting: gate failed: `go test ./...`") || !strings.Contains(p, "FAIL go vet ./...") {
		t.Errorf("B's next prompt lacks the gates' evidence:\n%s", p)
	}
}

func TestUnchangedTreeIsNotCheckedAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	f.repo = &memRepo{}
	// The first iteration changes nothing; the second changes the tree.
	f.agent.before = func(n int) {
		if n == 2 {
			f.repo.tree++
		}
	}
	g := &cmdGate{project: []string{"go test ./..."}, task: []string{"test -f x", "go test ./..."}, repo: f.repo}
	if _, err := gateRun(t.Context(), t, f, g); err != nil {
		t.Fatal(err)
	}
	// The baseline ran go test on tree 0; A's check reused it, ran the
	// task's own command and not its duplicate of go test; B's agent
	// changed the tree, so B's check ran everything again.
	want := []string{"go test ./...@0", "test -f x@0", "go test ./...@1", "test -f x@1"}
	if diff := cmp.Diff(want, g.runs); diff != "" {
		t.Errorf("gate runs (-want +got):\n%s", diff)
	}
}

func TestBaselineLeavesOutTaskCommands(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.repo = &memRepo{}
	f.agent.before = func(int) { f.repo.tree++ }
	// The plan's validation command checks work still to do: it fails on
	// the starting tree, and that stops nothing.
	g := &cmdGate{project: []string{"true"}, task: []string{"test -f hello.txt"}, repo: f.repo,
		fails: func(c string, tree int) bool { return c == "test -f hello.txt" && tree == 0 }}
	if _, err := gateRun(t.Context(), t, f, g); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"true@0", "true@1", "test -f hello.txt@1"}, g.runs); diff != "" {
		t.Errorf("gate runs (-want +got):\n%s", diff)
	}
}

func TestNoBaselineWithoutOpenTasks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.plan.p.Tasks[0].Status = task.StatusDone
	f.repo = &memRepo{}
	g := &cmdGate{project: []string{"false"}, repo: f.repo, fails: func(string, int) bool { return true }}
	if _, err := gateRun(t.Context(), t, f, g); err != nil {
		t.Fatal(err)
	}
	if len(g.runs) != 0 {
		t.Errorf("gates ran with nothing to do: %v", g.runs)
	}
}

func TestNoReuseWithoutARepository(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	g := &cmdGate{project: []string{"go test ./..."}, repo: &memRepo{}}
	if _, err := gateRun(t.Context(), t, f, g); err != nil {
		t.Fatal(err)
	}
	if len(g.runs) != 2 {
		t.Errorf("gate runs: %v; want the baseline and the task's check", g.runs)
	}
}

func TestInterruptDuringTheBaseline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.repo = &memRepo{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	g := &cmdGate{project: []string{"go test ./..."}, repo: f.repo, cancel: cancel}
	_, err := gateRun(ctx, t, f, g)
	if !errors.Is(err, ErrInterrupted) || f.agent.calls != 0 {
		t.Errorf("Run = %v after %d agent calls; want interrupted before any", err, f.agent.calls)
	}
	if f.store.st.Status != state.StatusInterrupted {
		t.Errorf("status %s", f.store.st.Status)
	}
}

// A plain Gate (no CommandGate) has no baseline: it is asked to Check.
func TestPlainGateHasNoBaseline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, agent.Result{FinalText: "<promise>TASK_DONE</promise>"})
	f.gate = &memGate{results: []bool{true}}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if f.gate.calls != 1 {
		t.Errorf("Check called %d times", f.gate.calls)
	}
}

// A tree that holds an earlier run's unfinished work is not judged: its
// gates may well fail until the task is done.
func TestSkipBaseline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.opts.SkipBaseline = true
	f.repo = &memRepo{}
	f.agent.before = func(int) { f.repo.tree++ }
	g := &cmdGate{project: []string{"go test ./..."}, repo: f.repo, fails: func(_ string, tree int) bool { return tree == 0 }}
	events, err := gateRun(t.Context(), t, f, g)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"go test ./...@1"}, g.runs); diff != "" {
		t.Errorf("gate runs (-want +got):\n%s", diff)
	}
	if started := eventsOf(events, EventRunStarted); len(started) != 1 || !strings.Contains(started[0], "gates not checked before the first agent call") {
		t.Errorf("run header: %q", started)
	}
}
