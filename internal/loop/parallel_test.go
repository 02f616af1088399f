package loop

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// syncPlan is a plan in memory that several workers may use at once.
type syncPlan struct {
	mu sync.Mutex
	p  task.Plan
}

func newSyncPlan(tasks ...task.Task) *syncPlan {
	sp := &syncPlan{p: task.Plan{Path: "/repo/prd.json", Format: "prd"}}
	for _, t := range tasks {
		t.Status = task.StatusOpen
		sp.p.Tasks = append(sp.p.Tasks, t)
	}
	return sp
}

func (s *syncPlan) Plan() *task.Plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.p
	p.Tasks = slices.Clone(s.p.Tasks)
	return &p
}

func (s *syncPlan) SetStatus(id string, st task.Status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.p.Tasks {
		if s.p.Tasks[i].ID == id {
			if st != task.StatusFailed {
				s.p.Tasks[i].Status = st
			}
			return nil
		}
	}
	return fmt.Errorf("no task %s", id)
}

func (s *syncPlan) Reload() (bool, error)   { return false, nil }
func (s *syncPlan) Modified() (bool, error) { return false, nil }
func (s *syncPlan) Restore() error          { return nil }
func (s *syncPlan) MergeEdits() (task.Edits, error) {
	return task.Edits{}, nil
}

func (s *syncPlan) done(id string) bool {
	t, _ := s.Plan().Task(id)
	return t.Status == task.StatusDone
}

// syncStore keeps state and history in memory, for several workers.
type syncStore struct {
	mu      sync.Mutex
	st      state.State
	history []state.Record
	dir     string
}

func (s *syncStore) LoadState() (state.State, error) { return state.State{}, nil }
func (s *syncStore) SaveState(st state.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = st
	return nil
}
func (s *syncStore) AppendHistory(r state.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = append(s.history, r)
	return nil
}
func (s *syncStore) History() ([]state.Record, error) { return nil, nil }
func (s *syncStore) IterationFiles(_ string, n int) (string, string, error) {
	return filepath.Join(s.dir, fmt.Sprintf("iter-%03d.prompt.md", n)), filepath.Join(s.dir, fmt.Sprintf("iter-%03d.out", n)), nil
}

func (s *syncStore) outcomes() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string][]string{}
	for _, r := range s.history {
		m[r.TaskID] = append(m[r.TaskID], string(r.Outcome))
	}
	return m
}

// fakeRepo records commits; it is the main worktree and each task's.
type fakeRepo struct {
	mu      sync.Mutex
	commits []string
}

// Changes says a file changed every time.
func (r *fakeRepo) Changes(context.Context) ([]string, error) { return []string{"/repo/x.go"}, nil }
func (r *fakeRepo) Dirty(context.Context) (bool, error)       { return true, nil }
func (r *fakeRepo) Commit(_ context.Context, msg string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits = append(r.commits, msg)
	return fmt.Sprintf("%040d", len(r.commits)), nil
}

// fakeTrees keeps worktrees and branches in memory; conflict says which
// merges of a branch conflict.
type fakeTrees struct {
	mu       sync.Mutex
	trees    map[string]bool
	branches []string
	merged   []string
	conflict func(branch string, n int) bool
	merges   map[string]int
}

func newFakeTrees() *fakeTrees {
	return &fakeTrees{trees: map[string]bool{}, merges: map[string]int{}, conflict: func(string, int) bool { return false }}
}

func (f *fakeTrees) Add(_ context.Context, dir, branch string) (Repo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.trees[dir] || slices.Contains(f.branches, branch) {
		return nil, fmt.Errorf("%s or %s exists", dir, branch)
	}
	f.trees[dir] = true
	f.branches = append(f.branches, branch)
	return &fakeRepo{}, nil
}

func (f *fakeTrees) Merge(_ context.Context, branch string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.merges[branch]++
	if f.conflict(branch, f.merges[branch]) {
		return []string{"shared.txt"}, nil
	}
	f.merged = append(f.merged, branch)
	return nil, nil
}

func (f *fakeTrees) Remove(_ context.Context, dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.trees, dir)
	return nil
}

