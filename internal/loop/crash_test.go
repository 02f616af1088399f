package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// TestCrashedRunIsRecorded: a state.json that says the last run is live,
// found by a run that holds the lock, is a run that died mid-iteration;
// its unfinished iteration gets its interrupted line, once, with the times
// its files show, before the new run starts.
func TestCrashedRunIsRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	f.opts.RunID = "new-run"
	started := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	f.store.st = state.State{RunID: "dead-run", Status: state.StatusRunning, Agent: "claude", Model: "opus",
		Iteration: 2, CurrentTask: "B", PID: 4242, UpdatedAt: started}
	f.store.history = []state.Record{{RunID: "dead-run", Iteration: 1, TaskID: "A", Outcome: state.OutcomeNoMarker}}
	promptPath, outPath, _ := f.store.IterationFiles("dead-run", 2)
	for path, at := range map[string]time.Time{promptPath: started, outPath: started.Add(90 * time.Second)} {
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	got := f.store.history[1]
	want := state.Record{RunID: "dead-run", Iteration: 2, TaskID: "B", Attempt: 1, Agent: "claude", Model: "opus",
		StartedAt: started, EndedAt: started.Add(90 * time.Second), DurationMS: 90_000, ExitCode: -1,
		Outcome: state.OutcomeInterrupted, Error: got.Error}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the dead run's line (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Error, "stopped unexpectedly") || !strings.Contains(got.Error, "4242") {
		t.Errorf("error %q: want it to say ralph stopped unexpectedly, with its pid", got.Error)
	}
	if diff := cmp.Diff([]string{"A:no_marker", "B:interrupted", "A:task_done", "B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(f.warns) == 0 || !strings.Contains(f.warns[0], "the last run (dead-run) stopped unexpectedly during iteration 2 (task B)") {
		t.Errorf("warnings %q: want the dead run reported", f.warns)
	}
	if f.store.st.RunID != "new-run" {
		t.Errorf("run id %q, want the one given", f.store.st.RunID)
	}
}

func TestCrashedRunRecordedOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		prev state.State
		warn string // "" for none
	}{
		{"ended properly", state.State{RunID: "r", Status: state.StatusInterrupted, Iteration: 1, CurrentTask: "A"}, ""},
		{"died after its line", state.State{RunID: "r", Status: state.StatusWaiting, Iteration: 1, CurrentTask: "A"},
			"the last run (r) stopped unexpectedly after iteration 1"},
		{"died before an iteration", state.State{RunID: "r", Status: state.StatusRunning},
			"the last run (r) stopped unexpectedly before its first iteration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []string{"A"}, done())
			f.store.st = tt.prev
			f.store.history = []state.Record{{RunID: "r", Iteration: 1, TaskID: "A", Outcome: state.OutcomeInterrupted}}
			if err := f.run(t); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"A:interrupted", "A:task_done"}, f.outcomes()); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			var warn string
			if len(f.warns) > 0 {
				warn = f.warns[0]
			}
			if warn != tt.warn {
				t.Errorf("warning %q, want %q", warn, tt.warn)
			}
		})
	}
}

// TestCrashedAcceptanceFinished: a run that died while accepting a task
// (its checks had passed; the plan mark, the commit or the history line
// missing) leaves it to the next run, which marks it done, commits its
// work once and records the iteration as task_done, without running the
// agent on it again.
func TestCrashedAcceptanceFinished(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	f.repo = &memRepo{tree: 1} // the dead iteration's work, uncommitted
	f.agent.before = func(int) { f.repo.tree++ }
	f.store.st = state.State{RunID: "dead", Status: state.StatusRunning, Iteration: 1, CurrentTask: "A",
		Accepting: []string{"A"}}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:task_done", "B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if got := f.store.history[0]; got.RunID != "dead" || got.Commit != "c1" || !strings.Contains(got.Error, "marked it done and committed it") {
		t.Errorf("the dead iteration's line: %+v", got)
	}
	if diff := cmp.Diff([]string{"feat: A - Task A", "feat: B - Task B"}, f.repo.commits); diff != "" {
		t.Errorf("commits (-want +got):\n%s", diff)
	}
	if f.agent.calls != 1 {
		t.Errorf("the agent ran %d times, want once (for B)", f.agent.calls)
	}
	const want = "the last run (dead) stopped unexpectedly during iteration 1 (task A, which it had accepted: finished); " +
		"marked A done (its checks had passed); committed A (c1)"
	if len(f.warns) == 0 || f.warns[0] != want {
		t.Errorf("warnings %q, want first %q", f.warns, want)
	}
	if f.store.st.Accepting != nil {
		t.Errorf("accepting %v after the run, want none", f.store.st.Accepting)
	}
}

