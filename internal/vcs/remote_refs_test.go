package vcs

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ralph-loop/ralph/internal/gittest"
)

// cloneOfBare makes a bare remote whose main has one commit, and a clone
// of it, opened; it returns the clone and the remote's path.
func cloneOfBare(t *testing.T) (*Git, string) {
	t.Helper()
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	gittest.Git(t, root, "clone", "-q", "--bare", gittest.Init(t, t.TempDir()), remote)
	dir := filepath.Join(root, "clone")
	gittest.Git(t, root, "clone", "-q", remote, dir)
	g, err := Open(t.Context(), dir, gittest.Env(dir))
	if err != nil {
		t.Fatal(err)
	}
	return g, remote
}

func TestCreateRefAndRemoteBranch(t *testing.T) {
	t.Parallel()
	g, _ := cloneOfBare(t)
	ctx := t.Context()
	main := gittest.Git(t, g.Root, "rev-parse", "HEAD")
	if _, ok, err := g.RemoteBranch(ctx, "origin", "ralph/fleet"); ok || err != nil {
		t.Fatalf("RemoteBranch before: found %v, %v; want none", ok, err)
	}
	if created, err := g.CreateRef(ctx, "origin", "refs/heads/ralph/fleet", main); !created || err != nil {
		t.Fatalf("CreateRef: created %v, %v; want created", created, err)
	}
	if commit, ok, err := g.RemoteBranch(ctx, "origin", "ralph/fleet"); !ok || err != nil || commit != main {
		t.Fatalf("RemoteBranch after: %s %v %v; want %s", commit, ok, err, main)
	}
	// The same again: git changes nothing and says so; not created.
	if created, err := g.CreateRef(ctx, "origin", "refs/heads/ralph/fleet", main); created || err != nil {
		t.Fatalf("CreateRef of a ref there at that commit: created %v, %v; want not created, no error", created, err)
	}
	// Another commit over it: the lease expects no ref.
	gittest.Git(t, g.Root, "commit", "-q", "--allow-empty", "-m", "two")
	two := gittest.Git(t, g.Root, "rev-parse", "HEAD")
	if _, err := g.CreateRef(ctx, "origin", "refs/heads/ralph/fleet", two); !errors.Is(err, ErrStale) {
		t.Fatalf("CreateRef over another commit: %v, want ErrStale", err)
	}
	refs, head, err := g.RemoteRefs(ctx, "origin", "HEAD", "refs/heads/ralph/fleet", "refs/heads/gone")
	if err != nil || head != "main" || refs["refs/heads/ralph/fleet"] != main || refs["HEAD"] != main || len(refs) != 2 {
		t.Fatalf("RemoteRefs: %v, HEAD names %q, %v; want HEAD and ralph/fleet at %s, HEAD naming main", refs, head, err, main)
	}
}