func (f *fakeTrees) Branches(_ context.Context, prefix string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, b := range f.branches {
		if strings.HasPrefix(b, prefix) {
			out = append(out, b)
		}
	}
	return out, nil
}

func (f *fakeTrees) DeleteBranch(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.branches, name)
	if i < 0 {
		return fmt.Errorf("no branch %s", name)
	}
	f.branches = slices.Delete(f.branches, i, i+1)
	return nil
}

func (f *fakeTrees) RenameBranch(_ context.Context, from, to string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.branches, from)
	if i < 0 {
		return fmt.Errorf("no branch %s", from)
	}
	f.branches[i] = to
	return nil
}

// treeAgent answers by the task its worktree is for (the directory's
// name); work runs before it answers.
type treeAgent struct {
	mu    sync.Mutex
	calls map[string]int
	dirs  []string
	work  func(ctx context.Context, id string, n int) error
	// answer, when set, says what the agent answers on task id's n-th call
	// instead of claiming it done.
	answer  func(id string, n int) (agent.Result, bool)
	running int
	peak    int
}

func (a *treeAgent) Name() string { return "fake" }
func (a *treeAgent) Invocation(agent.Request) (agent.Invocation, error) {
	return agent.Invocation{Argv: []string{"fake"}}, nil
}
func (a *treeAgent) Run(ctx context.Context, req agent.Request, sink agent.Sink) (agent.Result, error) {
	id := filepath.Base(req.Dir)
	a.mu.Lock()
	if a.calls == nil {
		a.calls = map[string]int{}
	}
	a.calls[id]++
	n := a.calls[id]
	a.dirs = append(a.dirs, req.Dir)
	a.running++
	a.peak = max(a.peak, a.running)
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.running--
		a.mu.Unlock()
	}()
	sink.Emit(agent.Event{Kind: agent.EventText, Text: "working on " + id})
	if a.work != nil {
		if err := a.work(ctx, id, n); err != nil {
			if ctx.Err() != nil {
				return agent.Result{Interrupted: true}, nil
			}
			return agent.Result{FinalText: "no luck"}, nil
		}
	}
	if a.answer != nil {
		if res, ok := a.answer(id, n); ok {
			return res, nil
		}
	}
	return agent.Result{FinalText: "done <promise>TASK_DONE</promise>"}, nil
}

// barrier returns work that waits until n agents run at once.
func barrier(a *treeAgent, n int) func(context.Context, string, int) error {
	return func(ctx context.Context, _ string, _ int) error {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			a.mu.Lock()
			peak := a.peak
			a.mu.Unlock()
			if peak >= n {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		return errors.New("not enough agents at once")
	}
}

type parFixture struct {
	plan   *syncPlan
	store  *syncStore
	agent  *treeAgent
	main   *fakeRepo
	trees  *fakeTrees
	events []Event
	mu     sync.Mutex
}

func newParFixture(t *testing.T, tasks ...task.Task) *parFixture {
	t.Helper()
	return &parFixture{plan: newSyncPlan(tasks...), store: &syncStore{dir: t.TempDir()}, agent: &treeAgent{},
		main: &fakeRepo{}, trees: newFakeTrees()}
}

func (f *parFixture) run(ctx context.Context, workers int, opts Options) error {
	opts.Dir = "/repo"
	opts.Commit = true
	opts.MaxAttempts = max(opts.MaxAttempts, 3)
	deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Repo: f.main,
		Emit: func(e Event) { f.mu.Lock(); f.events = append(f.events, e); f.mu.Unlock() }}
	return RunParallel(ctx, opts, deps, Parallel{Workers: workers, Worktrees: f.trees, Root: "/repo", Dir: "/repo/.ralph/worktrees"})
}

func ids(names ...string) []task.Task {
	var ts []task.Task
	for _, n := range names {
		ts = append(ts, task.Task{ID: n, Title: "Task " + n})
	}
	return ts
}

