package loop

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
)

// TestAutoReview: review.when = auto reviews each task of a run that has
// no gate able to reject one (none, or only gates the baseline made
// advisory), and names the reviewer in the header; with such a gate it
// reviews nothing. A run whose tasks nothing but the agent checks says so
// once, in its header.
func TestAutoReview(t *testing.T) {
	t.Parallel()
	const agentsWord = "no gates and no reviewer: tasks are accepted on the agent's word"
	for _, tc := range []struct {
		name  string
		when  string
		gate  *cmdGate // nil: no gate
		allow bool     // --allow-failing-gates
		// reviews is how many of the two tasks a reviewer checks; header
		// is what the run's header says of it.
		reviews int
		header  string
	}{
		{name: "no gate", when: ReviewAuto, reviews: 2,
			header: ", reviewer fake/m on each task (review.when = auto: no gate can reject a task)"},
		{name: "a project gate", when: ReviewAuto, gate: &cmdGate{project: []string{"make test"}}},
		{name: "a Validation Command", when: ReviewAuto, gate: &cmdGate{task: []string{"make test"}}},
		{name: "every gate advisory", when: ReviewAuto, allow: true, reviews: 2,
			gate:   &cmdGate{project: []string{"make test"}, fails: func(string, int) bool { return true }},
			header: ", reviewer fake/m on each task (review.when = auto: no gate can reject a task)"},
		{name: "an advisory gate and a good one", when: ReviewAuto, allow: true,
			gate: &cmdGate{project: []string{"make test", "make lint"}, fails: func(c string, _ int) bool { return c == "make test" }}},
		{name: "an advisory gate and a Validation Command", when: ReviewAuto, allow: true,
			gate: &cmdGate{project: []string{"make test"}, task: []string{"make check"}, fails: func(c string, _ int) bool { return c == "make test" }}},
		{name: "task", when: ReviewTask, reviews: 2, header: ", reviewer fake/m on each task"},
		{name: "task with a gate", when: ReviewTask, gate: &cmdGate{project: []string{"make test"}}, reviews: 2,
			header: ", reviewer fake/m on each task"},
		{name: "off", when: ReviewOff, header: " · " + agentsWord},
		{name: "end", when: ReviewEnd, header: " · " + agentsWord},
		{name: "off with a gate", when: ReviewOff, gate: &cmdGate{project: []string{"make test"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []string{"A", "B"}, done())
			f.repo = &memRepo{}
			trees := &memTrees{diff: greetingDiff}
			f.agent.before = func(int) { f.repo.tree++; trees.tree++ }
			f.opts.Review = ReviewOptions{When: tc.when, Model: "m"}
			f.opts.AllowFailingGates = tc.allow
			reviewer := &scripted{results: []agent.Result{verdict("<promise>SHIP</promise>", 0.25)}}
			var events []Event
			deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Repo: f.repo, Trees: trees, Reviewer: reviewer,
				Now: f.clock.Now, Sleep: f.clock.Sleep, Jitter: func(time.Duration) time.Duration { return 0 },
				Emit: func(e Event) { events = append(events, e) }}
			if tc.gate != nil {
				tc.gate.repo = f.repo
				deps.Gate = tc.gate
			}
			if err := Run(t.Context(), f.opts, deps); err != nil {
				t.Fatal(err)
			}
			// The tasks' lines, the end review's round aside.
			reviews := 0
			var outcomes []string
			for _, rec := range f.store.history {
				if rec.TaskID == "" {
					continue
				}
				outcomes = append(outcomes, rec.TaskID+":"+string(rec.Outcome))
				if rec.Review != nil {
					reviews++
				}
			}
			if d := cmp.Diff([]string{"A:task_done", "B:task_done"}, outcomes); d != "" {
				t.Errorf("outcomes (-want +got):\n%s", d)
			}
			if reviews != tc.reviews {
				t.Errorf("%d tasks were reviewed, want %d", reviews, tc.reviews)
			}
			started := eventsOf(events, EventRunStarted)
			if len(started) != 1 {
				t.Fatalf("run_started events: %q", started)
			}
			// The header's note comes after the agent's and the gates',
			// and before the quota's (none here).
			if tc.header != "" && !strings.HasSuffix(started[0], tc.header) {
				t.Errorf("header %q does not end with %q", started[0], tc.header)
			}
			if tc.header == "" && (strings.Contains(started[0], "reviewer") || strings.Contains(started[0], agentsWord)) {
				t.Errorf("header %q speaks of a reviewer", started[0])
			}
			said := 0
			for _, e := range events {
				said += strings.Count(e.Message, agentsWord)
			}
			if want := strings.Count(tc.header, agentsWord); said != want {
				t.Errorf("%q said %d times, want %d", agentsWord, said, want)
			}
		})
	}
}