// TestCrashedMarkNotRalphs: in runner ownership, a task the plan shows
// done after a run died during its iteration, which the run was not
// accepting, was marked by someone else (the agent, before the run could
// put the mark back): it is opened again, and runs again.
func TestCrashedMarkNotRalphs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	f.plan.p.Tasks[0].Status = task.StatusDone
	f.store.st = state.State{RunID: "dead", Status: state.StatusRunning, Iteration: 1, CurrentTask: "A"}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:interrupted", "A:task_done", "B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(f.warns) == 0 || !strings.Contains(f.warns[0], "opened A again: the plan said it was done, but ralph had not accepted it") {
		t.Errorf("warnings %q", f.warns)
	}
}

// TestFailedAcceptanceFinished: a run that failed inside an acceptance
// (its history line could not be written: a full disk) says so in
// state.json, and the next run finishes it as after a crash.
func TestFailedAcceptanceFinished(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.repo = &memRepo{tree: 1}
	f.store.st = state.State{RunID: "dead", Status: state.StatusFailed, Message: "append history: no space left on device",
		Iteration: 1, CurrentTask: "A", Accepting: []string{"A"}}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if got := f.store.history[0]; !strings.Contains(got.Error, "ralph failed while it finished this task (its checks had passed) (append history: no space left on device)") {
		t.Errorf("the failed iteration's line: %+v", got)
	}
	if f.agent.calls != 0 {
		t.Errorf("the agent ran %d times, want none", f.agent.calls)
	}
	if len(f.warns) == 0 || !strings.HasPrefix(f.warns[0], "the last run (dead) failed (append history: no space left on device) during iteration 1 (task A, which it had accepted: finished)") {
		t.Errorf("warnings %q", f.warns)
	}
}

// A run that fails inside an acceptance keeps its task in state.json.
func TestFailInsideAcceptanceKeepsTheTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.repo = &memRepo{tree: 1}
	f.store.failAppend = errors.New("no space left on device")
	if err := f.run(t); err == nil {
		t.Fatal("the run did not fail")
	}
	if st := f.store.st; st.Status != state.StatusFailed || st.CurrentTask != "A" || !slices.Equal(st.Accepting, []string{"A"}) {
		t.Errorf("state %s, current %q, accepting %v; want failed, A, [A]", st.Status, st.CurrentTask, st.Accepting)
	}
}

// TestAcceptingRecordedBeforeTheMark: state.json names the task being
// accepted before the plan marks it, and no longer once its history line
// is written.
func TestAcceptingRecordedBeforeTheMark(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	var atMark []string
	f.plan.onSet = func(id string, st task.Status) {
		if st == task.StatusDone {
			atMark = f.store.st.Accepting
		}
	}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A"}, atMark); diff != "" {
		t.Errorf("accepting in the saved state when the plan was marked (-want +got):\n%s", diff)
	}
	if f.store.st.Accepting != nil {
		t.Errorf("accepting %v after the run, want none", f.store.st.Accepting)
	}
}

// acceptStore is a memStore that records acceptances in a file of their
// own, as state.Store does; fits false is ids too long for its name.
type acceptStore struct {
	*memStore
	fits bool

	mu             sync.Mutex
	live           []string // the record under way
	savedAccepting int      // state.json saves that named tasks being accepted
	dropped        int
}

func (s *acceptStore) Accepting(_ string, ids []string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.fits {
		return false, nil
	}
	s.live = ids
	return true, nil
}

func (s *acceptStore) Accepted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live = nil
}

func (s *acceptStore) DropAccepting() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropped++
	return nil
}

