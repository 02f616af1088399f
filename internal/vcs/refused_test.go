package vcs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/gittest"
)

// TestCommitRefusedPaths: a path git will not put in an index makes
// the commit fail with a *RefusedError that names it, and git's own
// words; once it is gone the same tree commits.
func TestCommitRefusedPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		make func(t *testing.T, dir string)
		want []string
	}{
		{"a name git keeps for itself", func(t *testing.T, dir string) {
			t.Helper()
			write(t, filepath.Join(dir, ".GIT", "x"), "x\n")
		}, []string{".GIT/x"}},
		{"a .gitmodules link", func(t *testing.T, dir string) {
			t.Helper()
			if err := os.Symlink("elsewhere", filepath.Join(dir, ".gitmodules")); err != nil {
				t.Fatal(err)
			}
		}, []string{".gitmodules"}},
		{"an NTFS short name under core.protectNTFS", func(t *testing.T, dir string) {
			t.Helper()
			gittest.Git(t, dir, "config", "core.protectNTFS", "true")
			write(t, filepath.Join(dir, "GIT~1", "y"), "y\n")
		}, []string{"GIT~1/y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, dir := repo(t)
			write(t, filepath.Join(dir, "ok.txt"), "fine\n")
			tt.make(t, dir)
			_, err := g.Commit(t.Context(), "feat: task")
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("Commit = %v, want a *RefusedError", err)
			}
			if diff := cmp.Diff(tt.want, re.RefusedPaths()); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			if want := "error: invalid path '" + tt.want[0] + "'"; !strings.Contains(re.Complaint(), want) {
				t.Errorf("complaint %q lacks %q", re.Complaint(), want)
			}
			// The look fails alike.
			if _, err := g.Changes(t.Context()); !errors.As(err, &re) {
				t.Errorf("Changes = %v, want a *RefusedError", err)
			}
			if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(tt.want[0]))); err != nil {
				t.Fatal(err)
			}
			if hash, err := g.Commit(t.Context(), "feat: task"); err != nil || hash == "" {
				t.Fatalf("Commit after the fix = %q, %v", hash, err)
			}
		})
	}
}

// TestRefusedOtherFailures: a failure that names no path (another git
// holds the lock) is not a refusal.
func TestRefusedOtherFailures(t *testing.T) {
	t.Parallel()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "ok.txt"), "fine\n")
	write(t, filepath.Join(dir, ".git", "index.lock"), "")
	_, err := g.Commit(t.Context(), "feat: task")
	var re *RefusedError
	if err == nil || errors.As(err, &re) {
		t.Fatalf("Commit with the index locked = %v, want a failure that is no refusal", err)
	}
}