func TestParallelRunsIndependentTasksAtOnce(t *testing.T) {
	t.Parallel()
	f := newParFixture(t, ids("A", "B", "C", "D")...)
	f.agent.work = barrier(f.agent, 3)
	if err := f.run(t.Context(), 3, Options{}); err != nil {
		t.Fatal(err)
	}
	if f.agent.peak != 3 {
		t.Errorf("at most %d agents ran at once, want 3", f.agent.peak)
	}
	for _, id := range []string{"A", "B", "C", "D"} {
		if !f.plan.done(id) {
			t.Errorf("%s not done", id)
		}
	}
	// One commit per task on the run branch, each with its message.
	got := slices.Sorted(slices.Values(f.main.commits))
	want := []string{"feat: A - Task A", "feat: B - Task B", "feat: C - Task C", "feat: D - Task D"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commits (-want +got):\n%s", diff)
	}
	if len(f.trees.merged) != 4 || len(f.trees.trees) != 0 || len(f.trees.branches) != 0 {
		t.Errorf("merged %v; left worktrees %v, branches %v", f.trees.merged, f.trees.trees, f.trees.branches)
	}
	// Agents ran in their worktrees; history has one line per iteration,
	// with the commit made on the run branch.
	for _, d := range f.agent.dirs {
		if filepath.Dir(d) != "/repo/.ralph/worktrees" {
			t.Errorf("agent ran in %s", d)
		}
	}
	if len(f.store.history) != 4 {
		t.Fatalf("history has %d lines, want 4", len(f.store.history))
	}
	iters := map[int]bool{}
	for _, r := range f.store.history {
		iters[r.Iteration] = true
		if r.Outcome != state.OutcomeTaskDone || len(r.Commit) != 40 {
			t.Errorf("history: %+v", r)
		}
	}
	if len(iters) != 4 {
		t.Errorf("iteration numbers repeat: %v", iters)
	}
	if st := f.store.st; st.Status != state.StatusDone || st.Totals.TasksDone != 4 || st.Totals.Iterations != 4 || st.Iteration != 4 {
		t.Errorf("state: status %s, iteration %d, totals %+v", st.Status, st.Iteration, st.Totals)
	}
	// Workers' events carry their number and the run's totals so far.
	workers := map[int]bool{}
	for _, e := range f.events {
		if e.Kind == EventIterationStarted {
			workers[e.Worker] = true
		}
		if e.Kind == EventIterationEnded && (e.Totals == nil || e.Totals.Iterations < 1) {
			t.Errorf("iteration_ended without the run's totals: %+v", e.Totals)
		}
	}
	if !workers[1] || !workers[2] || !workers[3] || workers[0] {
		t.Errorf("iteration_started workers: %v", workers)
	}
}

