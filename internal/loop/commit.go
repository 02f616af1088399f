package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ralph-loop/ralph/internal/task"
)

// seeTree gives the repository's Changes its baseline, the tree the agent
// starts from, unless the last iteration's end left one: one look at the
// tree per iteration, taken after it.
func (r *runner) seeTree(ctx context.Context) {
	if r.deps.Repo == nil || r.treeSeen {
		return
	}
	_, err := r.deps.Repo.Changes(ctx)
	r.treeSeen = err == nil
}

// settle looks at what the iteration changed in the working tree, once,
// after the runner's own edits of the plan, and commits it. It returns
// the number of files the agent changed, the new commit's hash, and the
// error of a commit that failed.
//
// The look and the commit run side by side (with agent ownership the
// question whether there is anything to commit runs beside the look): the
// look compares the tree with the last one through an index of its own,
// which the commit does not touch, and a commit does not change the
// tree's content.
func (r *runner) settle(ctx context.Context, t task.Task, c classified, planEdited bool) (files int, hash string, commitErr error) {
	if r.deps.Repo == nil {
		return 0, "", nil
	}
	seen := r.treeSeen
	var changes []string
	var err error
	var looked sync.WaitGroup
	if c.look != nil {
		changes = c.look.changes
	} else {
		looked.Go(func() { changes, err = r.deps.Repo.Changes(ctx) })
	}
	count := func() int {
		looked.Wait()
		if err != nil || !seen {
			return 0
		}
		return r.agentChanges(changes, planEdited, c.restored)
	}
	switch {
	case !r.opts.Commit:
		files = count()
	case r.opts.Ownership == task.OwnerRunner:
		if len(c.doneIDs) > 0 {
			hash, commitErr = r.commit(ctx, t, c.doneIDs)
		}
		files = count()
	default:
		// Agent ownership: commit what the agent left uncommitted, if
		// anything.
		dirty, derr := r.dirtyAtSettle(ctx, c.look)
		files = count()
		if (derr != nil || dirty) && (len(c.doneIDs) > 0 || files > 0) {
			hash, commitErr = r.commit(ctx, t, c.doneIDs)
		}
	}
	// The tree as it is now is the next iteration's baseline, unless the
	// look failed or a failed commit's hook may have changed files (a
	// formatter): they are not the next agent's work.
	r.treeSeen = err == nil && commitErr == nil
	return files, hash, commitErr
}

// dirtyAtSettle reports whether anything is left to commit. The answer
// the claim's look got beside its diff (readClaim) still holds when
// nothing but ralph's reads ran since: the look is the iteration's
// (verify drops it once a reviewer ran or files were put back), and the
// runner has not written the plan (an untick, the plan's log).
func (r *runner) dirtyAtSettle(ctx context.Context, look *claim) (bool, error) {
	if look != nil && look.dirty != nil {
		if n, ok := r.planWrites(); ok && n == look.dirty.planWrites {
			return look.dirty.dirty, nil
		}
	}
	return r.deps.Repo.Dirty(ctx)
}

// planWrites counts the runner's writes of the plan file, when the plan
// keeps count (task.File).
func (r *runner) planWrites() (uint64, bool) {
	w, ok := r.deps.Plan.(interface{ Writes() uint64 })
	if !ok {
		return 0, false
	}
	return w.Writes(), true
}

// agentChanges counts the changed files that are the agent's: the plan
// only when the agent edited it (the runner marks tasks and logs
// iterations in it too), and then also when the runner put it back.
func (r *runner) agentChanges(changes []string, planEdited, restored bool) int {
	plan := r.deps.Plan.Plan().Path
	n, planChanged := 0, false
	for _, p := range changes {
		if samePath(p, plan) {
			planChanged = true
			continue
		}
		n++
	}
	if planEdited && (planChanged || restored) {
		n++
	}
	return n
}

// samePath reports whether two absolute paths name the same file, one of
// them perhaps through a symbolic link (git names files from the real top
// of the tree).
func samePath(a, b string) bool {
	if a == b {
		return true
	}
	if filepath.Base(a) != filepath.Base(b) {
		return false
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// commit records the iteration's changes, one commit per accepted task. It
// returns the new commit's hash, "" when nothing changed, or the error of
// a commit that failed. The caller says what a failure means: an accepted
// task's acceptance waits for its commit (iterate), an iteration's work in
// progress stays in the tree for the next commit.
func (r *runner) commit(ctx context.Context, t task.Task, doneIDs []string) (hash string, err error) {
	subject := t
	if len(doneIDs) > 0 {
		if dt, ok := r.deps.Plan.Plan().Task(doneIDs[0]); ok {
			subject = dt
		}
	}
	msg, err := commitMessage(r.opts.CommitTemplate, subject)
	if err != nil {
		return "", err
	}
	if len(doneIDs) == 0 {
		msg = fmt.Sprintf("chore: ralph iteration %d (%s, in progress)", r.st.Iteration, t.ID)
	} else {
		msg = withTrailers(msg, r.trailers)
	}
	hash, err = r.commitRepo(ctx, msg)
	if err != nil {
		if len(doneIDs) == 0 {
			r.warn("commit failed; the changes stay uncommitted for the next commit: %v", err)
		}
		return "", err
	}
	if hash == "" && len(doneIDs) > 0 && r.opts.Ownership == task.OwnerRunner {
		// In agent ownership the agent may well have committed itself.
		r.warn("nothing to commit for %s: no file changed, the plan file included", subject.ID)
	}
	return hash, nil
}
