package vcs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
)

// ErrPushRejected is a push the remote turned down for a reason that may
// pass: a hook, a full disk, a protected branch, or the remote being out
// of reach. Retrying later may succeed.
var ErrPushRejected = errors.New("the remote refused the push")

// ErrStale is a push that lost a race: the ref was not what the push
// expected (a non-fast-forward, a lease that failed, a ref that exists).
// Fetching and deciding again is the answer, not retrying as is.
var ErrStale = errors.New("the remote ref changed meanwhile")

// Fetch fetches refspecs from remote, pruning refs the remote no longer
// has under the refspecs' destinations.
func (g *Git) Fetch(ctx context.Context, remote string, refspecs ...string) error {
	args := append([]string{"fetch", "-q", "--prune", "--no-tags", "--no-write-fetch-head", remote}, refspecs...)
	_, err := g.run(ctx, nil, args...)
	return err
}

// PushRef sets ref on remote to object (a commit), "" deleting it, only if
// the ref there is now expect ("" meaning the ref must not exist): a
// compare-and-swap that the remote decides under its ref lock, so of two
// pushes racing for one ref exactly one wins. A push that lost is
// ErrStale; one the remote refused otherwise is ErrPushRejected.
func (g *Git) PushRef(ctx context.Context, remote, ref, object, expect string) error {
	args := []string{"push", "--porcelain", "--no-verify", "--force-with-lease=" + ref + ":" + expect, remote, object + ":" + ref}
	return g.push(ctx, args)
}

// PushBranch pushes commit to branch on remote as a fast-forward only:
// ErrStale when the branch moved on meanwhile.
func (g *Git) PushBranch(ctx context.Context, remote, branch, commit string) error {
	return g.push(ctx, []string{"push", "--porcelain", "--no-verify", remote, commit + ":refs/heads/" + branch})
}

// push runs git push --porcelain and sorts its failures: a ref line that
// starts with "!" says why that ref was not updated.
func (g *Git) push(ctx context.Context, args []string) error {
	_, err := g.pushPorcelain(ctx, args)
	return err
}

// pushPorcelain is push, returning git's report of a push that went
// through: one line per ref, its first character saying what was done.
func (g *Git) pushPorcelain(ctx context.Context, args []string) (string, error) {
	out, err := g.run(ctx, nil, args...)
	if err == nil {
		return out, nil
	}
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.HasPrefix(line, "!") {
			continue
		}
		fields := strings.SplitN(line, "\t", 3)
		why := ""
		if len(fields) == 3 {
			why = fields[2]
		}
		// A push refused for a stale expectation, and one that lost the
		// race for the ref's lock on the remote, both mean: another push
		// changed the ref first.
		if strings.HasPrefix(why, "[rejected]") || strings.HasPrefix(why, "[remote rejected] (failed to update ref)") ||
			strings.HasPrefix(why, "[remote rejected] (failed to lock)") {
			return "", fmt.Errorf("%w: %s: %w", ErrStale, why, err)
		}
		return "", fmt.Errorf("%w: %s: %w", ErrPushRejected, why, err)
	}
	// No ref line: the remote was not reached, or hung up.
	return "", fmt.Errorf("%w: %w", ErrPushRejected, err)
}

// Ref is a ref and what it points at.
type Ref struct {
	Name   string
	Object string
	// Subject is the first line of the commit's message.
	Subject string
}

// Refs lists the refs under prefix (refs/...), with the subjects of the
// commits they point at.
func (g *Git) Refs(ctx context.Context, prefix string) ([]Ref, error) {
	out, err := g.run(ctx, nil, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(contents:subject)", prefix)
	if err != nil {
		return nil, err
	}
	var refs []Ref
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.SplitN(line, "\x00", 3)
		if len(f) == 3 {
			refs = append(refs, Ref{Name: f[0], Object: f[1], Subject: f[2]})
		}
	}
	return refs, nil
}

// NoteCommit writes a commit with an empty tree and no parent whose
// message is subject: a small record that a ref can hold and a remote
// takes like any commit. Its author is ralph, so no identity needs to be
// configured.
func (g *Git) NoteCommit(ctx context.Context, subject string) (string, error) {
	tree, err := g.output(ctx, nil, []byte{}, "mktree")
	if err != nil {
		return "", err
	}
	env := []string{"GIT_AUTHOR_NAME=ralph", "GIT_AUTHOR_EMAIL=ralph@localhost",
		"GIT_COMMITTER_NAME=ralph", "GIT_COMMITTER_EMAIL=ralph@localhost"}
	out, err := g.output(ctx, env, nil, "commit-tree", strings.TrimSpace(string(tree)), "-m", subject)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// ResetHard checks out rev detached, discarding every change in the
// working tree (ralph's own files aside, which git ignores).
func (g *Git) ResetHard(ctx context.Context, rev string) error {
	if _, err := g.run(ctx, nil, "checkout", "-q", "--detach", "--force", rev); err != nil {
		return err
	}
	_, err := g.run(ctx, nil, "clean", "-q", "-f", "-d")
	return err
}

// CommitMessage is the full message of commit.
func (g *Git) CommitMessage(ctx context.Context, commit string) (string, error) {
	out, err := g.run(ctx, nil, "log", "-1", "--format=%B", commit)
	return strings.TrimRight(out, "\n"), err
}

// FirstChange is the first commit after from, on the way to to, that
// changed path; "" when none did.
func (g *Git) FirstChange(ctx context.Context, from, to, path string) (string, error) {
	out, err := g.run(ctx, nil, "rev-list", "--reverse", "--topo-order", from+".."+to, "--", path)
	first, _, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(first), err
}

// CheckoutPath sets path (relative to the top) in the working tree and
// the index to its content at rev; a path rev does not have is removed.
func (g *Git) CheckoutPath(ctx context.Context, rev, path string) error {
	if _, err := g.run(ctx, nil, "cat-file", "-e", rev+":"+path); err != nil {
		_, err := g.run(ctx, nil, "rm", "-q", "--ignore-unmatch", "--", path)
		return err
	}
	_, err := g.run(ctx, nil, "checkout", "-q", rev, "--", path)
	return err
}

// AddWorktreeAt checks out a new branch, made from rev, in a new worktree
// at dir; an older branch of that name is replaced.
func (g *Git) AddWorktreeAt(ctx context.Context, dir, branch, rev string) (*Git, error) {
	if _, err := g.run(ctx, nil, "worktree", "add", "-q", "-B", branch, dir, rev); err != nil {
		return nil, err
	}
	return Open(proc.WithOutside(ctx, g.out), dir, g.Env)
}

// LsRemote lists the remote's refs matching pattern, as git ls-remote
// prints them ("object<TAB>ref" lines).
func (g *Git) LsRemote(ctx context.Context, remote, pattern string) (string, error) {
	return g.run(ctx, nil, "ls-remote", remote, pattern)
}
