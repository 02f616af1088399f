package vcs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ralph-loop/ralph/internal/gittest"
	"github.com/ralph-loop/ralph/internal/vcs"
)

func TestCommonDir(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(root, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Init(t, repo)
	g, err := vcs.Open(t.Context(), repo, gittest.Env(repo))
	if err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(repo, ".ralph", "worktrees", "1")
	if _, err := g.AddWorktree(t.Context(), wt, "task-1"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "sub", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(repo, ".git")
	for _, dir := range []string{repo, filepath.Join(repo, "sub", "dir"), wt} {
		if got := vcs.CommonDir(dir); got != want {
			t.Errorf("CommonDir(%s) = %q, want %q", dir, got, want)
		}
	}
	if got := vcs.CommonDir(root); got != "" {
		t.Errorf("CommonDir outside a repository = %q, want empty", got)
	}
}
