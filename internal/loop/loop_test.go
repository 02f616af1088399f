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
	"github.com/ralph-loop/ralph/internal/completion"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// memPlan is a plan in memory.
type memPlan struct {
	p        task.Plan
	modified bool
	restored int
	// edits is what MergeEdits finds once modified.
	edits task.Edits
	// onSet, when set, hears of each SetStatus first.
	onSet  func(id string, st task.Status)
	failed []string
}

func newPlan(ids ...string) *memPlan {
	mp := &memPlan{p: task.Plan{Path: "/p/prd.json", Format: "prd"}}
	for _, id := range ids {
		mp.p.Tasks = append(mp.p.Tasks, task.Task{ID: id, Title: "Task " + id, Status: task.StatusOpen})
	}
	return mp
}

func (m *memPlan) Plan() *task.Plan { return &m.p }
func (m *memPlan) SetStatus(id string, st task.Status) error {
	if m.onSet != nil {
		m.onSet(id, st)
	}
	if st == task.StatusFailed {
		m.failed = append(m.failed, id)
		return nil
	}
	for i := range m.p.Tasks {
		if m.p.Tasks[i].ID == id {
			m.p.Tasks[i].Status = st
			return nil
		}
	}
	return fmt.Errorf("no task %s", id)
}
func (m *memPlan) Reload() (bool, error)   { return false, nil }
func (m *memPlan) Modified() (bool, error) { return m.modified, nil }
func (m *memPlan) Restore() error          { m.modified = false; m.restored++; return nil }

// MergeEdits gives edits when the plan was modified (by default one
// status change undone).
func (m *memPlan) MergeEdits() (task.Edits, error) {
	if !m.modified {
		return task.Edits{}, nil
	}
	m.modified = false
	m.restored++
	if m.edits.Changed() {
		return m.edits, nil
	}
	return task.Edits{Reverted: []task.Reverted{{Task: m.p.Tasks[0], Edited: task.StatusDone}}}, nil
}

// memStore keeps state and history in memory.
type memStore struct {
	// transcript, when set, is where every transcript goes.
	transcript string
	st         state.State
	history    []state.Record
	dir        string
	// failAppend, when set, is what every history append fails with.
	failAppend error
}

func (s *memStore) LoadState() (state.State, error) { return s.st, nil }
func (s *memStore) SaveState(st state.State) error  { s.st = st; return nil }
func (s *memStore) AppendHistory(r state.Record) error {
	if s.failAppend != nil {
		return s.failAppend
	}
	s.history = append(s.history, r)
	return nil
}
func (s *memStore) History() ([]state.Record, error) { return s.history, nil }
func (s *memStore) IterationFiles(runID string, n int) (string, string, error) {
	out := fmt.Sprintf("%s/iter-%03d.out", s.dir, n)
	if s.transcript != "" {
		out = s.transcript
	}
	return fmt.Sprintf("%s/iter-%03d.prompt.md", s.dir, n), out, nil
}

// scripted answers each invocation with the next result; the last repeats.
type scripted struct {
	// mu serialises Run: an end review runs its reviewers at once, and a
	// test may give one scripted agent both roles.
	mu      sync.Mutex
	results []agent.Result
	calls   int
	prompts []string
	before  func(n int) // runs at the start of invocation n (1-based)
	// output is what each invocation writes to its transcript.
	output []byte
}

func (a *scripted) Name() string { return "fake" }
func (a *scripted) Invocation(agent.Request) (agent.Invocation, error) {
	return agent.Invocation{Argv: []string{"fake"}}, nil
}
func (a *scripted) Run(ctx context.Context, req agent.Request, sink agent.Sink) (agent.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	a.prompts = append(a.prompts, req.Prompt)
	if a.before != nil {
		a.before(a.calls)
	}
	if a.output != nil && sink.Transcript != nil {
		if _, err := sink.Transcript.Write(a.output); err != nil {
			return agent.Result{}, fmt.Errorf("the transcript refused a write: %w", err)
		}
	}
	return a.results[min(a.calls, len(a.results))-1], nil
}

func done() agent.Result {
	return agent.Result{FinalText: "ok <promise>TASK_DONE</promise>", CostUSD: 0.5, HasCost: true}
}

// fakeClock advances when the loop sleeps.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

type fixture struct {
	plan  *memPlan
	store *memStore
	agent *scripted
	clock *fakeClock
	repo  *memRepo
	gate  *memGate
	opts  Options
	warns []string
}

