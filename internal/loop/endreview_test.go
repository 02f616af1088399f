package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// addPlan is a memPlan that takes new tasks, as task.File does: ids F1,
// F2, ... in the order they come.
type addPlan struct {
	*memPlan
	added []task.Task
}

func (p *addPlan) Add(t task.Task) (task.Task, error) {
	t.ID = fmt.Sprintf("F%d", len(p.added)+1)
	t.Status = task.StatusOpen
	p.added = append(p.added, t)
	p.p.Tasks = append(p.p.Tasks, t)
	return t, nil
}

// focusReviewer is a reviewer whose answer depends on the focus its prompt
// names and on how often that focus was asked; safe for the end review's
// reviewers, which run at once.
type focusReviewer struct {
	mu      sync.Mutex
	answer  func(focus string, n int) agent.Result
	calls   map[string]int
	prompts map[string][]string
}

func newFocusReviewer(answer func(focus string, n int) agent.Result) *focusReviewer {
	return &focusReviewer{answer: answer, calls: map[string]int{}, prompts: map[string][]string{}}
}

func (a *focusReviewer) Name() string { return "rev" }
func (a *focusReviewer) Invocation(agent.Request) (agent.Invocation, error) {
	return agent.Invocation{Argv: []string{"rev"}}, nil
}

func (a *focusReviewer) Run(_ context.Context, req agent.Request, _ agent.Sink) (agent.Result, error) {
	first, _, _ := strings.Cut(req.Prompt, "\n")
	focus := strings.TrimPrefix(first, "# Review: ")
	a.mu.Lock()
	a.calls[focus]++
	n := a.calls[focus]
	a.prompts[focus] = append(a.prompts[focus], req.Prompt)
	a.mu.Unlock()
	return a.answer(focus, n), nil
}

func (a *focusReviewer) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.calls {
		n += c
	}
	return n
}

func ship() agent.Result { return verdict("Nothing to fix. <promise>SHIP</promise>", 0.1) }

func revise(findings ...string) agent.Result {
	var b strings.Builder
	for i, f := range findings {
		fmt.Fprintf(&b, "%d. %s\n", i+1, f)
	}
	return verdict(b.String()+"<promise>REVISE</promise>", 0.1)
}

// endFixture is a one-task plan whose run ends with the review phase.
func endFixture(t *testing.T, rounds int, focus ...string) (*fixture, *addPlan, *memTrees) {
	t.Helper()
	f := newFixture(t, []string{"A"}, done())
	p := &addPlan{memPlan: f.plan}
	f.repo = &memRepo{}
	trees := &memTrees{diff: greetingDiff}
	f.agent.before = func(int) { f.repo.tree++; trees.tree++ }
	f.opts.Review = ReviewOptions{When: ReviewEnd, Model: "m", Focus: focus, Rounds: rounds}
	return f, p, trees
}

func (f *fixture) runEnd(t *testing.T, plan Plan, reviewer Agent, trees Trees) ([]Event, error) {
	t.Helper()
	var events []Event
	deps := Deps{Agent: f.agent, Plan: plan, Store: f.store, Repo: f.repo, Trees: trees, Reviewer: reviewer,
		Now: f.clock.Now, Sleep: f.clock.Sleep, Jitter: func(time.Duration) time.Duration { return 0 },
		Emit: func(e Event) {
			events = append(events, e)
			if e.Kind == EventWarning {
				f.warns = append(f.warns, e.Message)
			}
		}}
	return events, Run(t.Context(), f.opts, deps)
}

