package loop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// memTrees is a working tree in memory: each snapshot is the tree's
// current number; the diff is whatever the test sets.
type memTrees struct {
	tree     int
	diff     string
	diffs    [][2]string // from, to of each Diff
	restores []string
	// restored is what RestoreTree reports it put back.
	restored []string
}

func (m *memTrees) Snapshot(context.Context) (string, error) { return fmt.Sprintf("t%d", m.tree), nil }
func (m *memTrees) Seen(ctx context.Context) (string, error) { return m.Snapshot(ctx) }
func (m *memTrees) Diff(_ context.Context, from, to string, _ []string) ([]byte, error) {
	m.diffs = append(m.diffs, [2]string{from, to})
	return []byte(m.diff), nil
}
func (m *memTrees) Files(context.Context, string, []string) (map[string][]byte, error) {
	return map[string][]byte{}, nil
}
func (m *memTrees) RestoreTree(_ context.Context, tree string) ([]string, error) {
	m.restores = append(m.restores, tree)
	return m.restored, nil
}

const greetingDiff = `diff --git a/greeting.txt b/greeting.txt
new file mode 100644
--- /dev/null
+++ b/greeting.txt
@@ -0,0 +1 @@
+hello
`

const deletedTestDiff = `diff --git a/greet_test.go b/greet_test.go
deleted file mode 100644
--- a/greet_test.go
+++ /dev/null
@@ -1,3 +0,0 @@
-package greet
-
-func TestGreet(t *testing.T) {}
`

func verdict(text string, cost float64) agent.Result {
	return agent.Result{FinalText: text, CostUSD: cost, HasCost: true, Usage: agent.Usage{InputTokens: 10, OutputTokens: 5}}
}

// reviewFixture is a fixture whose done claims go to a reviewer.
func reviewFixture(t *testing.T, reviews ...agent.Result) (*fixture, *scripted, *memTrees) {
	t.Helper()
	f := newFixture(t, []string{"A"}, done())
	f.repo = &memRepo{}
	trees := &memTrees{diff: greetingDiff}
	f.agent.before = func(int) { f.repo.tree++; trees.tree++ }
	f.opts.Review = ReviewOptions{When: ReviewTask, Model: "m"}
	return f, &scripted{results: reviews}, trees
}

func (f *fixture) runWith(t *testing.T, reviewer Agent, trees Trees) ([]Event, error) {
	t.Helper()
	var events []Event
	deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Now: f.clock.Now, Sleep: f.clock.Sleep,
		Jitter:   func(time.Duration) time.Duration { return 0 },
		Reviewer: reviewer, Trees: trees,
		Emit: func(e Event) {
			events = append(events, e)
			if e.Kind == EventWarning {
				f.warns = append(f.warns, e.Message)
			}
		}}
	if f.repo != nil {
		deps.Repo = f.repo
	}
	if f.gate != nil {
		deps.Gate = f.gate
	}
	return events, Run(t.Context(), f.opts, deps)
}

func TestReviewReviseThenShip(t *testing.T) {
	t.Parallel()
	f, reviewer, trees := reviewFixture(t,
		verdict("1. greeting.txt is empty\n2. no test\n<promise>REVISE</promise>", 0.25),
		verdict("<promise>SHIP</promise>", 0.25))
	if _, err := f.runWith(t, reviewer, trees); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"A:review_rejected", "A:task_done"}, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	// Both claims are read from the tree the task started at.
	if d := cmp.Diff([][2]string{{"t0", "t1"}, {"t0", "t2"}}, trees.diffs); d != "" {
		t.Errorf("diffs (-want +got):\n%s", d)
	}
	if !strings.Contains(reviewer.prompts[0], "+hello") || !strings.Contains(reviewer.prompts[0], "A: Task A") {
		t.Errorf("the review prompt lacks the diff or the task:\n%s", reviewer.prompts[0])
	}
	if p := f.agent.prompts[1]; !strings.Contains(p, "1. greeting.txt is empty") || !strings.Contains(p, "2. no test") {
		t.Errorf("the next prompt lacks the findings:\n%s", p)
	}
	rev := f.store.history[1].Review
	if rev == nil || rev.Verdict != "SHIP" || rev.Agent != "fake" || rev.Model != "m" || rev.Attempts != 1 || rev.CostUSD != 0.25 {
		t.Errorf("review evidence = %+v", rev)
	}
	if got := f.store.st.Totals; got.CostUSD != 1.5 || got.InputTokens != 20 {
		t.Errorf("totals %+v: want the reviewer's cost and tokens counted", got)
	}
	want := "feat: A - Task A\n\nRalph-Review: SHIP by fake/m\nRalph-Guard: 0 findings\n"
	if d := cmp.Diff([]string{want}, f.repo.commits); d != "" {
		t.Errorf("commits (-want +got):\n%s", d)
	}
	if s := f.store.st.Tasks["A"].StartTree; s != "" {
		t.Errorf("start tree %q kept after the task was done", s)
	}
	if d := cmp.Diff([]string{"t1", "t2"}, trees.restores); d != "" {
		t.Errorf("restores (-want +got):\n%s", d)
	}
}