func TestParallelHonoursDependencies(t *testing.T) {
	t.Parallel()
	tasks := ids("A", "B", "C")
	tasks[1].DependsOn = []string{"A"}
	tasks[2].DependsOn = []string{"B"}
	f := newParFixture(t, tasks...)
	f.agent.work = func(_ context.Context, id string, _ int) error {
		dep := map[string]string{"B": "A", "C": "B"}[id]
		if dep != "" && !f.plan.done(dep) {
			return fmt.Errorf("%s started before %s was done", id, dep)
		}
		return nil
	}
	if err := f.run(t.Context(), 3, Options{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"A": {"task_done"}, "B": {"task_done"}, "C": {"task_done"}}, f.store.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if f.agent.peak != 1 {
		t.Errorf("%d agents at once on a chain", f.agent.peak)
	}
}

func TestParallelConflictRerunsOnNewHead(t *testing.T) {
	t.Parallel()
	f := newParFixture(t, ids("A", "B")...)
	f.trees.conflict = func(branch string, n int) bool { return branch == TaskBranchPrefix+"B" && n == 1 }
	if err := f.run(t.Context(), 2, Options{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"A": {"task_done"}, "B": {"gate_failed", "task_done"}}, f.store.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	var conflict state.Record
	for _, r := range f.store.history {
		if r.Outcome == state.OutcomeGateFailed {
			conflict = r
		}
	}
	if !strings.Contains(conflict.Error, "merge conflict: B's work conflicts with the run branch in shared.txt; kept as ralph/conflict/B-1") || conflict.Commit != "" {
		t.Errorf("conflict record: %+v", conflict)
	}
	if !slices.Equal(f.trees.branches, []string{"ralph/conflict/B-1"}) || len(f.trees.trees) != 0 {
		t.Errorf("left: branches %v, worktrees %v", f.trees.branches, f.trees.trees)
	}
	if len(f.main.commits) != 2 || !f.plan.done("B") {
		t.Errorf("commits %v; B done %v", f.main.commits, f.plan.done("B"))
	}
	// The rerun started from the new head: a new worktree.
	if f.agent.calls["B"] != 2 {
		t.Errorf("B ran %d times", f.agent.calls["B"])
	}
}

func TestParallelFailedAttemptKeepsWorktreeForRetry(t *testing.T) {
	t.Parallel()
	f := newParFixture(t, ids("A")...)
	f.agent.work = func(_ context.Context, _ string, n int) error {
		if n == 1 {
			return errors.New("not yet")
		}
		return nil
	}
	if err := f.run(t.Context(), 2, Options{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"A": {"no_marker", "task_done"}}, f.store.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if f.agent.dirs[0] != f.agent.dirs[1] || len(f.trees.merged) != 1 {
		t.Errorf("attempts ran in %v; merged %v", f.agent.dirs, f.trees.merged)
	}
}

func TestParallelInterruptCleansUp(t *testing.T) {
	t.Parallel()
	f := newParFixture(t, ids("A", "B")...)
	ctx, cancel := context.WithCancel(t.Context())
	f.agent.work = func(ctx context.Context, _ string, _ int) error {
		f.agent.mu.Lock()
		both := f.agent.peak == 2
		f.agent.mu.Unlock()
		if both {
			cancel()
		}
		<-ctx.Done()
		return ctx.Err()
	}
	err := f.run(ctx, 2, Options{})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if diff := cmp.Diff(map[string][]string{"A": {"interrupted"}, "B": {"interrupted"}}, f.store.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(f.trees.trees) != 0 || len(f.trees.branches) != 0 || f.store.st.Status != state.StatusInterrupted {
		t.Errorf("left worktrees %v, branches %v; status %s", f.trees.trees, f.trees.branches, f.store.st.Status)
	}
}

func TestParallelRefusals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		opts Options
		want string
	}{
		{"agent ownership", Options{Ownership: task.OwnerAgent, Commit: true}, "needs runner ownership"},
		{"no commits", Options{}, "cannot run with --no-commit"},
	} {
		f := newParFixture(t, ids("A")...)
		deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Repo: f.main}
		err := RunParallel(t.Context(), tt.opts, deps, Parallel{Workers: 2, Worktrees: f.trees, Root: "/repo", Dir: "/repo/w"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// With --parallel too, a run whose only open task waits for an answer
// waits for it, spending nothing, and the task goes on with the answer.
func TestParallelWaitsForAnAnswer(t *testing.T) {
	t.Parallel()
	f := newParFixture(t, ids("A", "B")...)
	f.agent.answer = func(id string, n int) (agent.Result, bool) {
		if id == "A" && n == 1 {
			return question("v1 or v2?"), true
		}
		return agent.Result{}, false
	}
	s := NewSteering()
	opts := Options{Dir: "/repo", Commit: true, MaxAttempts: 3}
	deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Repo: f.main, Control: s,
		Emit: func(e Event) {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
			if e.Kind == EventWaiting && strings.HasPrefix(e.Message, "waiting for an answer: A") {
				s.Answer(Answer{Text: "v2", By: "test"})
			}
		}}
	err := RunParallel(t.Context(), opts, deps, Parallel{Workers: 2, Worktrees: f.trees, Root: "/repo", Dir: "/repo/.ralph/worktrees"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, id := range []string{"A", "B"} {
		if !f.plan.done(id) {
			t.Errorf("%s not done", id)
		}
	}
	if got := f.agent.calls["A"]; got != 2 {
		t.Errorf("A's agent ran %d times, want 2 (the question, then the work)", got)
	}
	if st := f.store.st; len(st.Questions) != 0 || st.Tasks["A"].Attempts != 0 {
		t.Errorf("questions %v, A's attempts %d; want none, 0", st.Questions, st.Tasks["A"].Attempts)
	}
}