// The reviewers' findings, the same one from two focuses told apart by
// nothing but case, markup and a full stop, become one task each, the
// finding as its criterion; the loop runs them; the next round finds
// nothing new and the run is done.
func TestEndReviewFindingsBecomeTasksAndRun(t *testing.T) {
	t.Parallel()
	f, plan, trees := endFixture(t, 2, "tests", "security")
	reviewer := newFocusReviewer(func(focus string, n int) agent.Result {
		switch {
		case n > 1:
			return ship()
		case focus == "tests":
			return revise("greet.go has no test for the empty name", "The README does not mention `greet`.")
		}
		return revise("Greet.go has no test for the **empty** name.")
	})
	events, err := f.runEnd(t, plan, reviewer, trees)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A:task_done", ":end_review", "F1:task_done", "F2:task_done", ":end_review"}
	if d := cmp.Diff(want, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"greet.go has no test for the empty name", "The README does not mention `greet`"}, titles(plan.added)); d != "" {
		t.Errorf("added tasks (-want +got):\n%s", d)
	}
	if c := plan.added[0].Criteria; len(c) != 1 || c[0] != "greet.go has no test for the empty name" {
		t.Errorf("criteria %q, want the finding", c)
	}
	if !strings.Contains(plan.added[0].Description, "focus: tests") {
		t.Errorf("description %q does not say where the task came from", plan.added[0].Description)
	}
	// Two rounds of two reviewers.
	if n := reviewer.total(); n != 4 {
		t.Errorf("%d reviewer runs, want 4", n)
	}
	// The reviewers read the run's diff, from the tree it started at.
	p := reviewer.prompts["tests"][0]
	for _, s := range []string{"everything it changed over the whole run", "Your focus: **tests**", "+hello", "## Task A: Task A"} {
		if !strings.Contains(p, s) {
			t.Errorf("the end review prompt lacks %q:\n%s", s, p)
		}
	}
	if trees.diffs[0][0] != "t0" {
		t.Errorf("the run's diff starts at %s, want t0 (the tree when the run started)", trees.diffs[0][0])
	}
	rec := f.store.history[1]
	if rec.EndReview == nil || rec.EndReview.Round != 1 || len(rec.EndReview.Reviewers) != 2 || len(rec.EndReview.Tasks) != 2 {
		t.Fatalf("round evidence %+v", rec.EndReview)
	}
	if rec.CostUSD < 0.199 || rec.CostUSD > 0.201 {
		t.Errorf("the round's cost %v, want its reviewers' 0.2", rec.CostUSD)
	}
	st := f.store.st
	if st.Status != state.StatusDone || st.EndReview == nil || st.EndReview.Rounds != 2 || len(st.Findings) != 2 {
		t.Errorf("state: status %s, end review %+v, findings %v", st.Status, st.EndReview, st.Findings)
	}
	if ft := st.Findings["greet.go has no test for the empty name"]; ft.Task != "F1" || ft.Focus != "tests" || ft.Round != 1 {
		t.Errorf("finding memory %+v", ft)
	}
	var msgs []string
	for _, e := range events {
		if e.Kind == EventReview {
			msgs = append(msgs, e.Message)
		}
	}
	joined := strings.Join(msgs, "\n")
	for _, s := range []string{"end review round 1/2: 2 reviewers by rev/m (tests, security)", "tests: REVISE by rev/m, 2 findings",
		"end review round 1/2: 2 new findings became tasks F1, F2", "end review round 2/2: nothing new"} {
		if !strings.Contains(joined, s) {
			t.Errorf("review events lack %q:\n%s", s, joined)
		}
	}
}

func titles(ts []task.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Title)
	}
	return out
}

// A finding that comes back after its task was done stops the run with a
// report: no loop between the reviewer and the worker.
func TestEndReviewRecurringFindingStops(t *testing.T) {
	t.Parallel()
	f, plan, trees := endFixture(t, 5, "tests")
	reviewer := newFocusReviewer(func(string, int) agent.Result { return revise("greet.go has no test") })
	_, err := f.runEnd(t, plan, reviewer, trees)
	if !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), `"greet.go has no test" (task F1, done) came back`) {
		t.Fatalf("err = %v, want stuck on the finding that came back", err)
	}
	if d := cmp.Diff([]string{"A:task_done", ":end_review", "F1:task_done", ":end_review"}, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	if n := len(plan.added); n != 1 {
		t.Errorf("%d tasks added, want 1", n)
	}
	last := f.store.history[3]
	if len(last.EndReview.Recurring) != 1 || !strings.Contains(last.Error, "came back") {
		t.Errorf("the last round's line: error %q, evidence %+v", last.Error, last.EndReview)
	}
	if st := f.store.st.Status; st != state.StatusStuck {
		t.Errorf("status %s, want stuck", st)
	}
}

