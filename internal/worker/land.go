package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// ErrLanded is a task the run branch has done already: another worker
// landed it (its claim had run out and was taken over meanwhile). Its
// work is not landed a second time.
var ErrLanded = errors.New("the run branch has the task done already")

// ErrConflict is a task's work that no longer merges with the run branch:
// a task another worker landed meanwhile changed the same lines.
var ErrConflict = errors.New("the task's work conflicts with the run branch")

// Landing is how a task's result gets onto the run branch.
type Landing struct {
	Ledger *Ledger
	// Tree is the task's worktree; its branch TaskBranch, made from Base
	// (the run branch's head when the task started), holds the task's
	// commits.
	Tree       *vcs.Git
	TaskBranch string
	Base       string
	// Union are files (from the top, with slashes) merged by keeping both
	// sides' lines: the agents' progress log.
	Union []string
	// Report says what happens (a refused push, a retry).
	Report func(msg string)
	// Sleep waits between tries; nil: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Deadline gives up on a remote that refuses pushes this long.
	Deadline time.Duration
	// beforePush, in tests, runs between making the landing commit and
	// pushing it.
	beforePush func()
}

// Land puts the task's work onto the run branch on the remote as one
// commit, with the task marked done in the plan: the work (the task
// branch's changes since Base, the plan left out) is squash-merged onto
// the branch's current head, the plan there gets the task's mark, and the
// commit is pushed as a fast-forward. When another worker landed first,
// the push is refused and it starts again from the new head; when the
// remote refuses pushes, it backs off and tries again. It returns the
// landed commit, or ErrConflict.
func (l *Landing) Land(ctx context.Context, id string) (string, error) {
	msg, err := l.Tree.CommitMessage(ctx, "HEAD")
	if err != nil {
		return "", err
	}
	plan := l.Ledger.Plan
	// The work without the plan's change, so that the plan never
	// conflicts: the plan's mark is made afresh on the head it lands on.
	if err := l.Tree.CheckoutPath(ctx, l.Base, plan); err != nil {
		return "", err
	}
	if _, err := l.Tree.Commit(ctx, "ralph: "+id+" without its plan change"); err != nil {
		return "", err
	}
	sleep := l.Sleep
	if sleep == nil {
		sleep = loop.Sleep
	}
	wait := 100 * time.Millisecond
	var refusedSince time.Time
	for try := 1; ; try++ {
		head, err := l.Ledger.fetchHead(ctx)
		if err == nil {
			var commit string
			commit, err = l.onto(ctx, id, head, msg)
			if err == nil {
				if l.beforePush != nil {
					l.beforePush()
				}
				err = l.Ledger.Git.PushBranch(ctx, l.Ledger.Remote, l.Ledger.Branch, commit)
				if err == nil {
					return commit, nil
				}
			}
		}
		switch {
		case errors.Is(err, vcs.ErrStale):
			// Another worker landed first: again at once, on its result.
			// Of the pushes that race, one wins each round, so no wait
			// is needed for all to get through.
			l.report("%s: the run branch moved on meanwhile; landing again on its new head (try %d)", id, try+1)
			refusedSince = time.Time{}
			wait = 100 * time.Millisecond
			continue
		case errors.Is(err, ErrConflict), errors.Is(err, ErrLanded), ctx.Err() != nil:
			return "", err
		case errors.Is(err, vcs.ErrPushRejected), isFetchError(err):
			if refusedSince.IsZero() {
				refusedSince = time.Now()
			}
			if l.Deadline > 0 && time.Since(refusedSince) > l.Deadline {
				return "", fmt.Errorf("landing %s: the remote refused it for %s: %w", id, l.Deadline, err)
			}
			l.report("%s: push refused, retrying in %s: %v", id, wait.Round(time.Millisecond), err)
			if err := sleep(ctx, jitter(wait)); err != nil {
				return "", err
			}
			wait = min(wait*2, 10*time.Second)
			continue
		default:
			return "", err
		}
	}
}

// onto makes the landing commit on head: the work squash-merged, the plan
// marked.
func (l *Landing) onto(ctx context.Context, id, head, msg string) (string, error) {
	if err := l.Tree.ResetHard(ctx, head); err != nil {
		return "", err
	}
	conflicts, err := l.Tree.SquashMerge(ctx, l.TaskBranch, l.Union)
	if err != nil {
		return "", err
	}
	if len(conflicts) > 0 {
		return "", fmt.Errorf("%w in %s", ErrConflict, strings.Join(conflicts, ", "))
	}
	// The landing tree holds agents' commits: its plan must not lead out.
	f, err := task.LoadIn(l.Tree.Root, filepath.Join(l.Tree.Root, filepath.FromSlash(l.Ledger.Plan)), false)
	if err != nil {
		return "", err
	}
	if t, ok := f.Plan().Task(id); ok && t.Status == task.StatusDone {
		return "", fmt.Errorf("%s: %w", id, ErrLanded)
	}
	if err := f.SetStatus(id, task.StatusDone); err != nil {
		return "", err
	}
	commit, err := l.Tree.Commit(ctx, msg)
	if err != nil {
		return "", err
	}
	if commit == "" {
		return "", fmt.Errorf("landing %s: nothing to commit on %s", id, head)
	}
	return commit, nil
}

func (l *Landing) report(format string, args ...any) {
	if l.Report != nil {
		l.Report(fmt.Sprintf(format, args...))
	}
}

// fetchHead fetches the run branch and returns its head.
func (l *Ledger) fetchHead(ctx context.Context) (string, error) {
	if err := l.Git.Fetch(ctx, l.Remote, "+"+l.branchRef()+":"+l.trackingRef()); err != nil {
		return "", &fetchError{err}
	}
	return l.Git.ResolveCommit(ctx, l.trackingRef())
}

// fetchError is a fetch that failed: the remote out of reach, for a
// while maybe.
type fetchError struct{ err error }

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

func isFetchError(err error) bool {
	var fe *fetchError
	return errors.As(err, &fe)
}

// jitter spreads d by up to half again, so that workers refused together
// do not all come back at the same instant.
func jitter(d time.Duration) time.Duration { return d + rand.N(d/2+1) }