// memRepo is a working tree whose content is a number: the agent changes
// it by counting up.
type memRepo struct {
	commits []string
	tree    int
	// seen is the tree the last Changes saw, committed the last commit's.
	seen, committed int
	// refuse is how many commits git refuses, as it refuses a path it
	// takes in no repository (held_test.go).
	refuse int
}

func (r *memRepo) Changes(context.Context) ([]string, error) {
	if r.tree == r.seen {
		return nil, nil
	}
	r.seen = r.tree
	return []string{"/repo/main.go"}, nil
}

// Snapshot makes memRepo a TreeID: the gates' memory keys on it.
func (r *memRepo) Snapshot(context.Context) (string, error) { return fmt.Sprint(r.tree), nil }

func (r *memRepo) Dirty(context.Context) (bool, error) { return r.tree != r.committed, nil }

func (r *memRepo) Commit(_ context.Context, msg string) (string, error) {
	if r.refuse > 0 {
		r.refuse--
		return "", refusedTree{}
	}
	r.committed = r.tree
	r.commits = append(r.commits, msg)
	return fmt.Sprintf("c%d", len(r.commits)), nil
}

type memGate struct {
	results []bool
	calls   int
}

func (g *memGate) Check(context.Context, task.Task) (bool, string, error) {
	g.calls++
	ok := g.results[min(g.calls, len(g.results))-1]
	if !ok {
		return false, "FAIL: TestGreeting (0.01s)", nil
	}
	return true, "ok", nil
}

func newFixture(t *testing.T, ids []string, results ...agent.Result) *fixture {
	t.Helper()
	return &fixture{
		plan:  newPlan(ids...),
		store: &memStore{dir: t.TempDir()},
		agent: &scripted{results: results},
		clock: &fakeClock{now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)},
		opts: Options{Dir: t.TempDir(), MaxIterations: 20, MaxAttempts: 3, MaxWait: time.Hour,
			StuckThreshold: 5, Commit: true},
	}
}

func (f *fixture) run(t *testing.T) error {
	t.Helper()
	return Run(t.Context(), f.opts, f.deps(nil))
}

// deps are the fixture's; watch, when set, sees every event.
func (f *fixture) deps(watch func(Event)) Deps {
	deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Now: f.clock.Now, Sleep: f.clock.Sleep,
		Jitter: func(time.Duration) time.Duration { return 0 },
		Emit: func(e Event) {
			if e.Kind == EventWarning {
				f.warns = append(f.warns, e.Message)
			}
			if watch != nil {
				watch(e)
			}
		}}
	if f.repo != nil {
		deps.Repo = f.repo
	}
	if f.gate != nil {
		deps.Gate = f.gate
	}
	return deps
}

func (f *fixture) outcomes() []string {
	var out []string
	for _, r := range f.store.history {
		out = append(out, r.TaskID+":"+string(r.Outcome))
	}
	return out
}

func TestRunMarksTasksDoneAndCommits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	f.repo = &memRepo{}
	f.agent.before = func(int) { f.repo.tree++ }
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:task_done", "B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"feat: A - Task A", "feat: B - Task B"}, f.repo.commits); diff != "" {
		t.Errorf("commits (-want +got):\n%s", diff)
	}
	if got := f.store.st; got.Status != state.StatusDone || got.Totals.TasksDone != 2 || got.Totals.CostUSD != 1.0 {
		t.Errorf("state = %+v", got)
	}
	if r := f.store.history[0]; r.Commit != "c1" || r.FilesChanged != 1 || r.Marker != "TASK_DONE" || r.Strategy != "promise-tag" {
		t.Errorf("record = %+v", r)
	}
}

func TestUsageLimitWaitsUntilResetAndDoesNotCountAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"})
	reset := time.Date(2026, 11, 21, 19, 0, 0, 0, time.UTC)
	f.agent.results = []agent.Result{
		{IsError: true, ErrorKind: agent.ErrorUsageLimit, ErrorText: "You've hit your limit · resets 7pm", ResetAt: reset},
		done(),
	}
	f.opts.MaxWait = 8 * time.Hour
	f.opts.MaxAttempts = 1
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:rate_limited", "A:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{7 * time.Hour}, f.clock.sleeps); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
	if a := f.store.st.Tasks["A"].Attempts; a != 0 {
		t.Errorf("attempts = %d, want 0", a)
	}
}

