package worker

import (
	"context"
	"time"

	"github.com/ralph-loop/ralph/internal/loop"
)

// Looks at the run branch of a worker waiting on other workers: the
// first soon after its fetch, then less and less often, never further
// apart than lookMax, so that a landing is seen within about a second.
const (
	lookFirst = 200 * time.Millisecond
	lookMax   = time.Second
)

// Moved asks the remote, without fetching, whether the run branch is
// somewhere else than head: a task landed.
func (l *Ledger) Moved(ctx context.Context, head string) (bool, error) {
	commit, ok, err := l.Git.RemoteBranch(ctx, l.Remote, l.Branch)
	if err != nil {
		return false, &fetchError{err}
	}
	return !ok || commit != head, nil
}

// await waits, with nothing to claim in v, until something may have
// freed a task: the run branch moved on (a dependency landed), a lease
// of v ran out, or refetch passed, after which the worker fetches the
// claims again (one given back, or failed). It looks at the branch with
// ls-remote, cheap next to a fetch, lookFirst after the fetch that read
// v and then backing off to every lookMax. A look that fails returns
// too: the fetch that follows says why.
func (w *Worker) await(ctx context.Context, v View, refetch time.Duration) error {
	now := w.Now()
	until := now.Add(refetch)
	if expires, ok := firstExpiry(v, now); ok && expires.Before(until) {
		until = expires
	}
	wait := lookFirst
	for {
		// A look that would come a moment before the fetch is left out:
		// a short lease fetches about as often as it would look.
		if left := until.Sub(w.Now()); left < wait+lookFirst {
			if w.Sleep(ctx, max(left, 0)) != nil {
				return loop.ErrInterrupted
			}
			return nil
		}
		if w.Sleep(ctx, wait) != nil {
			return loop.ErrInterrupted
		}
		if moved, err := w.Ledger.Moved(ctx, v.Head); moved || err != nil {
			return nil //nolint:nilerr // the fetch after this reports a remote out of reach
		}
		wait = min(wait*2, lookMax)
	}
}

// firstExpiry is when the first working claim of v that holds at now
// runs out.
func firstExpiry(v View, now time.Time) (time.Time, bool) {
	var first time.Time
	for _, c := range v.Claims {
		if c.State == StateWorking && c.Expires.After(now) && (first.IsZero() || c.Expires.Before(first)) {
			first = c.Expires
		}
	}
	return first, !first.IsZero()
}
