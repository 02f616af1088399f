package vcs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/gittest"
	"github.com/ralph-loop/ralph/internal/proc"
)

// recorder is a sandbox that runs a child as it is, and records that it
// did: which programs ralph handed it.
type recorder struct{ ran []string }

func (r *recorder) Wrap(l proc.Launch) (proc.Launch, error) {
	r.ran = append(r.ran, filepath.Base(l.Path)+" "+strings.Join(l.Argv[1:], " "))
	return l, nil
}

// hooks installs a hook of each name in dir's repository that appends its
// name, its arguments and its stdin to log, and exits with code.
func hooks(t *testing.T, dir, log string, code int, names ...string) {
	t.Helper()
	for _, name := range names {
		p := filepath.Join(dir, ".git", "hooks", name)
		write(t, p, fmt.Sprintf("#!/bin/sh\n{ echo \"%s $*\"; cat; } >> %s\nexit %d\n", name, log, code))
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNoHookRunsOutsideTheSandbox: ralph's bookkeeping git (a branch
// made and checked out, a worktree added, a squash merge, a branch
// deleted) runs none of the user's hooks, which may call a script the
// agent edited; the commit runs its hooks, in the sandbox.
func TestNoHookRunsOutsideTheSandbox(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	log := filepath.Join(t.TempDir(), "hooks.log")
	hooks(t, dir, log, 0, "post-checkout", "post-merge", "reference-transaction", "post-index-change", "pre-commit")
	box := &recorder{}
	g.Hooks = box

	if _, err := g.SwitchBranch(ctx, "agent/evil"); err != nil {
		t.Fatal(err)
	}
	wt, err := g.AddWorktree(ctx, filepath.Join(t.TempDir(), "wt"), "task")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt.Root, "a.txt"), "a")
	gittest.Git(t, wt.Root, "-c", "core.hooksPath=/dev/null", "add", "a.txt")
	gittest.Git(t, wt.Root, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "a")
	if conflicts, err := g.SquashMerge(ctx, "task", nil); err != nil || len(conflicts) > 0 {
		t.Fatalf("SquashMerge: %v, %v", conflicts, err)
	}
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(log); err == nil {
		t.Fatalf("hooks ran outside the sandbox:\n%s", b)
	}
	if hash, err := g.Commit(ctx, "feat: a"); err != nil || hash == "" {
		t.Fatalf("Commit = %q, %v", hash, err)
	}
	if err := g.RemoveWorktree(ctx, wt.Root); err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteBranch(ctx, "task"); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(box.ran, func(s string) bool { return strings.HasPrefix(s, "git ") && strings.Contains(s, " commit ") }) {
		t.Errorf("the commit did not run in the sandbox: %q", box.ran)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal("the commit's hooks did not run")
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "post-checkout") || strings.HasPrefix(line, "post-merge") {
			t.Errorf("a hook ran that only ralph's bookkeeping would run: %s", line)
		}
	}
	if !strings.Contains(string(b), "pre-commit") {
		t.Errorf("pre-commit did not run at the commit:\n%s", b)
	}
}

// TestPushRunsPrePushInTheSandbox: a pull request's push runs the user's
// pre-push hook in the sandbox, as git would (the remote's name and URL,
// a ref line on stdin), and a hook that fails stops it; the push itself
// runs no hook.
func TestPushRunsPrePushInTheSandbox(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	remote := t.TempDir()
	gittest.Git(t, remote, "init", "-q", "--bare")
	gittest.Git(t, dir, "remote", "add", "origin", remote)
	gittest.Git(t, dir, "checkout", "-q", "-b", "run")
	log := filepath.Join(t.TempDir(), "hooks.log")
	hooks(t, dir, log, 1, "pre-push")
	box := &recorder{}
	g.Hooks = box

	err := g.Push(ctx, "origin", "run")
	if err == nil || !strings.Contains(err.Error(), "pre-push") {
		t.Fatalf("Push with a failing pre-push = %v; want its refusal", err)
	}
	if _, ok, err := g.RemoteBranch(ctx, "origin", "run"); err != nil || ok {
		t.Fatalf("the branch was pushed (%v, %v) though pre-push failed", ok, err)
	}
	head := strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD"))
	want := fmt.Sprintf("pre-push origin %s\nrefs/heads/run %s refs/heads/run %s\n", remote, head, strings.Repeat("0", len(head)))
	b, _ := os.ReadFile(log)
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("what pre-push was given (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"pre-push origin " + remote}, box.ran); diff != "" {
		t.Errorf("what ran in the sandbox (-want +got):\n%s", diff)
	}

	hooks(t, dir, log, 0, "pre-push")
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := g.Push(ctx, "origin", "run"); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := g.RemoteBranch(ctx, "origin", "run"); err != nil || !ok || got != head {
		t.Fatalf("the remote's branch: %q, %v, %v; want %s", got, ok, err, head)
	}
	if b, err := os.ReadFile(log); err != nil || strings.Count(string(b), "pre-push") != 1 {
		t.Errorf("pre-push ran other than once (in the sandbox, not again by git push): %q, %v", b, err)
	}
	// Up to date: pre-push is run with no line, as git runs it.
	if err := g.Push(ctx, "origin", "run"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(log); !strings.HasSuffix(string(b), "pre-push origin "+remote+"\n") {
		t.Errorf("an up-to-date push's pre-push got lines: %q", b)
	}
	if errors.Is(err, ErrStale) {
		t.Fatal(err)
	}
}
