package state

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeTree is a working tree with a fixed status and the files of its
// last commit.
type fakeTree struct {
	snapshots
	dir     string
	changes []Change
	head    map[string]string // committed files, for Show
}

func (f *fakeTree) Dir() string                              { return f.dir }
func (f *fakeTree) Status(context.Context) ([]Change, error) { return f.changes, nil }
func (f *fakeTree) Show(_ context.Context, rev, p string) ([]byte, error) {
	if c, ok := f.head[p]; ok && rev == "HEAD" {
		return []byte(c), nil
	}
	return nil, fmt.Errorf("%s: not in %s", p, rev)
}

// dirtyProject makes a repository at a temporary root with the project in
// sub, and its store.
func dirtyProject(t *testing.T, sub string) (*Store, *fakeTree) {
	t.Helper()
	root := t.TempDir()
	s, err := Open(filepath.Join(root, sub))
	if err != nil {
		t.Fatal(err)
	}
	return s, &fakeTree{dir: root}
}

func TestCheckDirty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		sub     string
		changes []Change
		want    []Change // the foreign ones; nil: clean
	}{
		{"clean", "", nil, nil},
		{"user's edits", "", []Change{{"M", "tracked.txt"}, {"??", "untracked.txt"}},
			[]Change{{"M", "tracked.txt"}, {"??", "untracked.txt"}}},
		{"ralph's own", "", []Change{
			{"??", ".ralph/"}, {"M", ".ralph/state.json"}, {"M", "prd.json"}, {"??", "progress.txt"},
			{"M", "ralph.toml"}, {"??", "prompt.md"}, {"??", "archive/2026-11-21-old/"},
			{"??", "archive/2026-11-21-old/prd.json"},
		}, nil},
		{"init's files while untracked", "", []Change{{"??", "plan.md"}, {"??", "activity.md"}}, nil},
		{"init's files once committed", "", []Change{{"M", "plan.md"}, {"??", "activity.md"}}, []Change{{"M", "plan.md"}}},
		{"archive folder only when untracked", "", []Change{{"M", "archive/2026-11-21-old/prd.json"}},
			[]Change{{"M", "archive/2026-11-21-old/prd.json"}}},
		{"sapling's untracked code", "", []Change{{"?", "archive/2026-11-21-old/prd.json"}}, nil},
		{"not an archive folder", "", []Change{{"??", "archive/notes.txt"}}, []Change{{"??", "archive/notes.txt"}}},
		{"project in a subdirectory", "app", []Change{
			{"M", "app/prd.json"}, {"??", "app/progress.txt"}, {"??", "app/.ralph/"}, {"M", "prd.json"},
			{"??", "progress.txt"},
		}, []Change{{"M", "prd.json"}, {"??", "progress.txt"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, tree := dirtyProject(t, tt.sub)
			tree.changes = tt.changes
			project := filepath.Dir(s.Dir())
			leftover, err := s.CheckDirty(t.Context(), tree, Own{
				Files: []string{filepath.Join(project, "prd.json"), "ralph.toml", "prompt.md", ""},
				Setup: []string{"plan.md", "activity.md"},
			})
			if leftover {
				t.Error("leftover without a last tree")
			}
			var de *DirtyError
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckDirty: %v", err)
				}
				return
			}
			if !errors.As(err, &de) {
				t.Fatalf("CheckDirty error = %v, want *DirtyError", err)
			}
			if diff := cmp.Diff(tt.want, de.Changes); diff != "" {
				t.Errorf("foreign changes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckDirtyAbsolutePrompt: a prompt file given by absolute path
// inside the repository is ralph's own too.
func TestCheckDirtyAbsolutePrompt(t *testing.T) {
	t.Parallel()
	s, tree := dirtyProject(t, "")
	prompt := filepath.Join(tree.dir, "prompts", "ralph.md")
	writeFileT(t, prompt, "do it")
	tree.changes = []Change{{"??", "prompts/ralph.md"}}
	if _, err := s.CheckDirty(t.Context(), tree, Own{Files: []string{prompt}}); err != nil {
		t.Fatal(err)
	}
}

func TestCheckDirtyGitignore(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, head, cur string
		committed, ok   bool
	}{
		{"new with ralph's line only", "", ".ralph/\n", false, true},
		{"ralph's line added", "node_modules/\n", "node_modules/\n.ralph/\n", true, true},
		{"user's line added", "node_modules/\n", "node_modules/\n*.log\n.ralph/\n", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, tree := dirtyProject(t, "")
			writeFileT(t, filepath.Join(tree.dir, ".gitignore"), tt.cur)
			code := "??"
			if tt.committed {
				code = "M"
				tree.head = map[string]string{".gitignore": tt.head}
			}
			tree.changes = []Change{{code, ".gitignore"}}
			_, err := s.CheckDirty(t.Context(), tree, Own{})
			if (err == nil) != tt.ok {
				t.Errorf("CheckDirty = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestCheckDirtyLeftover: changes that are exactly as the last run left
// them are its own; any change since is not.
func TestCheckDirtyLeftover(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, tree := dirtyProject(t, "")
	tree.changes = []Change{{"??", "half.txt"}}
	tree.snap = "as-left"
	if err := s.SaveTree(ctx, tree); err != nil {
		t.Fatal(err)
	}
	leftover, err := s.CheckDirty(ctx, tree, Own{})
	if err != nil || !leftover {
		t.Fatalf("CheckDirty = %v, %v; want the last run's leftover", leftover, err)
	}
	tree.snap = "touched since"
	tree.changes = append(tree.changes, Change{"??", "mine.txt"})
	var de *DirtyError
	if _, err := s.CheckDirty(ctx, tree, Own{}); !errors.As(err, &de) {
		t.Fatalf("CheckDirty error = %v, want *DirtyError", err)
	}
}

func TestDirtyErrorMessage(t *testing.T) {
	t.Parallel()
	var changes []Change
	for i := range 12 {
		changes = append(changes, Change{"??", fmt.Sprintf("f%02d.txt", i)})
	}
	msg := (&DirtyError{Changes: changes}).Error()
	for _, want := range []string{
		"the working tree has changes that are not ralph's own:\n",
		"  ?? f00.txt\n", "  ?? f09.txt\n", "  ... and 2 more\n",
		"Commit or stash them first, or run with --allow-dirty to take them along.",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "f10.txt") {
		t.Errorf("message lists more than %d changes:\n%s", maxListed, msg)
	}
}

func TestIgnoreLinesDropRalphsEntry(t *testing.T) {
	t.Parallel()
	got := ignoreLines([]byte("node_modules/\r\n\r\n.ralph/\r\n/.ralph\r\n*.log"))
	if diff := cmp.Diff([]string{"node_modules/", "*.log"}, got); diff != "" {
		t.Errorf("ignoreLines (-want +got):\n%s", diff)
	}
}
