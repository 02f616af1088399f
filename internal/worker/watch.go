package worker

import (
	"context"
	"maps"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/loop"
)

// Looks of a worker waiting on other workers: the first soon after its
// fetch, then less and less often, never further apart than lookMax, so
// that a landing is seen within about a second.
const (
	lookFirst = 200 * time.Millisecond
	lookMax   = time.Second
)

// Changed asks the remote, without fetching, whether the run branch or
// the plan's claims differ from what v was read from: a task landed, a
// claim made, renewed, given back or failed.
func (l *Ledger) Changed(ctx context.Context, v View) (bool, error) {
	claims := ClaimsPrefix + l.key() + "/"
	refs, _, err := l.Git.RemoteRefs(ctx, l.Remote, l.branchRef(), claims+"*")
	if err != nil {
		return false, &fetchError{err}
	}
	// ls-remote matches the patterns against the refs' tails: keep only
	// the refs themselves.
	maps.DeleteFunc(refs, func(ref, _ string) bool { return ref != l.branchRef() && !strings.HasPrefix(ref, claims) })
	return !maps.Equal(refs, v.Refs), nil
}

// await waits, with nothing to claim in v, until something that could
// free a task happens: the remote's run branch or claims change (a
// dependency landed, a claim was given back or failed), or a lease of v
// runs out. It looks with ls-remote, cheap next to a fetch, lookFirst
// after the fetch that read v and then backing off to every lookMax. A
// look that fails returns too: the fetch that follows says why.
func (w *Worker) await(ctx context.Context, v View) error {
	expires, leased := firstExpiry(v, w.Now())
	wait := lookFirst
	for {
		d := wait
		if leased {
			d = min(d, max(expires.Sub(w.Now()), 0))
		}
		if w.Sleep(ctx, d) != nil {
			return loop.ErrInterrupted
		}
		if leased && !w.Now().Before(expires) {
			return nil
		}
		if changed, err := w.Ledger.Changed(ctx, v); changed || err != nil {
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