// review.rounds bounds the rounds: the last round's tasks are run, and
// nobody reviews them again at the end.
func TestEndReviewRoundsBound(t *testing.T) {
	t.Parallel()
	f, plan, trees := endFixture(t, 1, "tests")
	reviewer := newFocusReviewer(func(_ string, n int) agent.Result { return revise(fmt.Sprintf("finding %d", n)) })
	if _, err := f.runEnd(t, plan, reviewer, trees); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"A:task_done", ":end_review", "F1:task_done"}, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	if n := reviewer.total(); n != 1 {
		t.Errorf("%d reviewer runs, want 1", n)
	}
}

// Reviewers that never give a verdict are asked up to review.max-attempts
// times; a round without any verdict stops the run: nobody checked it.
func TestEndReviewWithoutVerdictIsStuck(t *testing.T) {
	t.Parallel()
	f, plan, trees := endFixture(t, 2, "tests", "docs")
	reviewer := newFocusReviewer(func(string, int) agent.Result { return agent.Result{TimedOut: true} })
	_, err := f.runEnd(t, plan, reviewer, trees)
	if !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "no verdict from any of its 2 reviewers") {
		t.Fatalf("err = %v", err)
	}
	if n := reviewer.total(); n != 4 {
		t.Errorf("%d reviewer runs, want 2 attempts of each of 2", n)
	}
	rec := f.store.history[1]
	if rec.Outcome != state.OutcomeEndReview || rec.EndReview.Reviewers[0].Verdict != "failed" || rec.EndReview.Reviewers[0].Attempts != 2 {
		t.Errorf("round line %+v", rec.EndReview)
	}
	// Not a round: the next run tries again.
	if er := f.store.st.EndReview; er.Rounds != 0 {
		t.Errorf("rounds %d, want 0", er.Rounds)
	}
}

// One reviewer's usage limit is waited out; then only it runs again.
func TestEndReviewUsageLimitIsWaitedOut(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	f, plan, trees := endFixture(t, 2, "tests", "docs")
	reviewer := newFocusReviewer(func(focus string, n int) agent.Result {
		if focus == "docs" && n == 1 {
			return agent.Result{IsError: true, ErrorKind: agent.ErrorUsageLimit, ErrorText: "limit", ResetAt: reset}
		}
		return ship()
	})
	if _, err := f.runEnd(t, plan, reviewer, trees); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]int{"tests": 1, "docs": 2}, reviewer.calls); d != "" {
		t.Errorf("reviewer runs (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]time.Duration{time.Hour}, f.clock.sleeps); d != "" {
		t.Errorf("sleeps (-want +got):\n%s", d)
	}
}

// A run whose diff is empty (every task was done before it started) has
// nothing to review, and pays no reviewer.
func TestEndReviewSkipsAnEmptyDiff(t *testing.T) {
	t.Parallel()
	f, plan, trees := endFixture(t, 2, "tests")
	trees.diff = ""
	reviewer := newFocusReviewer(func(string, int) agent.Result { return revise("x") })
	if _, err := f.runEnd(t, plan, reviewer, trees); err != nil {
		t.Fatal(err)
	}
	if n := reviewer.total(); n != 0 {
		t.Errorf("%d reviewer runs over an empty diff", n)
	}
}

// A run that continues an unfinished one keeps its base and its rounds.
func TestEndReviewResumesFromTheStateItLeft(t *testing.T) {
	t.Parallel()
	f, plan, trees := endFixture(t, 2, "tests")
	f.store.st = state.State{Status: state.StatusInterrupted, EndReview: &state.EndReview{Base: "t-old", Rounds: 1}}
	reviewer := newFocusReviewer(func(string, int) agent.Result { return ship() })
	if _, err := f.runEnd(t, plan, reviewer, trees); err != nil {
		t.Fatal(err)
	}
	if n := reviewer.total(); n != 1 {
		t.Errorf("%d reviewer runs, want the one round left", n)
	}
	if from := trees.diffs[len(trees.diffs)-1][0]; from != "t-old" {
		t.Errorf("the diff starts at %s, want the earlier run's base", from)
	}
}

