package worker

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// Ledger is one plan's shared state on a remote: the run branch, whose
// plan file says which tasks are done, and the claims.
type Ledger struct {
	Git *vcs.Git
	// Remote is the remote's name, Branch the run branch there.
	Remote, Branch string
	// Plan is the plan file's path from the top of the repository, with
	// slashes.
	Plan string
}

// View is the ledger as one fetch saw it.
type View struct {
	// Head is the run branch's commit on the remote.
	Head string
	// Plan is the plan as Head has it.
	Plan *task.Plan
	// Claims are the claims by task id; a claim ref that does not read is
	// left out.
	Claims map[string]Claim
}

func (l *Ledger) key() string { return PlanKey(l.Branch, l.Plan) }

// ClaimRef is the remote ref of a task's claim.
func (l *Ledger) ClaimRef(id string) string { return ClaimsPrefix + l.key() + "/" + refPart(id) }

// seenPrefix is where fetched claims are kept in the local repository.
func (l *Ledger) seenPrefix() string {
	return "refs/ralph/seen/" + refPart(l.Remote) + "/" + l.key() + "/"
}

// branchRef is the run branch's ref on the remote.
func (l *Ledger) branchRef() string { return "refs/heads/" + l.Branch }

// trackingRef is the run branch's remote-tracking ref.
func (l *Ledger) trackingRef() string { return "refs/remotes/" + l.Remote + "/" + l.Branch }

// Fetch brings the run branch and the claims from the remote and reads
// them.
func (l *Ledger) Fetch(ctx context.Context) (View, error) {
	err := l.Git.Fetch(ctx, l.Remote,
		"+"+l.branchRef()+":"+l.trackingRef(),
		"+"+ClaimsPrefix+l.key()+"/*:"+l.seenPrefix()+"*")
	if err != nil {
		return View{}, &fetchError{fmt.Errorf("fetching %s from %s: %w", l.Branch, l.Remote, err)}
	}
	return l.read(ctx)
}

// read reads what the last fetch brought.
func (l *Ledger) read(ctx context.Context) (View, error) {
	head, err := l.Git.ResolveCommit(ctx, l.trackingRef())
	if err != nil {
		return View{}, err
	}
	data, err := l.Git.Show(ctx, head, l.Plan)
	if err != nil {
		return View{}, fmt.Errorf("%s has no %s: %w", l.Branch, l.Plan, err)
	}
	p, err := task.Parse(path.Base(l.Plan), data)
	if err != nil {
		return View{}, fmt.Errorf("%s at %s: %w", l.Plan, head, err)
	}
	v := View{Head: head, Plan: p, Claims: map[string]Claim{}}
	refs, err := l.Git.Refs(ctx, l.seenPrefix())
	if err != nil {
		return View{}, err
	}
	for _, r := range refs {
		c, err := decodeClaim(r.Subject)
		if err != nil {
			continue
		}
		c.Ref = ClaimsPrefix + l.key() + "/" + strings.TrimPrefix(r.Name, l.seenPrefix())
		c.Object = r.Object
		v.Claims[c.Task] = c
	}
	return v, nil
}

// MakeBranch makes the run branch on the remote when it has none: from
// the remote's branch from, or from its default branch (what its HEAD
// names) when from is "" or a branch it does not have. The push creating
// it succeeds only while the branch does not exist (a compare-and-swap
// on the remote, as for claims), so of workers starting together on a
// fresh plan one makes it and the others find it made. made says whether
// this call made it, and base which branch it was made from; a branch
// that exists is left as it is (made false, nil).
func (l *Ledger) MakeBranch(ctx context.Context, from string) (made bool, base string, err error) {
	patterns := []string{"HEAD", l.branchRef()}
	if from != "" {
		patterns = append(patterns, "refs/heads/"+from)
	}
	refs, head, err := l.Git.RemoteRefs(ctx, l.Remote, patterns...)
	if err != nil {
		return false, "", &fetchError{fmt.Errorf("asking %s for %s: %w", l.Remote, l.Branch, err)}
	}
	if _, ok := refs[l.branchRef()]; ok {
		return false, "", nil
	}
	base = head
	if _, ok := refs["refs/heads/"+from]; ok && from != "" {
		base = from
	}
	if base == "" {
		return false, "", fmt.Errorf("%s has no branch %s, nor a default branch to make it from: push one", l.Remote, l.Branch)
	}
	tracking := "refs/remotes/" + l.Remote + "/" + base
	if err := l.Git.Fetch(ctx, l.Remote, "+refs/heads/"+base+":"+tracking); err != nil {
		return false, base, fmt.Errorf("fetching %s from %s to make %s from it: %w", base, l.Remote, l.Branch, err)
	}
	commit, err := l.Git.ResolveCommit(ctx, tracking)
	if err != nil {
		return false, base, err
	}
	made, err = l.Git.CreateRef(ctx, l.Remote, l.branchRef(), commit)
	switch {
	case errors.Is(err, vcs.ErrStale):
		return false, base, nil // another worker made it first, and landed on it
	case err != nil:
		return false, base, fmt.Errorf("making %s on %s from %s: %w", l.Branch, l.Remote, base, err)
	}
	return made, base, nil
}

