package vcs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ralph-loop/ralph/internal/proc"
)

// blockingGit starts a real git in dir that waits on its stdin: a git at
// work in the repository. kill9 kills it with SIGKILL and reaps it.
func blockingGit(t *testing.T, dir string) (p *proc.Process, kill9 func()) {
	t.Helper()
	r, w := io.Pipe()
	p, err := proc.Start(t.Context(), proc.Cmd{Argv: []string{"git", "cat-file", "--batch"}, Dir: dir, Stdin: r})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill9 = func() {
		once.Do(func() {
			if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
				t.Error(err)
			}
			_ = w.Close() // the copy of its stdin ends
			p.Wait()
		})
	}
	t.Cleanup(kill9)
	return p, kill9
}

// TestRemoveStaleLock: the index's lock goes only when the git ralph
// recorded is gone (killed with -9: its record stays) and no git works
// in the repository; it stays while that git lives, while another git
// works there, and when ralph recorded no git at all.
func TestRemoveStaleLock(t *testing.T) {
	t.Parallel()
	g, dir := repo(t)
	if err := os.MkdirAll(filepath.Join(dir, ralphDir, LookDir), 0o755); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, ".git", "index.lock")
	write(t, lock, "")

	// No record: not ralph's lock.
	if msg, err := g.RemoveStaleLock(); err != nil || msg != "" {
		t.Fatalf("without a record: %q, %v", msg, err)
	}

	// A git of ralph's, recorded, alive: its lock is its own.
	killed, kill9 := blockingGit(t, dir)
	record := g.record(killed.Pid())
	if record == "" {
		t.Fatal("no record written")
	}
	if msg, err := g.RemoveStaleLock(); err != nil || msg != "" {
		t.Fatalf("with the recorded git alive: %q, %v", msg, err)
	}

	// Killed with -9: gone, its record left behind. Another git at work
	// in the repository (the user's) may hold the lock.
	kill9()
	_, killOther := blockingGit(t, filepath.Join(dir, ".git"))
	if msg, err := g.RemoveStaleLock(); err != nil || msg != "" {
		t.Fatalf("with another git at work in the repository: %q, %v", msg, err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the lock went: %v", err)
	}
	killOther()

	msg, err := g.RemoveStaleLock()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("removed .git/index.lock, which a git of ralph's (pid %d) left when it was killed", killed.Pid())
	if !strings.HasPrefix(msg, want) {
		t.Errorf("message %q, want it to start with %q", msg, want)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("the lock is still there: %v", err)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Errorf("the record is still there: %v", err)
	}
	// The repository commits again.
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	if hash, err := g.Commit(t.Context(), "feat: after the lock"); err != nil || hash == "" {
		t.Fatalf("Commit = %q, %v", hash, err)
	}
}

// TestGitRecordsGoWithTheirGit: while a git of ralph's runs, a record
// names it (its pre-commit hook sees the one of git commit); once it
// ends, none is left.
func TestGitRecordsGoWithTheirGit(t *testing.T) {
	t.Parallel()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	if _, err := g.Changes(t.Context()); err != nil { // makes .ralph/git
		t.Fatal(err)
	}
	seen := filepath.Join(t.TempDir(), "seen")
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	write(t, hook, "#!/bin/sh\nls .ralph/git > "+seen+"\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Commit(t.Context(), "feat: a"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), recordPrefix) {
		t.Errorf("while git commit ran, .ralph/git held no record:\n%s", b)
	}
	entries, err := os.ReadDir(filepath.Join(dir, ralphDir, LookDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), recordPrefix) {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestParseRecord(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"running-git.123.456": true, "running-git.0.1": false, "running-git.x.1": false,
		"running-git.12": false, "index": false, "running-git.1.-2": false,
	} {
		if _, _, ok := parseRecord(name); ok != want {
			t.Errorf("parseRecord(%q) ok = %v, want %v", name, ok, want)
		}
	}
}
