package vcs_test

import (
	"os"
	"path/filepath"
	"slices"
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

// git reads config.worktree whenever extensions.worktreeConfig is true as
// git reads a boolean: a bare key and a number count; ConfigFiles makes
// the file, to be bound read-only, in each case, and not when it is off.
func TestConfigFilesMakesTheWorktreeConfigGitReads(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, config string
		made         bool
	}{
		{"true", "[extensions]\n\tworktreeConfig = true\n", true},
		{"a bare key", "[extensions]\n\tworktreeConfig\n", true},
		{"a number", "[extensions]\n\tworktreeConfig = 2\n", true},
		{"false", "[extensions]\n\tworktreeConfig = false\n", false},
		{"unset", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			gittest.Init(t, dir)
			cfg := filepath.Join(dir, ".git", "config")
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, append(b, tt.config...), 0o644); err != nil {
				t.Fatal(err)
			}
			wt := filepath.Join(dir, ".git", "config.worktree")
			readOnly, _ := vcs.ConfigFiles(t.Context(), dir, gittest.Env(dir))
			if !slices.Contains(readOnly, wt) {
				t.Errorf("read-only: %q, want %s among them", readOnly, wt)
			}
			if _, err := os.Stat(wt); (err == nil) != tt.made {
				t.Errorf("config.worktree made: %v, want %v", err == nil, tt.made)
			}
		})
	}
}
