package vcs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a real git repository in a temp dir with a fixed identity and
// no global config.
func repo(t *testing.T) (*Git, string) {
	t.Helper()
	dir := t.TempDir()
	env := append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(dir, ".none"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	g, err := Open(context.Background(), dir, env)
	if err != nil {
		t.Fatal(err)
	}
	return g, dir
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotSeesEditsButNotRalphDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, dir := repo(t)
	before, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, ".ralph", "state.json"), "{}")
	same, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := g.Changed(ctx, before, same); n != 0 {
		t.Errorf("ralph's own files counted as %d changes", n)
	}
	write(t, filepath.Join(dir, "a.txt"), "a")
	write(t, filepath.Join(dir, "sub", "b.txt"), "b")
	after, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := g.Changed(ctx, before, after); err != nil || n != 2 {
		t.Errorf("Changed = %d, %v; want 2", n, err)
	}
	// The user's staging area is untouched.
	out, _ := g.run(ctx, nil, "diff", "--cached", "--name-only")
	if strings.TrimSpace(out) != "" {
		t.Errorf("snapshot staged files: %q", out)
	}
}

func TestCommitExcludesRalphDirEvenWhenIgnored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, ignored := range []bool{false, true} {
		g, dir := repo(t)
		if ignored {
			write(t, filepath.Join(dir, ".gitignore"), ".ralph/\n")
		}
		write(t, filepath.Join(dir, ".ralph", "history.jsonl"), "{}\n")
		write(t, filepath.Join(dir, "feature.go"), "package x\n")
		hash, err := g.Commit(ctx, "feat: T-1 - A feature")
		if err != nil {
			t.Fatalf("ignored=%v: %v", ignored, err)
		}
		if len(hash) != 40 {
			t.Fatalf("hash = %q", hash)
		}
		files, _ := g.run(ctx, nil, "show", "--name-only", "--format=%s", "HEAD")
		if !strings.Contains(files, "feat: T-1 - A feature") || !strings.Contains(files, "feature.go") || strings.Contains(files, ".ralph") {
			t.Errorf("ignored=%v: commit holds:\n%s", ignored, files)
		}
	}
}

func TestCommitNothingToCommit(t *testing.T) {
	t.Parallel()
	g, _ := repo(t)
	hash, err := g.Commit(context.Background(), "nothing")
	if err != nil || hash != "" {
		t.Errorf("Commit = %q, %v; want \"\", nil", hash, err)
	}
}

func TestCommitFailureCarriesGitStderr(t *testing.T) {
	t.Parallel()
	g, dir := repo(t)
	write(t, filepath.Join(dir, ".git", "hooks", "pre-commit"), "#!/bin/sh\necho 'lint failed: x.go' >&2\nexit 1\n")
	if err := os.Chmod(filepath.Join(dir, ".git", "hooks", "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "x.go"), "package x\n")
	_, err := g.Commit(context.Background(), "feat: x")
	if err == nil || !strings.Contains(err.Error(), "lint failed: x.go") {
		t.Errorf("err = %v, want the hook's stderr", err)
	}
}

func TestOpenOutsideRepo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Open(context.Background(), dir, append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir)))
	if !errors.Is(err, ErrNotRepo) {
		t.Errorf("err = %v, want ErrNotRepo", err)
	}
}