// --once never starts the review phase: it must not run the tasks it adds.
func TestEndReviewNotWithOnce(t *testing.T) {
	t.Parallel()
	f, plan, trees := endFixture(t, 2, "tests")
	f.opts.Once = true
	reviewer := newFocusReviewer(func(string, int) agent.Result { return revise("x") })
	if _, err := f.runEnd(t, plan, reviewer, trees); err != nil {
		t.Fatal(err)
	}
	if n := reviewer.total(); n != 0 {
		t.Errorf("%d reviewer runs with --once", n)
	}
}

// Review is one round on its own: the findings become tasks, nothing runs
// them, and state.json says so.
func TestReviewOnItsOwn(t *testing.T) {
	t.Parallel()
	f, plan, trees := endFixture(t, 0, "tests")
	plan.p.Tasks[0].Status = task.StatusDone
	reviewer := newFocusReviewer(func(string, int) agent.Result { return revise("no test for the empty name") })
	deps := Deps{Plan: plan, Store: f.store, Trees: trees, Reviewer: reviewer, Now: f.clock.Now, Sleep: f.clock.Sleep}
	if err := Review(t.Context(), f.opts, deps, "c0ffee"); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"no test for the empty name"}, titles(plan.added)); d != "" {
		t.Errorf("added (-want +got):\n%s", d)
	}
	if f.agent.calls != 0 {
		t.Error("the worker ran")
	}
	if from := trees.diffs[0][0]; from != "c0ffee" {
		t.Errorf("the diff starts at %s, want the given base", from)
	}
	st := f.store.st
	if st.Status != state.StatusDone || !strings.Contains(st.Message, "added 1 task to") || st.Agent != "rev" {
		t.Errorf("state %+v", st)
	}
	if d := cmp.Diff([]string{":end_review"}, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	// Again: the finding is an open task already, nothing new.
	if err := Review(t.Context(), f.opts, deps, "c0ffee"); err != nil {
		t.Fatal(err)
	}
	if len(plan.added) != 1 || !strings.Contains(f.store.st.Message, "nothing new") {
		t.Errorf("second review: %d added, message %q", len(plan.added), f.store.st.Message)
	}
}

// A plan that cannot take tasks is an error that says so, not a lost
// finding.
func TestEndReviewPlanWithoutAdd(t *testing.T) {
	t.Parallel()
	f, _, trees := endFixture(t, 2, "tests")
	reviewer := newFocusReviewer(func(string, int) agent.Result { return revise("x") })
	_, err := f.runEnd(t, f.plan, reviewer, trees)
	if err == nil || !strings.Contains(err.Error(), "cannot take new tasks") {
		t.Fatalf("err = %v", err)
	}
}

func TestFindingKeyAndTitle(t *testing.T) {
	t.Parallel()
	same := []string{"greet.go has no test for the empty name", "Greet.go has no test for the **empty** name.",
		"  greet.go  has no test\tfor the `empty` name!"}
	for _, s := range same {
		if got := findingKey(s); got != findingKey(same[0]) {
			t.Errorf("findingKey(%q) = %q, want %q", s, got, findingKey(same[0]))
		}
	}
	if findingKey("greet.go has no test") == findingKey("greet_test.go has no test") {
		t.Error("different files make the same key")
	}
	for in, want := range map[string]string{
		"Short one.":           "Short one",
		"[ ] looks like a box": "looks like a box",
		"internal/greet/greet.go:42: the empty input case returns nil instead of an error, which hides the bug": "internal/greet/greet.go:42: the empty input case returns nil instead of…",
	} {
		if got := findingTitle(in); got != want {
			t.Errorf("findingTitle(%q) = %q, want %q", in, got, want)
		}
	}
}
