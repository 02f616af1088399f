package loop

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// refusedTree is git refusing a path of the tree (vcs.RefusedError).
type refusedTree struct{}

func (refusedTree) Error() string {
	return "git add -A -v -- :(top): error: invalid path '.GIT/x'"
}
func (refusedTree) RefusedPaths() []string { return []string{".GIT/x"} }
func (refusedTree) Complaint() string      { return "error: invalid path '.GIT/x'" }

// TestRefusedCommitHoldsTheTask: a commit git refuses holds the task
// (commit_refused, open, no commit), its next attempt told what git said;
// once git takes the tree the task is committed alone, then the next one.
func TestRefusedCommitHoldsTheTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	f.repo = &memRepo{refuse: 1}
	f.agent.before = func(int) { f.repo.tree++ }
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:commit_refused", "A:task_done", "B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"feat: A - Task A", "feat: B - Task B"}, f.repo.commits); diff != "" {
		t.Errorf("commits (-want +got):\n%s", diff)
	}
	if p := f.agent.prompts[1]; !strings.Contains(p, "git refused to commit .GIT/x (git said: error: invalid path '.GIT/x')") {
		t.Errorf("the second prompt does not tell what git said:\n%s", p)
	}
	if f.store.st.Held != "" || f.store.st.Tasks["A"].Failed {
		t.Errorf("held %q, A failed %v after the run; want none, false", f.store.st.Held, f.store.st.Tasks["A"].Failed)
	}
}

// TestRefusedCommitsStopTheRun: max-attempts refusals stop the run
// (ErrCommitRefused), the task open and held, not failed.
func TestRefusedCommitsStopTheRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	f.opts.MaxAttempts = 2
	f.repo = &memRepo{refuse: 5}
	f.agent.before = func(int) { f.repo.tree++ }
	err := f.run(t)
	if err == nil || !strings.Contains(err.Error(), "git refused the work: 2 times in a row, git refused to commit the work of A") {
		t.Fatalf("run: %v", err)
	}
	if diff := cmp.Diff([]string{"A:commit_refused", "A:commit_refused"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if a, _ := f.plan.Plan().Task("A"); a.Status != task.StatusOpen {
		t.Errorf("A is %s, want open", a.Status)
	}
	if st := f.store.st; st.Held != "A" || st.Tasks["A"].Failed || st.Status != state.StatusFailed {
		t.Errorf("held %q, A failed %v, status %s; want A, false, failed", st.Held, st.Tasks["A"].Failed, st.Status)
	}
}

// TestAcceptedRefusedOnRerunIsHeld: the last run accepted A but could
// not commit it; git refuses the tree when this run tries. A is held and
// goes first, told what git said, instead of being dropped and its work
// committed under B's name.
func TestAcceptedRefusedOnRerunIsHeld(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	f.repo = &memRepo{tree: 1, refuse: 1}
	f.agent.before = func(int) { f.repo.tree++ }
	f.store.st = state.State{RunID: "dead", Status: state.StatusFailed, Message: "accepted but not committed",
		Iteration: 1, CurrentTask: "A", Accepting: []string{"A"}}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"feat: A - Task A", "feat: B - Task B"}, f.repo.commits); diff != "" {
		t.Errorf("commits (-want +got):\n%s", diff)
	}
	if p := f.agent.prompts[0]; !strings.Contains(p, "Task A") || !strings.Contains(p, "git refused to commit .GIT/x") {
		t.Errorf("the first prompt is not A's told what git said:\n%s", p)
	}
	if len(f.warns) == 0 || !strings.Contains(f.warns[0], "git refuses to commit A (.GIT/x): it is open again and goes first") {
		t.Errorf("warnings %q", f.warns)
	}
}
