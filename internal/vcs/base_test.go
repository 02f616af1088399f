package vcs

import (
	"errors"
	"path/filepath"
	"testing"
)

// A branch's work is measured from where it left the default branch.
func TestDefaultBranchAndMergeBase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	def, err := g.Branch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := g.DefaultBranch(ctx); err != nil || got != def {
		t.Fatalf("DefaultBranch = %q, %v; want %q", got, err, def)
	}
	fork, err := g.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.SwitchBranch(ctx, "feature"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	if _, err := g.Commit(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got, err := g.MergeBase(ctx, "HEAD", def); err != nil || got != fork {
		t.Errorf("MergeBase = %q, %v; want %q", got, err, fork)
	}
	if got, err := g.ResolveCommit(ctx, "HEAD~1"); err != nil || got != fork {
		t.Errorf("ResolveCommit(HEAD~1) = %q, %v; want %q", got, err, fork)
	}
	if _, err := g.ResolveCommit(ctx, "no-such-rev"); err == nil {
		t.Error("ResolveCommit of a rev that does not exist: no error")
	}
	// Without main, master or origin/HEAD there is no default branch.
	if _, err := g.run(ctx, nil, "branch", "-q", "-m", def, "trunk"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.DefaultBranch(ctx); !errors.Is(err, ErrNoDefaultBranch) {
		t.Errorf("DefaultBranch without one: %v", err)
	}
}
