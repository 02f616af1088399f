package vcs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/gittest"
)

func TestCommitLeavingLeavesUntrackedArtefactsOut(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	// A project that commits a build output keeps doing so.
	write(t, filepath.Join(dir, "target", "kept.txt"), "v1")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "tracked artefacts")

	write(t, filepath.Join(dir, "target", "kept.txt"), "v2")
	write(t, filepath.Join(dir, "target", "debug", "app"), "new build output")
	write(t, filepath.Join(dir, "calc.py"), "x = 1")
	write(t, filepath.Join(dir, "__pycache__", "calc.cpython-311.pyc"), "b")
	write(t, filepath.Join(dir, "pkg", "mod.py"), "y = 2")
	write(t, filepath.Join(dir, "pkg", "__pycache__", "mod.cpython-311.pyc"), "b")
	write(t, filepath.Join(dir, "pkg", "stray.pyc"), "b")
	write(t, filepath.Join(dir, ".pytest_cache", "v", "cache", "lastfailed"), "{}")
	write(t, filepath.Join(dir, "htmlcov", "index.html"), "made by a gate")
	write(t, filepath.Join(dir, ".coverage"), "made by a gate")

	hash, left, err := g.CommitLeaving(ctx, "task 1",
		[]string{"__pycache__/", "*.pyc", ".pytest_cache/", "target/"}, []string{"htmlcov/", ".coverage"})
	if err != nil || hash == "" {
		t.Fatalf("CommitLeaving = %q, %v", hash, err)
	}
	got := strings.Fields(gittest.Git(t, dir, "show", "--name-status", "--format=", hash))
	// target/ is the project's: tracked there, a new build output joins it.
	want := []string{"A", "calc.py", "A", "pkg/mod.py", "A", "target/debug/app", "M", "target/kept.txt"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the commit's files (-want +got):\n%s", diff)
	}
	wantLeft := map[string]int{"__pycache__/": 2, "*.pyc": 1, ".pytest_cache/": 1, "htmlcov/": 1, ".coverage": 1}
	if diff := cmp.Diff(wantLeft, left); diff != "" {
		t.Errorf("left out (-want +got):\n%s", diff)
	}
}

func TestCommitLeavingCommitsATrackedArtefactsDeletion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "old.pyc"), "tracked")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "tracked bytecode")
	if err := os.Remove(filepath.Join(dir, "old.pyc")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "__pycache__", "new.pyc"), "untracked")
	hash, left, err := g.CommitLeaving(ctx, "drop it", []string{"__pycache__/", "*.pyc"}, nil)
	if err != nil || hash == "" {
		t.Fatalf("CommitLeaving = %q, %v", hash, err)
	}
	if got := strings.Fields(gittest.Git(t, dir, "show", "--name-status", "--format=", hash)); !cmp.Equal(got, []string{"D", "old.pyc"}) {
		t.Errorf("the commit holds %q, want old.pyc's deletion", got)
	}
	if diff := cmp.Diff(map[string]int{"__pycache__/": 1}, left); diff != "" {
		t.Errorf("left out (-want +got):\n%s", diff)
	}
}

func TestCommitLeavingNothingButArtefacts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "__pycache__", "a.pyc"), "b")
	hash, left, err := g.CommitLeaving(ctx, "nothing", []string{"__pycache__/"}, nil)
	if err != nil || hash != "" {
		t.Errorf("CommitLeaving = %q, %v; want no commit", hash, err)
	}
	if diff := cmp.Diff(map[string]int{"__pycache__/": 1}, left); diff != "" {
		t.Errorf("left out (-want +got):\n%s", diff)
	}
}

func TestUntrackedCollapsesNewDirectories(t *testing.T) {
	t.Parallel()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "kept.txt"), "a")
	gittest.Git(t, dir, "add", "kept.txt")
	write(t, filepath.Join(dir, "new.txt"), "b")
	write(t, filepath.Join(dir, "htmlcov", "a.html"), "c")
	write(t, filepath.Join(dir, "htmlcov", "b.html"), "c")
	write(t, filepath.Join(dir, ".ralph", "state.json"), "{}")
	write(t, filepath.Join(dir, "ignored.log"), "d")
	write(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	got, err := g.Untracked(t.Context())
	if diff := cmp.Diff([]string{".gitignore", "htmlcov/", "new.txt"}, got); err != nil || diff != "" {
		t.Errorf("Untracked (-want +got), %v:\n%s", err, diff)
	}
}

func TestMatchArtefact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line, file string
		want       bool
	}{
		{"__pycache__/", "__pycache__/a.pyc", true},
		{"__pycache__/", "src/pkg/__pycache__/a.pyc", true},
		{"__pycache__/", "__pycache__", false}, // a file of that name is no directory
		{"target/", "src/target.rs", false},
		{"*.pyc", "a/b/c.pyc", true},
		{"*.pyc", "a.pyc/readme", false},
		{"*.o", "main.o", true},
		{"*.o", "main.go", false},
	}
	for _, tt := range tests {
		if got := matchArtefact(tt.line, tt.file); got != tt.want {
			t.Errorf("matchArtefact(%q, %q) = %v, want %v", tt.line, tt.file, got, tt.want)
		}
	}
}

func TestArtefactGlob(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{"node_modules/": "**/node_modules/**", "*.o": "**/*.o"} {
		if got := artefactGlob(line); got != want {
			t.Errorf("artefactGlob(%q) = %q, want %q", line, got, want)
		}
	}
}
