package loop

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// What a run killed at any instant can leave half done, and how the next
// run settles it before it starts (recoverCrashed). A task is accepted
// in this order: its checks pass; state.json says the task is being
// accepted (Accepting, written and synced); the plan marks it done; the
// commit records its work and the plan; its history line is written;
// the state drops Accepting. So after a crash:
//
//   - a task in Accepting passed its checks: it is marked done in the
//     plan if the plan does not say so yet, and committed unless the last
//     commit's plan already has it done (the commit was made);
//   - in runner ownership, the task of the unfinished iteration that the
//     plan shows done although the run was not accepting it was marked by
//     someone else (the agent, before the run could put the mark back):
//     it is opened again and runs again;
//   - anything else the dead iteration left in the working tree is its
//     unfinished work, which the next iteration of its task goes on with
//     and commits with it (the dirty-tree check takes it along).
//
// No task is done without its work committed, and none is committed
// twice: the commit of an accepted task is made once, by the run that
// accepted it or by the next one, never by both.

// reconciled is what reconcile did.
type reconciled struct {
	// finished holds the accepted tasks reconcile finished, with their
	// commit ("" when none was made or needed).
	finished map[string]string
	notes    []string
	// held is the accepted task whose commit git refused, heldWhy what
	// git said (held.go).
	held, heldWhy string
}

// note is what reconcile did, for the run's warning; "" for nothing.
func (rc reconciled) note() string {
	if len(rc.notes) == 0 {
		return ""
	}
	return "; " + strings.Join(rc.notes, "; ")
}

// committedFiles reads files as a commit has them (vcs.Git, vcs.Sapling).
type committedFiles interface {
	Dir() string
	Show(ctx context.Context, rev, path string) ([]byte, error)
}

// headCommit names the current commit (vcs.Git).
type headCommit interface {
	Head(ctx context.Context) (string, error)
}

// reconcile settles the dead run prev's half-done acceptance and its
// unfinished iterations' tasks (see the top of this file).
func (r *runner) reconcile(ctx context.Context, prev state.State, unfinished []string) (reconciled, error) {
	rc := reconciled{finished: map[string]string{}}
	plan := r.deps.Plan
	var accepted []string
	for _, id := range prev.Accepting {
		t, ok := plan.Plan().Task(id)
		if !ok {
			rc.notes = append(rc.notes, fmt.Sprintf("%s, which it had accepted, is no longer in the plan", id))
			continue
		}
		if t.Status != task.StatusDone {
			if err := plan.SetStatus(id, task.StatusDone); err != nil {
				rc.notes = append(rc.notes, fmt.Sprintf("could not mark %s done, which it had accepted: %v", id, err))
				continue
			}
			rc.notes = append(rc.notes, fmt.Sprintf("marked %s done (its checks had passed)", id))
		}
		accepted = append(accepted, id)
		rc.finished[id] = ""
	}
	if len(accepted) > 0 && r.opts.Commit && r.deps.Repo != nil {
		hash, made, err := r.commitAccepted(ctx, accepted)
		switch rf, refused := asRefusal(err); {
		case err == nil:
			for _, id := range accepted {
				rc.finished[id] = hash
			}
			if made {
				rc.notes = append(rc.notes, fmt.Sprintf("committed %s (%s)", strings.Join(accepted, ", "), short(hash)))
			}
		case refused:
			// Held, as if this run's own commit had been refused: open
			// again and first in line, never committed under another
			// task's name (held.go).
			for _, id := range accepted {
				delete(rc.finished, id)
				if err := plan.SetStatus(id, task.StatusOpen); err != nil {
					return rc, fmt.Errorf("%w: git refused to commit %s (%v), and it could not be opened again: %w",
						ErrNotCommitted, strings.Join(accepted, ", "), rf.RefusedPaths(), err)
				}
			}
			rc.held, rc.heldWhy = accepted[0], refusalText(rf)
			rc.notes = append(rc.notes, fmt.Sprintf("git refuses to commit %s (%s): it is open again and goes first, told what git says",
				strings.Join(accepted, ", "), strings.Join(rf.RefusedPaths(), ", ")))
		default:
			// Going on would put its work in the next task's commit.
			return rc, fmt.Errorf("%w: %s passed its checks in the last run, but git still cannot commit it: %w; "+
				"fix what git says and run ralph again: it commits %s first", ErrNotCommitted, strings.Join(accepted, ", "),
				err, strings.Join(accepted, ", "))
		}
	}
	if r.opts.Ownership != task.OwnerRunner || r.parallel {
		// A --parallel worker marks the plan once its merge is committed,
		// without a word in state.json: a mark may well be ralph's.
		return rc, nil
	}
	for _, id := range unfinished {
		if slices.Contains(prev.Accepting, id) {
			continue
		}
		if t, ok := plan.Plan().Task(id); !ok || t.Status != task.StatusDone {
			continue
		}
		if err := plan.SetStatus(id, task.StatusOpen); err != nil {
			rc.notes = append(rc.notes, fmt.Sprintf("could not open %s again: %v", id, err))
			continue
		}
		rc.notes = append(rc.notes, fmt.Sprintf("opened %s again: the plan said it was done, but ralph had not accepted it", id))
	}
	return rc, nil
}

// commitAccepted commits the accepted tasks' work, unless the current
// commit has them done already. It returns the commit that holds them
// ("" when it cannot tell), whether it made it, and the error of a
// commit that failed.
func (r *runner) commitAccepted(ctx context.Context, ids []string) (hash string, made bool, err error) {
	if r.committedDone(ctx, ids) {
		if h, ok := r.deps.Repo.(headCommit); ok {
			hash, _ = h.Head(ctx)
		}
		return hash, false, nil
	}
	t, _ := r.deps.Plan.Plan().Task(ids[0])
	msg, err := commitMessage(r.opts.CommitTemplate, t)
	if err != nil {
		return "", false, err
	}
	hash, err = r.commitRepo(ctx, msg)
	return hash, hash != "", err
}

// committedDone reports whether the current commit's plan has every one
// of ids done.
func (r *runner) committedDone(ctx context.Context, ids []string) bool {
	repo, ok := r.deps.Repo.(committedFiles)
	if !ok {
		return false
	}
	p := r.deps.Plan.Plan()
	path := p.Path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	root := repo.Dir()
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) {
		return false
	}
	data, err := repo.Show(ctx, "HEAD", rel)
	if err != nil {
		return false
	}
	head, err := task.ParseAs(p.Format, p.Path, data)
	if err != nil {
		return false
	}
	for _, id := range ids {
		if t, ok := head.Task(id); !ok || t.Status != task.StatusDone {
			return false
		}
	}
	return true
}
