package vcs

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/gittest"
)

// TestSeenCommitted checks the look's tree against HEAD's as Dirty would
// answer, through the states an agent leaves: everything committed, an
// untracked file, that file committed by the agent after ralph's look,
// and a commit that is packed.
func TestSeenCommitted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	look := func() {
		t.Helper()
		if _, err := g.Changes(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Seen(ctx); err != nil { // the tree, as the guard writes it
			t.Fatal(err)
		}
	}
	// ralph keeps .ralph/ out of git (state.EnsureGitignore).
	write(t, filepath.Join(dir, ".gitignore"), ".ralph/\n")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "ignore .ralph")
	check := func(what string, wantCommitted, wantOK bool) {
		t.Helper()
		committed, ok := g.SeenCommitted(ctx)
		if committed != wantCommitted || ok != wantOK {
			t.Errorf("%s: SeenCommitted = %v, %v; want %v, %v", what, committed, ok, wantCommitted, wantOK)
		}
		if !ok {
			return
		}
		if dirty, err := g.Dirty(ctx); err != nil || dirty == committed {
			t.Errorf("%s: Dirty = %v, %v; SeenCommitted said committed = %v", what, dirty, err, committed)
		}
	}
	check("before any look", false, false)
	look()
	check("fresh", true, true)

	write(t, filepath.Join(dir, "sub", "new.txt"), "x")
	write(t, filepath.Join(dir, ".ralph", "state.json"), "{}")
	look()
	check("an untracked file", false, true)

	// The agent commits its work with git itself.
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "agent's work")
	// The look saw the work the agent then committed as it was.
	check("committed after the look", true, true)
	look()
	check("committed, looked again", true, true)

	write(t, filepath.Join(dir, "sub", "new.txt"), "y")
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	// The look in process writes its tree as it goes.
	check("looked in process", false, true)

	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "more")
	gittest.Git(t, dir, "gc", "-q")
	look()
	check("HEAD's commit packed", false, false)
}

// TestLooseCommitTree reads commits' trees as git names them, and nothing
// from what is not a loose commit.
func TestLooseCommitTree(t *testing.T) {
	t.Parallel()
	g, dir := repo(t)
	objects := filepath.Join(g.commonDir, "objects")
	for i := range 3 {
		write(t, filepath.Join(dir, "f.txt"), strings.Repeat("x", i+1))
		gittest.Git(t, dir, "add", "-A")
		gittest.Git(t, dir, "commit", "-q", "-m", "c")
		head := strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD"))
		want := strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD^{tree}"))
		if got := looseCommitTree(objects, head); got != want {
			t.Errorf("commit %d: tree %q, want %q", i, got, want)
		}
		tree := want
		if got := looseCommitTree(objects, tree); got != "" {
			t.Errorf("a tree object read as a commit: %q", got)
		}
	}
	for _, id := range []string{"", "HEAD", "../../etc/passwd", strings.Repeat("0", 40)} {
		if got := looseCommitTree(objects, id); got != "" {
			t.Errorf("looseCommitTree(%q) = %q, want \"\"", id, got)
		}
	}
}