// A reviewer's cost counts against the budget.
func TestReviewCostCountsAgainstBudget(t *testing.T) {
	t.Parallel()
	f, reviewer, trees := reviewFixture(t, verdict("<promise>REVISE</promise> no", 2))
	f.opts.Budget = 2
	_, err := f.runWith(t, reviewer, trees)
	if !strings.Contains(fmt.Sprint(err), "budget $2.00 reached") {
		t.Fatalf("err = %v, want the budget reached after one iteration", err)
	}
	if n := len(f.store.history); n != 1 {
		t.Errorf("%d iterations, want 1", n)
	}
}

func TestReviewWithoutVerdictFailsAfterItsAttempts(t *testing.T) {
	t.Parallel()
	f, reviewer, trees := reviewFixture(t, verdict("looks good to me", 0), agent.Result{TimedOut: true})
	f.opts.MaxAttempts = 1
	_, err := f.runWith(t, reviewer, trees)
	if err == nil || !strings.Contains(err.Error(), "failed tasks") {
		t.Fatalf("err = %v, want stuck on a failed task", err)
	}
	if d := cmp.Diff([]string{"A:review_failed"}, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	rec := f.store.history[0]
	if rec.Review.Attempts != 2 || rec.Review.Verdict != "failed" || !strings.Contains(rec.Error, "ran past its timeout") {
		t.Errorf("record: %+v, review %+v", rec, rec.Review)
	}
	if f.plan.p.Tasks[0].Status == task.StatusDone || len(f.repo.commits) != 0 {
		t.Error("a task without a verdict was marked done or committed")
	}
}

func TestReviewerUsageLimitIsWaitedOut(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	f, reviewer, trees := reviewFixture(t,
		agent.Result{IsError: true, ErrorKind: agent.ErrorUsageLimit, ErrorText: "limit", ResetAt: reset},
		verdict("<promise>SHIP</promise>", 0))
	f.opts.Review.MaxAttempts = 1
	if _, err := f.runWith(t, reviewer, trees); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"A:task_done"}, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]time.Duration{time.Hour}, f.clock.sleeps); d != "" {
		t.Errorf("sleeps (-want +got):\n%s", d)
	}
	if f.agent.calls != 1 {
		t.Errorf("the worker ran %d times; the wait is the reviewer's", f.agent.calls)
	}
}

// A reviewer's usage limit beyond --max-wait stops the run as the
// worker's does, the task left open.
func TestReviewerUsageLimitBeyondMaxWait(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	f, reviewer, trees := reviewFixture(t,
		agent.Result{IsError: true, ErrorKind: agent.ErrorUsageLimit, ErrorText: "limit", ResetAt: reset})
	_, err := f.runWith(t, reviewer, trees)
	if err == nil || !strings.Contains(err.Error(), "beyond --max-wait") {
		t.Fatalf("err = %v, want a limit", err)
	}
	if d := cmp.Diff([]string{"A:rate_limited"}, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
}

func TestGuardStrictRejectsAndWarnReports(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{GuardStrict, GuardWarn} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []string{"A"}, done())
			trees := &memTrees{diff: deletedTestDiff}
			f.opts.Guard = mode
			f.opts.MaxAttempts = 1
			f.agent.before = func(int) { trees.tree++ }
			_, err := f.runWith(t, nil, trees)
			rec := f.store.history[0]
			if rec.Guard == nil || len(rec.Guard.Findings) == 0 || rec.Guard.Findings[0].Rule != "test-deleted" || rec.Guard.Blocking == 0 {
				t.Fatalf("guard evidence = %+v", rec.Guard)
			}
			if len(f.warns) == 0 || !strings.Contains(f.warns[0], "greet_test.go: test-deleted") {
				t.Errorf("warnings = %q", f.warns)
			}
			want := state.OutcomeTaskDone
			if mode == GuardStrict {
				want = state.OutcomeGuardRejected
				if err == nil {
					t.Error("a guard_rejected task ended the run without error")
				}
			}
			if rec.Outcome != want {
				t.Errorf("outcome %s, want %s", rec.Outcome, want)
			}
		})
	}
}

// In agent ownership a reviewer's REVISE unticks what the agent ticked.
func TestReviewReviseUnticksInAgentOwnership(t *testing.T) {
	t.Parallel()
	f, reviewer, trees := reviewFixture(t, verdict("1. wrong\n<promise>REVISE</promise>", 0))
	f.opts.Ownership = task.OwnerAgent
	f.opts.MaxAttempts = 1
	f.agent.results = []agent.Result{{FinalText: "ticked it"}}
	f.agent.before = func(int) {
		trees.tree++
		f.plan.p.Tasks[0].Status = task.StatusDone
	}
	_, _ = f.runWith(t, reviewer, trees)
	if d := cmp.Diff([]string{"A:review_rejected"}, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	if st := f.plan.p.Tasks[0].Status; st == task.StatusDone {
		t.Error("the task stayed ticked")
	}
}
