package vcs

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNoDefaultBranch says the repository has no origin/HEAD, main or master
// to measure a branch's work against.
var ErrNoDefaultBranch = errors.New("no default branch (origin/HEAD, main or master)")

// ResolveCommit resolves rev (a branch, tag, hash, HEAD~3) to a commit id.
func (g *Git) ResolveCommit(ctx context.Context, rev string) (string, error) {
	out, err := g.run(ctx, nil, "rev-parse", "--verify", "-q", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("%q is not a commit of this repository", rev)
	}
	return strings.TrimSpace(out), nil
}

// DefaultBranch is the branch work is merged into: origin's HEAD when the
// clone knows it, else main, else master.
func (g *Git) DefaultBranch(ctx context.Context) (string, error) {
	if out, err := g.run(ctx, nil, "symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD"); err == nil {
		return strings.TrimSpace(out), nil
	}
	for _, b := range []string{"main", "master"} {
		if g.hasBranch(ctx, b) {
			return b, nil
		}
	}
	return "", ErrNoDefaultBranch
}

// MergeBase is the best common ancestor of two commits: where a branch
// left the one it will be merged into.
func (g *Git) MergeBase(ctx context.Context, a, b string) (string, error) {
	out, err := g.run(ctx, nil, "merge-base", a, b)
	if err != nil {
		return "", fmt.Errorf("%s and %s have no common ancestor: %w", a, b, err)
	}
	return strings.TrimSpace(out), nil
}
