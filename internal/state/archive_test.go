package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func writeFileT(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestArchiveBranchChange walks the runs of archive_branch_change.txtar
// without git: a first run records its branch and plan, the same branch
// again archives nothing, another branch archives the last run's plan and
// progress log and starts the log afresh.
func TestArchiveBranchChange(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	project := filepath.Dir(s.Dir())
	plan := filepath.Join(project, "prd.json")
	progress := filepath.Join(project, ProgressFile)
	now := time.Date(2026, 11, 21, 7, 20, 12, 0, time.UTC)

	writeFileT(t, plan, `{"branchName": "ralph/old-feature"}`)
	done, err := s.Archive("ralph/old-feature", plan, now)
	if err != nil || done != nil {
		t.Fatalf("first run: Archive = %v, %v; want nothing archived", done, err)
	}
	if got, _ := s.LastBranch(); got != "ralph/old-feature" {
		t.Errorf("last branch %q after the first run", got)
	}
	// The run ends with its plan done and a progress log.
	writeFileT(t, plan, `{"branchName": "ralph/old-feature", "passes": true}`)
	if err := s.SavePlan(plan); err != nil {
		t.Fatal(err)
	}
	writeFileT(t, progress, "## US-001: old work\n")

	if done, err := s.Archive("ralph/old-feature", plan, now); err != nil || done != nil {
		t.Fatalf("same branch: Archive = %v, %v; want nothing archived", done, err)
	}

	writeFileT(t, plan, `{"branchName": "ralph/new-feature"}`)
	done, err = s.Archive("ralph/new-feature", plan, now)
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(project, "archive", "2026-11-21-old-feature")
	if done == nil || done.Branch != "ralph/old-feature" || done.Folder != folder {
		t.Fatalf("Archive = %+v, want ralph/old-feature in %s", done, folder)
	}
	if got := readFileT(t, filepath.Join(folder, "prd.json")); !strings.Contains(got, `"passes": true`) {
		t.Errorf("archived plan is not the one the last run left: %s", got)
	}
	if got := readFileT(t, filepath.Join(folder, ProgressFile)); got != "## US-001: old work\n" {
		t.Errorf("archived progress log %q", got)
	}
	if got := readFileT(t, progress); !strings.HasPrefix(got, "# Ralph Progress Log\nStarted: ") || strings.Contains(got, "old work") {
		t.Errorf("progress log did not start afresh: %q", got)
	}
	if got, _ := s.LastBranch(); got != "ralph/new-feature" {
		t.Errorf("last branch %q, want ralph/new-feature", got)
	}
	if got := readFileT(t, filepath.Join(s.Dir(), LastPlanDir, "prd.json")); !strings.Contains(got, "new-feature") {
		t.Errorf("last plan is not the new one: %s", got)
	}

	// Back to the old branch on the same day: a second folder.
	done, err = s.Archive("ralph/old-feature", plan, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(project, "archive", "2026-11-21-new-feature"); done == nil || done.Folder != want {
		t.Errorf("Archive = %+v, want folder %s", done, want)
	}
	done, err = s.Archive("ralph/new-feature", plan, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := folder + "-2"; done == nil || done.Folder != want {
		t.Errorf("Archive = %+v, want folder %s", done, want)
	}
	assertNoTempFiles(t, s)
}

func TestArchiveWithoutBranch(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	plan := filepath.Join(filepath.Dir(s.Dir()), "plan.md")
	writeFileT(t, plan, "- [ ] a\n")
	if done, err := s.Archive("", plan, time.Now()); err != nil || done != nil {
		t.Fatalf("Archive = %v, %v", done, err)
	}
	for _, name := range []string{LastBranchFile, LastPlanDir} {
		if s.exists(filepath.Join(s.Dir(), name)) {
			t.Errorf("a plan without a branch wrote %s", name)
		}
	}
}

// TestArchiveNothingToKeep: a branch change with neither a saved plan nor
// a progress log archives nothing but still starts the log.
func TestArchiveNothingToKeep(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	project := filepath.Dir(s.Dir())
	plan := filepath.Join(project, "prd.json")
	writeFileT(t, plan, "{}")
	if err := s.SaveLastBranch("ralph/old"); err != nil {
		t.Fatal(err)
	}
	done, err := s.Archive("ralph/new", plan, time.Now())
	if err != nil || done != nil {
		t.Fatalf("Archive = %v, %v; want nothing archived", done, err)
	}
	if s.exists(filepath.Join(project, ArchiveDir)) {
		t.Error("an empty archive folder was made")
	}
	if !strings.HasPrefix(readFileT(t, filepath.Join(project, ProgressFile)), "# Ralph Progress Log") {
		t.Error("progress log not started")
	}
}