func TestUsageLimitBeyondMaxWaitStopsWithLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, agent.Result{IsError: true, ErrorKind: agent.ErrorUsageLimit,
		ResetAt: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)})
	err := f.run(t)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "--max-wait") {
		t.Fatalf("err = %v, want ErrLimit naming --max-wait", err)
	}
	if f.store.st.Tasks["A"].Failed {
		t.Error("a limit must not fail the task")
	}
}

func TestUsageLimitWithoutResetBacksOff(t *testing.T) {
	t.Parallel()
	limit := agent.Result{IsError: true, ErrorKind: agent.ErrorRateLimit, ErrorText: "429"}
	f := newFixture(t, []string{"A"}, limit, limit, limit, done())
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}
	if diff := cmp.Diff(want, f.clock.sleeps); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
}

func TestTransientErrorsBackOffThenCountAsAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, agent.Result{IsError: true, ErrorKind: agent.ErrorTransient, ErrorText: "529 overloaded"})
	f.opts.MaxAttempts = 1
	f.opts.StuckThreshold = 100
	err := f.run(t)
	if !errors.Is(err, ErrStuck) {
		t.Fatalf("err = %v, want ErrStuck (only failed tasks left)", err)
	}
	if got := len(f.store.history); got != maxTransientRetries+1 {
		t.Errorf("%d iterations, want %d", got, maxTransientRetries+1)
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second}
	if diff := cmp.Diff(want, f.clock.sleeps); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
	if !f.store.st.Tasks["A"].Failed {
		t.Error("task should have failed after the retries")
	}
}

func TestFailedAttemptsFailTheTaskAndMoveOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"},
		agent.Result{FinalText: "no luck"}, agent.Result{FinalText: "<promise>TASK_FAILED</promise> flaky"}, done())
	f.opts.MaxAttempts = 2
	err := f.run(t)
	if !errors.Is(err, ErrStuck) {
		t.Fatalf("err = %v, want ErrStuck", err)
	}
	if diff := cmp.Diff([]string{"A:no_marker", "A:task_failed", "B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"A"}, f.plan.failed); diff != "" {
		t.Errorf("failed in plan (-want +got):\n%s", diff)
	}
	if f.plan.p.Tasks[0].Status != task.StatusOpen {
		t.Error("a failed task must never be marked done")
	}
	// The second prompt for A carried the first attempt.
	if !strings.Contains(f.agent.prompts[1], "no_marker") {
		t.Errorf("second prompt lacks the earlier attempt:\n%s", f.agent.prompts[1])
	}
}

func TestBudgetStopsBeforeNextIteration(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B", "C"}, done())
	f.opts.Budget = 0.9
	err := f.run(t)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("err = %v, want budget limit", err)
	}
	if got := len(f.store.history); got != 2 {
		t.Errorf("%d iterations, want 2 (0.5 + 0.5 reaches 0.9)", got)
	}
}

func TestMaxIterations(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B", "C"}, done())
	f.opts.MaxIterations = 2
	if err := f.run(t); !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v, want ErrLimit", err)
	}
	if f.store.st.Status != state.StatusStopped {
		t.Errorf("status = %s", f.store.st.Status)
	}
}

func TestSameErrorTripsBreaker(t *testing.T) {
	t.Parallel()
	ids := []string{"A", "B", "C", "D"}
	f := newFixture(t, ids, agent.Result{IsError: true, ErrorKind: agent.ErrorOther, ErrorText: "tool Bash failed: exit 127 at 12:00:01"})
	f.opts.MaxAttempts = 10
	f.opts.StuckThreshold = 3
	err := f.run(t)
	if !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "same error 3 times") {
		t.Fatalf("err = %v, want the same-error breaker", err)
	}
	if got := len(f.store.history); got != 3 {
		t.Errorf("%d iterations, want 3", got)
	}
}

func TestNoProgressTripsBreaker(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, agent.Result{FinalText: "thinking"})
	f.repo = &memRepo{}
	f.opts.MaxAttempts = 100
	f.opts.StuckThreshold = 4
	err := f.run(t)
	if !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "changed no file") {
		t.Fatalf("err = %v, want the no-progress breaker", err)
	}
}

