package vcs

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Push pushes branch to the same branch of remote. It never forces: a
// remote branch that moved since it was last fetched is left as it is,
// and the error wraps ErrStale.
func (g *Git) Push(ctx context.Context, remote, branch string) error {
	ref := "refs/heads/" + branch
	out, err := g.run(ctx, nil, "push", "--porcelain", remote, ref+":"+ref)
	if err == nil {
		return nil
	}
	var ce *CmdError
	if errors.As(err, &ce) && (strings.Contains(out, "[rejected]") || strings.Contains(ce.Stderr, "[rejected]") ||
		strings.Contains(ce.Stderr, "non-fast-forward") || strings.Contains(ce.Stderr, "fetch first")) {
		return fmt.Errorf("pushing %s to %s: %w (someone pushed to it): fetch, rebase %s on %s/%s, and push again",
			branch, remote, branchMoved{}, branch, remote, branch)
	}
	return fmt.Errorf("pushing %s to %s: %w", branch, remote, err)
}

// RemoteURL is remote's fetch URL.
func (g *Git) RemoteURL(ctx context.Context, remote string) (string, error) {
	out, err := g.run(ctx, nil, "remote", "get-url", remote)
	if err != nil {
		return "", fmt.Errorf("git remote %s: %w", remote, err)
	}
	return strings.TrimSpace(out), nil
}

// branchMoved is the ErrStale of a branch push, said as a user reads it.
type branchMoved struct{}

func (branchMoved) Error() string        { return "the remote branch moved" }
func (branchMoved) Is(target error) bool { return target == ErrStale }