// TestAutoReviewCountsAgainstTheBudget: the reviewer review.when = auto
// brings in is paid for like any other: its cost is in the task's history
// line and the run's totals, and the budget stops the run once the
// worker's and the reviewer's costs together reach it.
func TestAutoReviewCountsAgainstTheBudget(t *testing.T) {
	t.Parallel()
	f, reviewer, trees := reviewFixture(t, verdict("<promise>SHIP</promise>", 0.25))
	f.plan = newPlan("A", "B")
	f.opts.Review.When = ReviewAuto
	// The worker's 0.5 alone leaves room for B; with the reviewer's 0.25
	// the run is at its budget.
	f.opts.Budget = 0.75
	_, err := f.runWith(t, reviewer, trees)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("Run = %v, want the budget's limit", err)
	}
	if d := cmp.Diff([]string{"A:task_done"}, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	if rev := f.store.history[0].Review; rev == nil || rev.CostUSD != 0.25 {
		t.Errorf("review evidence = %+v", rev)
	}
	if got := f.store.st.Totals.CostUSD; got != 0.75 {
		t.Errorf("totals cost = %v, want 0.75", got)
	}
}

// shipper is a reviewer that ships every claim, safe to call from
// --parallel's workers at once.
type shipper struct {
	mu    sync.Mutex
	calls int
}

func (s *shipper) Name() string { return "fake" }
func (s *shipper) Invocation(agent.Request) (agent.Invocation, error) {
	return agent.Invocation{Argv: []string{"fake"}}, nil
}
func (s *shipper) Run(context.Context, agent.Request, agent.Sink) (agent.Result, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return verdict("<promise>SHIP</promise>", 0.25), nil
}

// TestAutoReviewInParallelWorkers: the run's decision goes with each
// --parallel worker: with no gate, every task is reviewed in its
// worktree.
func TestAutoReviewInParallelWorkers(t *testing.T) {
	t.Parallel()
	f := newParFixture(t, ids("A", "B", "C")...)
	reviewer := &shipper{}
	opts := Options{Review: ReviewOptions{When: ReviewAuto}}
	opts.Dir = "/repo"
	opts.Commit = true
	opts.MaxAttempts = 3
	deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Repo: f.main, Reviewer: reviewer,
		Emit: func(e Event) { f.mu.Lock(); f.events = append(f.events, e); f.mu.Unlock() }}
	err := RunParallel(t.Context(), opts, deps, Parallel{Workers: 2, Worktrees: f.trees, Root: "/repo", Dir: "/repo/.ralph/worktrees"})
	if err != nil {
		t.Fatal(err)
	}
	if reviewer.calls != 3 {
		t.Errorf("the reviewer ran %d times, want 3", reviewer.calls)
	}
	for _, r := range f.store.history {
		if r.Outcome != state.OutcomeTaskDone || r.Review == nil || r.Review.Verdict != "SHIP" {
			t.Errorf("history: %s %s, review %+v", r.TaskID, r.Outcome, r.Review)
		}
	}
}