func TestPrematurePlanClaimInRunnerMode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"},
		agent.Result{FinalText: "<promise>COMPLETE</promise>"}, done())
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	want := []string{"A:premature_claim", "A:task_done", "B:task_done"}
	if diff := cmp.Diff(want, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

func TestGateFailureKeepsTaskOpen(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.gate = &memGate{results: []bool{false, true}}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:gate_failed", "A:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if !strings.Contains(f.agent.prompts[1], "FAIL: TestGreeting") {
		t.Errorf("gate output missing from the retry prompt:\n%s", f.agent.prompts[1])
	}
}

// TestRunnerModeTakesPlanEdits: an edit of the plan during the iteration
// is taken in (MergeEdits) and reported as the plan's change, whatever
// the outcome; a task that moved is marked under its new id.
func TestRunnerModeTakesPlanEdits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"1", "2"}, done())
	f.opts.MaxIterations = 1
	f.agent.before = func(int) {
		// A task inserted first: the running one is 2 now.
		f.plan.p.Tasks = []task.Task{{ID: "1", Title: "New", Status: task.StatusOpen},
			{ID: "2", Title: "Task 1", Status: task.StatusOpen}, {ID: "3", Title: "Task 2", Status: task.StatusOpen}}
		f.plan.modified = true
		f.plan.edits = task.Edits{Added: []task.Task{f.plan.p.Tasks[0]}, Moved: map[string]string{"1": "2", "2": "3"}}
	}
	_ = f.run(t)
	if f.plan.restored != 1 || len(f.warns) != 1 {
		t.Fatalf("merged %d times, warnings %q", f.plan.restored, f.warns)
	}
	const want = `the plan changed during the iteration: added 1 "New"; kept, used from the next iteration on`
	if f.warns[0] != want {
		t.Errorf("warning %q, want %q", f.warns[0], want)
	}
	var got []string
	for _, tk := range f.plan.p.Tasks {
		got = append(got, tk.ID+":"+string(tk.Status))
	}
	if diff := cmp.Diff([]string{"1:open", "2:done", "3:open"}, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"2:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

// TestRunnerModeUndoesStatusEdits: a status change ralph did not make is
// put back even when the iteration fails, and said so.
func TestRunnerModeUndoesStatusEdits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, agent.Result{FinalText: "not yet"})
	f.opts.MaxIterations = 1
	f.agent.before = func(int) { f.plan.modified = true }
	_ = f.run(t)
	if f.plan.restored != 1 || len(f.warns) != 1 || !strings.Contains(f.warns[0], "undone: A marked done (put back to open") {
		t.Errorf("merged %d times, warnings %q", f.plan.restored, f.warns)
	}
}

func TestRelaxedStrategyRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, agent.Result{FinalText: "```\n<promise>TASK_DONE</promise>\n```"})
	f.opts.Strategies = []completion.Strategy{completion.PromiseTag, completion.RelaxedTag}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if r := f.store.history[0]; r.Outcome != state.OutcomeTaskDone || r.Strategy != "relaxed-tag" {
		t.Errorf("record = %s/%s", r.Outcome, r.Strategy)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 10: 10 * time.Second} {
		if got := backoff(time.Second, 10*time.Second, n); got != want {
			t.Errorf("backoff(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestNormalizeError(t *testing.T) {
	t.Parallel()
	a := normalizeError("request 8f3a9c2e1b failed at 12:00:01 after 3 tries")
	b := normalizeError("request 77aa00bb11 failed at 13:45:09 after 4 tries")
	if a != b {
		t.Errorf("%q != %q", a, b)
	}
}

func TestTimedOutIterationThatChangedFilesIsProgress(t *testing.T) {
	t.Parallel()
	// Every iteration times out, but the first three change files: the
	// breaker (threshold 2) counts only the two that changed nothing after
	// them, so it trips at iteration 5, not 2.
	f := newFixture(t, []string{"A"}, agent.Result{TimedOut: true})
	f.repo = &memRepo{}
	f.agent.before = func(n int) {
		if n <= 3 {
			f.repo.tree++
		}
	}
	f.opts.MaxAttempts = 100
	f.opts.StuckThreshold = 2
	err := f.run(t)
	if !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "(4 to 5)") {
		t.Fatalf("err = %v, want the no-progress breaker over iterations 4 to 5", err)
	}
	for i, r := range f.store.history {
		if want := i < 3; (r.FilesChanged > 0) != want || r.Outcome != state.OutcomeTimeout {
			t.Errorf("iteration %d: %s, %d files changed", r.Iteration, r.Outcome, r.FilesChanged)
		}
	}
}
