package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/projectfs"
)

const oneStory = `{"userStories": [{"id": "A", "passes": false}]}`

// siblings makes two projects side by side, each with its own prd.json.
func siblings(t *testing.T) (project, sibling string) {
	t.Helper()
	base := t.TempDir()
	project, sibling = filepath.Join(base, "project"), filepath.Join(base, "sibling")
	for _, d := range []string{project, sibling} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "prd.json"), []byte(oneStory), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return project, sibling
}

func relink(t *testing.T, link, to string) {
	t.Helper()
	if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.Symlink(to, link); err != nil {
		t.Fatal(err)
	}
}

// TestPlanReplacedByLinkOut: a plan that becomes a link to another
// project's plan during the run is not read or marked there.
func TestPlanReplacedByLinkOut(t *testing.T) {
	t.Parallel()
	project, sibling := siblings(t)
	plan := filepath.Join(project, "prd.json")
	f, err := LoadIn(project, plan, true)
	if err != nil {
		t.Fatal(err)
	}
	relink(t, plan, "../sibling/prd.json")
	err = f.SetStatus("A", StatusDone)
	if !errors.Is(err, projectfs.ErrOutside) || !strings.Contains(err.Error(), "sibling") {
		t.Errorf("SetStatus through a link out = %v, want an error wrapping ErrOutside naming where it leads", err)
	}
	if _, err := f.Modified(); !errors.Is(err, projectfs.ErrOutside) {
		t.Errorf("Modified = %v, want ErrOutside", err)
	}
	if err := f.Restore(); !errors.Is(err, projectfs.ErrOutside) {
		t.Errorf("Restore = %v, want ErrOutside", err)
	}
	if got := string(mustRead(t, filepath.Join(sibling, "prd.json"))); got != oneStory {
		t.Errorf("the sibling's plan changed:\n%s", got)
	}
}

// TestPlanLinkedOutAtLoad: a link out that is there at load is the plan
// when it is trusted, for the whole run, and refused when it is not.
func TestPlanLinkedOutAtLoad(t *testing.T) {
	t.Parallel()
	project, sibling := siblings(t)
	plan := filepath.Join(project, "prd.json")
	relink(t, plan, "../sibling/prd.json")
	if _, err := LoadIn(project, plan, false); !errors.Is(err, projectfs.ErrOutside) {
		t.Fatalf("LoadIn(untrusted) = %v, want ErrOutside", err)
	}
	f, err := LoadIn(project, plan, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetStatus("A", StatusDone); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(oneStory, "false", "true", 1)
	if got := string(mustRead(t, filepath.Join(sibling, "prd.json"))); got != want {
		t.Errorf("the linked plan = %s, want %s", got, want)
	}
	if fi, err := os.Lstat(plan); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("prd.json is no longer a link: %v", err)
	}
	// The link moved during the run: neither file is the plan now.
	other := filepath.Join(filepath.Dir(project), "other.json")
	if err := os.WriteFile(other, []byte(oneStory), 0o644); err != nil {
		t.Fatal(err)
	}
	relink(t, plan, "../other.json")
	if err := f.SetStatus("A", StatusOpen); err == nil || !strings.Contains(err.Error(), "when the run started") {
		t.Errorf("SetStatus after the link moved = %v, want an error saying it moved", err)
	}
	if got := string(mustRead(t, other)); got != oneStory {
		t.Errorf("other.json changed:\n%s", got)
	}
}
