package loop

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// What happens when git refuses the agent's tree: a path git takes in no
// repository (.GIT/x, a .gitmodules link, GIT~1 under core.protectNTFS)
// keeps the accepted task from being committed, and every later commit
// with it. The task is held: marked open again, its work left in the
// tree, it is the next task this run and any later one works on
// (State.Held), and its next attempt is told what git said. Once git
// takes the tree the task is committed alone, under its own name: no
// other task's commit carries its work. Each refusal is an attempt
// (commit_refused) that never fails the task, whose files are still in
// the tree; max-attempts of them in a run stop the run (exit 1), the task
// open.

// refusal is git refusing paths of the tree (vcs.RefusedError).
type refusal interface {
	error
	RefusedPaths() []string
	Complaint() string
}

// asRefusal returns err's refusal, if it is one.
func asRefusal(err error) (refusal, bool) {
	var rf refusal
	if errors.As(err, &rf) {
		return rf, true
	}
	return nil, false
}

// refusalText is the history line's error of a refused commit, which the
// next attempt's prompt shows: the paths, git's words, what to do.
func refusalText(rf refusal) string {
	complaint := strings.Join(strings.Fields(strings.ReplaceAll(rf.Complaint(), "\n", " ⏎ ")), " ")
	return fmt.Sprintf("its checks passed, but git refused to commit %s (git said: %s); git takes such a path in no repository: "+
		"rename or remove it (keep what it holds under another name if the task needs it), then claim the task done again",
		strings.Join(rf.RefusedPaths(), ", "), complaint)
}

// holdRefused turns an accepted claim whose commit git refused into a
// held task (see the top of this file): c's outcome becomes
// commit_refused and no task is done. startTree is the tree the task
// started from, which its next claim's diff is read from again. It
// reports false, changing nothing, for any other commit failure.
func (r *runner) holdRefused(c *classified, t task.Task, commitErr error, startTree string) bool {
	rf, ok := asRefusal(commitErr)
	if !ok || len(c.doneIDs) == 0 {
		return false
	}
	held := t.ID
	if !slices.Contains(c.doneIDs, held) {
		held = c.doneIDs[0] // agent ownership: a task the agent chose
	}
	for _, id := range c.doneIDs {
		if err := r.deps.Plan.SetStatus(id, task.StatusOpen); err != nil {
			r.stopFor(err)
			r.warn("could not open %s again, whose commit git refused: %v", id, err)
		}
	}
	if startTree != "" {
		ts := r.st.Tasks[held]
		ts.StartTree = startTree
		r.st.Tasks[held] = ts
	}
	r.st.Held = held
	r.trailers = ""
	c.outcome, c.errText = state.OutcomeCommitRefused, refusalText(rf)
	c.doneIDs = nil
	return true
}

// refuseClaim holds the claimed task when the claim's look at the tree
// found git refusing paths in it: no commit could take the tree, so the
// claim is not accepted (c's outcome is commit_refused) and the task is
// held as holdRefused holds one whose commit failed so.
func (r *runner) refuseClaim(c *classified, t task.Task, ids []string, rf refusal) {
	held := t.ID
	if len(ids) > 0 && !slices.Contains(ids, held) {
		held = ids[0]
	}
	r.st.Held = held
	c.outcome, c.errText = state.OutcomeCommitRefused, refusalText(rf)
}

// refusedAttempt records a commit_refused attempt of the held task, and
// stops the run after max-attempts of them.
func (r *runner) refusedAttempt(t task.Task, it iteration) error {
	id := r.st.Held
	if id == "" {
		id = t.ID
	}
	ts := r.st.Tasks[id]
	ts.LastError = it.errText
	r.st.Tasks[id] = ts
	r.noteAttempt(id, attemptNote{Iteration: r.st.Iteration, Outcome: string(it.outcome), Error: it.errText})
	if r.refusals == nil {
		r.refusals = map[string]int{}
	}
	r.refusals[id]++
	if n := r.refusals[id]; n >= r.opts.MaxAttempts {
		return fmt.Errorf("%w: %d times in a row, git refused to commit the work of %s: %s; the task stays open and its work "+
			"in the working tree: rename or remove what git refuses, then run ralph again: it goes on with %s first",
			ErrCommitRefused, n, id, it.errText, id)
	}
	if err := r.save(); err != nil {
		return err
	}
	return r.checkStuck(it)
}

// heldTask is the held task when the run can work on it now: it comes
// before any other.
func (r *runner) heldTask() (task.Task, bool) {
	if r.st.Held == "" || r.parallel {
		return task.Task{}, false
	}
	t, ok := r.deps.Plan.Plan().Task(r.st.Held)
	if !ok || t.Status != task.StatusOpen || r.passOver(t) || (r.opts.Only != "" && t.ID != r.opts.Only) {
		return task.Task{}, false
	}
	return t, true
}

// holdReconciled holds the task whose commit reconcile found git
// refusing, and tells its next attempt why, as the prompt after a
// refused commit of this run's own would.
func (r *runner) holdReconciled(iteration int) {
	if r.held == "" {
		return
	}
	r.st.Held = r.held
	ts := r.st.Tasks[r.held]
	ts.LastError = r.heldWhy
	r.st.Tasks[r.held] = ts
	r.noteAttempt(r.held, attemptNote{Iteration: iteration, Outcome: string(state.OutcomeCommitRefused), Error: r.heldWhy})
}

// checkHeld settles, as a run starts, the task the last run held: gone
// from the plan or no longer open, it is held no more; a --task run of
// another task would commit its work under that task's name, and is
// refused.
func (r *runner) checkHeld() error {
	id := r.st.Held
	if id == "" {
		return nil
	}
	t, ok := r.deps.Plan.Plan().Task(id)
	if !ok || t.Status != task.StatusOpen {
		r.st.Held = ""
		return nil
	}
	if r.opts.Only != "" && r.opts.Only != id {
		return fmt.Errorf("%w: the work of %s waits uncommitted in the working tree (git refused it: %s); "+
			"run it first (ralph run --task %s), or %s's commit would carry it", ErrCommitRefused, id, r.st.Tasks[id].LastError, id, r.opts.Only)
	}
	return nil
}

// releaseHeld ends the hold once the held task is done (committed, or
// done without commits) or failed.
func (r *runner) releaseHeld(doneIDs []string) {
	if r.st.Held != "" && slices.Contains(doneIDs, r.st.Held) {
		r.st.Held = ""
	}
}
