package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArchivedPaths(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path string
		want bool
	}{
		{"archive/2026-11-21-old-feature/prd.json", true},
		{"archive/2026-11-21-x/progress.txt", true},
		{"archive/notes.txt", false},
		{"archive/2026-11-21/prd.json", false},
		{"archive/2026-13-01-x/prd.json", false},
		{"src/archive/2026-11-21-x/prd.json", false},
	} {
		if got := archived("archive", tt.path); got != tt.want {
			t.Errorf("archived(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
	if !archived("sub/archive", "sub/archive/2026-11-21-x/a") {
		t.Error("archive folder of a project in a subdirectory not recognised")
	}
}

func TestReservedBranches(t *testing.T) {
	t.Parallel()
	for branch, want := range map[string]string{
		"ralph/feature":      "",
		"main":               "",
		"ralph/task":         "ralph/task/",
		"ralph/task/US-1":    "ralph/task/",
		"ralph/conflict":     "ralph/conflict/",
		"ralph/conflict/x-1": "ralph/conflict/",
		"ralph/tasks":        "",
	} {
		if got := reserved(branch); got != want {
			t.Errorf("reserved(%q) = %q, want %q", branch, got, want)
		}
	}
}

func TestIgnoreLinesDropRalphsEntry(t *testing.T) {
	t.Parallel()
	got := ignoreLines([]byte("node_modules/\r\n\r\n.ralph/\r\n/.ralph\r\n*.log"))
	if diff := cmp.Diff([]string{"node_modules/", "*.log"}, got); diff != "" {
		t.Errorf("ignoreLines (-want +got):\n%s", diff)
	}
}
