package vcs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/ralph-loop/ralph/internal/gittest"
)

// fakeSlScript is where the recorded sl fake lives: the end-to-end script
// that runs ralph on a Sapling checkout carries it, and these tests take
// it from there so that there is one copy.
const fakeSlScript = "../cli/testdata/script/sapling_commits.txtar"

// slRepo makes a Sapling checkout driven by the fake sl, which is found
// through the environment's PATH as the real one would be.
func slRepo(t *testing.T) (*Sapling, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the sl fake keeps its history with git")
	}
	ar, err := txtar.ParseFile(fakeSlScript)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, f := range ar.Files {
		if f.Name == "bin/sl" {
			if err := os.WriteFile(filepath.Join(bin, "sl"), f.Data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	env := append(gittest.Env(dir), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	sl := func(args ...string) {
		cmd := exec.Command(filepath.Join(bin, "sl"), args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sl %v: %v\n%s", args, err, out)
		}
	}
	write(t, filepath.Join(dir, "README"), "hi\n")
	sl("init")
	sl("addremove", "-X", "path:.ralph")
	sl("commit", "-m", "init", "-X", "path:.ralph")
	repo, err := Detect(t.Context(), dir, env)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := repo.(*Sapling)
	if !ok {
		t.Fatalf("Detect = %T, want *Sapling", repo)
	}
	return s, dir
}

func TestSaplingSnapshotCommitAndBookmarks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, dir := slRepo(t)
	if real, _ := filepath.EvalSymlinks(dir); s.Dir() != real && s.Dir() != dir {
		t.Errorf("Dir = %q, want %q", s.Dir(), dir)
	}

	before, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Changes(ctx); err != nil || len(got) != 0 { // the baseline
		t.Fatalf("first Changes = %v, %v", got, err)
	}
	write(t, filepath.Join(dir, ".ralph", "state.json"), "{}")
	if same, _ := s.Snapshot(ctx); same != before {
		t.Error("ralph's own files changed the snapshot")
	}
	if dirty, err := s.Dirty(ctx); err != nil || dirty {
		t.Errorf("Dirty with .ralph/ alone = %v, %v", dirty, err)
	}
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	write(t, filepath.Join(dir, "README"), "changed\n")
	want := []string{filepath.Join(s.Root, "README"), filepath.Join(s.Root, "a.txt")}
	if got, err := s.Changes(ctx); err != nil || !slices.Equal(got, want) {
		t.Errorf("Changes = %v, %v; want %v", got, err, want)
	}
	if dirty, err := s.Dirty(ctx); err != nil || !dirty {
		t.Errorf("Dirty = %v, %v; want true", dirty, err)
	}

	created, err := s.SwitchBranch(ctx, "ralph/feature")
	if err != nil || !created {
		t.Fatalf("SwitchBranch = %v, %v", created, err)
	}
	if b, err := s.Branch(ctx); err != nil || b != "ralph/feature" {
		t.Errorf("Branch = %q, %v", b, err)
	}
	hash, err := s.Commit(ctx, "feat: T-1 - A")
	if err != nil || len(hash) != 40 {
		t.Fatalf("Commit = %q, %v", hash, err)
	}
	if st, _ := s.Status(ctx); slices.ContainsFunc(st, func(c Change) bool { return !ralphPath(c.Path) }) {
		t.Errorf("changes left after the commit: %v", st)
	}
	// Committed since the last look, content unchanged: no change; a
	// file changed and committed by someone else: a change.
	if got, err := s.Changes(ctx); err != nil || len(got) != 0 {
		t.Errorf("Changes across ralph's commit = %v, %v; want none", got, err)
	}
	write(t, filepath.Join(dir, "b.txt"), "b\n")
	if _, err := s.Commit(ctx, "feat: T-2 - B"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Changes(ctx); err != nil || !slices.Equal(got, []string{filepath.Join(s.Root, "b.txt")}) {
		t.Errorf("Changes across a commit = %v, %v; want b.txt", got, err)
	}
	if b, err := s.Show(ctx, "HEAD", "a.txt"); err != nil || string(b) != "a\n" {
		t.Errorf("Show = %q, %v", b, err)
	}
	if hash, err := s.Commit(ctx, "nothing"); err != nil || hash != "" {
		t.Errorf("Commit with nothing to commit = %q, %v", hash, err)
	}
}

func TestSaplingCommitRejected(t *testing.T) {
	t.Parallel()
	s, dir := slRepo(t)
	write(t, filepath.Join(dir, ".sl", "precommit"), "#!/bin/sh\necho 'lint failed: x.go' >&2\nexit 1\n")
	if err := os.Chmod(filepath.Join(dir, ".sl", "precommit"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "x.go"), "package x\n")
	_, err := s.Commit(t.Context(), "feat: x")
	if err == nil || !strings.Contains(err.Error(), "sl commit: ") || !strings.Contains(err.Error(), "precommit hook") {
		t.Errorf("err = %v, want sl's abort message", err)
	}
}

func TestDetectPrefersGitInAGitCheckout(t *testing.T) {
	t.Parallel()
	_, dir := repo(t)
	// Even with an sl that answers for the directory, a .git at the root
	// means git.
	bin := t.TempDir()
	write(t, filepath.Join(bin, "sl"), "#!/bin/sh\n[ \"$1\" = root ] && pwd\n")
	if err := os.Chmod(filepath.Join(bin, "sl"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(gittest.Env(dir), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	r, err := Detect(t.Context(), dir, env)
	if err != nil || r.Kind() != "git" {
		t.Errorf("Detect = %v, %v; want git", r, err)
	}
}