func (s *acceptStore) SaveState(st state.State) error {
	s.mu.Lock()
	if len(st.Accepting) > 0 {
		s.savedAccepting++
	}
	s.mu.Unlock()
	return s.memStore.SaveState(st)
}

// TestAcceptingRecordOfItsOwn: a store that records an acceptance in a
// file of its own has it before the plan marks the task, and without a
// state.json save for it; the record goes with the history line, and a
// run drops those the last one left. Ids that do not fit there go to
// state.json as before.
func TestAcceptingRecordOfItsOwn(t *testing.T) {
	t.Parallel()
	for _, fits := range []bool{true, false} {
		t.Run(fmt.Sprintf("fits=%v", fits), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []string{"A"}, done())
			store := &acceptStore{memStore: f.store, fits: fits}
			var atMark []string
			f.plan.onSet = func(id string, st task.Status) {
				if st == task.StatusDone {
					store.mu.Lock()
					atMark = store.live
					store.mu.Unlock()
				}
			}
			deps := f.deps(nil)
			deps.Store = store
			if err := Run(t.Context(), f.opts, deps); err != nil {
				t.Fatal(err)
			}
			if got := f.outcomes(); !slices.Equal(got, []string{"A:task_done"}) {
				t.Fatalf("outcomes %v", got)
			}
			want, wantSaved := []string{"A"}, 0
			if !fits {
				want, wantSaved = nil, 1
			}
			if diff := cmp.Diff(want, atMark); diff != "" {
				t.Errorf("the record when the plan was marked (-want +got):\n%s", diff)
			}
			if store.savedAccepting != wantSaved {
				t.Errorf("%d state.json saves named a task being accepted, want %d", store.savedAccepting, wantSaved)
			}
			if store.live != nil || store.st.Accepting != nil {
				t.Errorf("after the run: record %v, state %v; want none", store.live, store.st.Accepting)
			}
			if store.dropped != 1 {
				t.Errorf("DropAccepting called %d times, want once, at the start", store.dropped)
			}
		})
	}
}

// committedRepo is a memRepo whose last commit's plan is plan.
type committedRepo struct {
	*memRepo
	plan string
}

func (committedRepo) Dir() string { return "/p" }
func (c committedRepo) Show(_ context.Context, rev, path string) ([]byte, error) {
	if rev != "HEAD" || path != "prd.json" {
		return nil, fmt.Errorf("no %s:%s", rev, path)
	}
	return []byte(c.plan), nil
}
func (committedRepo) Head(context.Context) (string, error) { return "abc1234def", nil }

// TestCrashedAfterTheCommit: a run that died after committing the task
// it was accepting, before its history line: the commit is not made
// again, and the line names it.
func TestCrashedAfterTheCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.plan.p.Tasks[0].Status = task.StatusDone
	repo := committedRepo{memRepo: &memRepo{tree: 1, committed: 1},
		plan: `{"userStories": [{"id": "A", "title": "Task A", "passes": true}]}`}
	f.store.st = state.State{RunID: "dead", Status: state.StatusRunning, Iteration: 1, CurrentTask: "A",
		Accepting: []string{"A"}}
	deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Repo: repo, Now: f.clock.Now, Sleep: f.clock.Sleep,
		Emit: func(e Event) {
			if e.Kind == EventWarning {
				f.warns = append(f.warns, e.Message)
			}
		}}
	if err := Run(t.Context(), f.opts, deps); err != nil {
		t.Fatal(err)
	}
	if len(repo.commits) != 0 {
		t.Errorf("commits %q, want none: the dead run made it", repo.commits)
	}
	if got := f.store.history; len(got) != 1 || got[0].Outcome != state.OutcomeTaskDone || got[0].Commit != "abc1234def" {
		t.Errorf("history %+v, want the dead iteration's task_done line naming the commit", got)
	}
	if f.agent.calls != 0 {
		t.Errorf("the agent ran %d times, want none", f.agent.calls)
	}
	const want = "the last run (dead) stopped unexpectedly during iteration 1 (task A, which it had accepted: finished)"
	if len(f.warns) == 0 || f.warns[0] != want {
		t.Errorf("warnings %q, want first %q", f.warns, want)
	}
}