// ErrTaken is a claim another worker got first.
var ErrTaken = errors.New("another worker claimed the task first")

// Claim claims task id for worker until now+lease. prev is the claim the
// view showed for the task (an expired one, to take over), nil when there
// was none. ErrTaken says another worker won.
func (l *Ledger) Claim(ctx context.Context, id, worker string, now time.Time, lease time.Duration, prev *Claim) (Claim, error) {
	c := Claim{Task: id, Worker: worker, State: StateWorking, Started: now.UTC(), Expires: now.Add(lease).UTC(),
		Ref: l.ClaimRef(id)}
	expect := ""
	if prev != nil {
		expect = prev.Object
	}
	if err := l.swap(ctx, &c, expect); err != nil {
		if errors.Is(err, vcs.ErrStale) {
			return c, fmt.Errorf("%s: %w", id, ErrTaken)
		}
		return c, err
	}
	return c, nil
}

// Renew moves c's lease on to now+lease. ErrTaken says the claim is no
// longer c's: another worker took the task over.
func (l *Ledger) Renew(ctx context.Context, c *Claim, now time.Time, lease time.Duration) error {
	next := *c
	next.Expires = now.Add(lease).UTC()
	if err := l.swap(ctx, &next, c.Object); err != nil {
		if errors.Is(err, vcs.ErrStale) {
			return fmt.Errorf("%s: %w", c.Task, ErrTaken)
		}
		return err
	}
	*c = next
	return nil
}

// Fail records that c's task failed, for good: the claim stays, and no
// worker takes the task again.
func (l *Ledger) Fail(ctx context.Context, c *Claim, reason string) error {
	next := *c
	next.State, next.Expires, next.Reason = StateFailed, time.Time{}, reason
	err := l.swap(ctx, &next, c.Object)
	if errors.Is(err, vcs.ErrStale) {
		// A renewal whose answer was lost, as for Release.
		if cur, ok, rerr := l.remoteClaim(ctx, c.Task); rerr == nil && ok && cur.Worker == c.Worker && cur.Started.Equal(c.Started) {
			err = l.swap(ctx, &next, cur.Object)
		}
	}
	if err != nil {
		return err
	}
	*c = next
	return nil
}

// Release deletes c's claim, if it is still c: a task done (its result on
// the branch says so) or given back for another worker to take.
func (l *Ledger) Release(ctx context.Context, c Claim) error {
	err := l.Git.PushRef(ctx, l.Remote, c.Ref, "", c.Object)
	if !errors.Is(err, vcs.ErrStale) {
		return err
	}
	// The remote holds another version: still this claim when a renewal
	// got through whose answer was lost (same worker, same start), else
	// another worker's, which is not ours to release.
	cur, ok, err := l.remoteClaim(ctx, c.Task)
	if err != nil || !ok || cur.Worker != c.Worker || !cur.Started.Equal(c.Started) {
		return err
	}
	return l.Git.PushRef(ctx, l.Remote, c.Ref, "", cur.Object)
}

// remoteClaim fetches task id's claim alone and reads it; ok is false
// when there is none.
func (l *Ledger) remoteClaim(ctx context.Context, id string) (Claim, bool, error) {
	seen := l.seenPrefix() + refPart(id)
	if err := l.Git.Fetch(ctx, l.Remote, "+"+l.ClaimRef(id)+":"+seen); err != nil {
		// A claim deleted meanwhile is no ref to fetch.
		if obj, ok := l.remoteObject(ctx, l.ClaimRef(id)); !ok || obj == "" {
			return Claim{}, false, nil
		}
		return Claim{}, false, err
	}
	refs, err := l.Git.Refs(ctx, seen)
	if err != nil || len(refs) == 0 {
		return Claim{}, false, err
	}
	c, err := decodeClaim(refs[0].Subject)
	if err != nil {
		return Claim{}, false, err
	}
	c.Ref, c.Object = l.ClaimRef(id), refs[0].Object
	return c, true, nil
}

// swap writes c as a new claim commit and pushes it over expect; on
// success c.Object is the new commit.
func (l *Ledger) swap(ctx context.Context, c *Claim, expect string) error {
	obj, err := l.Git.NoteCommit(ctx, c.encode())
	if err != nil {
		return err
	}
	err = l.Git.PushRef(ctx, l.Remote, c.Ref, obj, expect)
	if errors.Is(err, vcs.ErrPushRejected) {
		// The answer may have been lost after the remote took the push:
		// a claim that is ours already is a success.
		if cur, ok := l.remoteObject(ctx, c.Ref); ok && cur == obj {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	c.Object = obj
	return nil
}

// remoteObject asks the remote what ref points at.
func (l *Ledger) remoteObject(ctx context.Context, ref string) (string, bool) {
	out, err := l.Git.LsRemote(ctx, l.Remote, ref)
	if err != nil {
		return "", false
	}
	obj, _, ok := strings.Cut(out, "\t")
	return obj, ok
}
