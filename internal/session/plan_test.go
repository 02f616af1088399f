package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/task"
)

// The flag-parsing tests of the plan commands (tasks, convert, plan, init)
// stop at their run functions; what the commands do is in the scripts.

func TestPlanTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format, out         string
		wantFormat, wantOut string
		wantUsage           bool
	}{
		{"", "", task.FormatPRD, "prd.json", false},
		{"tasks", "", task.FormatTasksJSON, "tasks.json", false},
		{"headings", "", task.FormatHeadingPlan, "PLAN.md", false},
		{"", "docs/todo.md", task.FormatChecklist, "docs/todo.md", false},
		{"progress", "notes/p.md", task.FormatProgress, "notes/p.md", false},
		{"", "plan.yaml", "", "", true},
		{"yaml", "", "", "", true},
	}
	for _, tt := range tests {
		gotFormat, gotOut, err := planTarget(PlanOptions{Format: tt.format, Out: tt.out})
		var ue *UsageError
		if tt.wantUsage {
			if !errors.As(err, &ue) {
				t.Errorf("planTarget(%q, %q) = %v, want a usage error", tt.format, tt.out, err)
			}
			continue
		}
		if err != nil || gotFormat != tt.wantFormat || gotOut != tt.wantOut {
			t.Errorf("planTarget(%q, %q) = %q, %q, %v; want %q, %q", tt.format, tt.out, gotFormat, gotOut, err, tt.wantFormat, tt.wantOut)
		}
	}
}

func TestPlanInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := planInput(dir, ""); err == nil || !strings.Contains(err.Error(), "nothing to plan from") {
		t.Errorf("no input, no spec: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SPEC.md"), []byte("# spec\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := planInput(dir, ""); err != nil || d.Spec != "SPEC.md" {
		t.Errorf("found spec: %+v, %v", d, err)
	}
	if d, err := planInput(dir, "SPEC.md"); err != nil || d.Spec != "SPEC.md" || d.Idea != "" {
		t.Errorf("named spec: %+v, %v", d, err)
	}
	if d, err := planInput(dir, "add dark mode"); err != nil || d.Idea != "add dark mode" {
		t.Errorf("idea: %+v, %v", d, err)
	}
	if _, err := planInput(dir, "typo.md"); err == nil {
		t.Error("a missing .md file is taken for an idea")
	}
	if d, err := planInput(dir, "dark-mode"); err != nil || d.Idea != "dark-mode" {
		t.Errorf("one-word idea: %+v, %v", d, err)
	}
}

func TestCheckPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	if got := checkPlan(path, "prd.json", task.FormatPRD, nil); len(got) != 1 || !strings.Contains(got[0], "does not exist") {
		t.Errorf("missing file: %v", got)
	}
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"userStories": [{"id": "A", "title": "a", "acceptanceCriteria": ["x"], "passes": true}, {"id": "B", "title": "b"}]}`)
	got := checkPlan(path, "prd.json", task.FormatPRD, map[string]bool{"A": true})
	want := []string{"prd.json:1: task B: no acceptance criteria: add verifiable ones, the project's checks included"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	got = checkPlan(path, "prd.json", task.FormatPRD, nil)
	if len(got) != 2 || !strings.Contains(got[0], "task A: marked done") {
		t.Errorf("A was not done before: %v", got)
	}
	if got := checkPlan(path, "prd.json", task.FormatChecklist, map[string]bool{"A": true}); !strings.Contains(got[0], "reads as a prd.json plan") {
		t.Errorf("wrong format: %v", got)
	}
	write(`{"userStories": [{"id": "A", "passes": "no"}]}`)
	if got := checkPlan(path, "prd.json", task.FormatPRD, nil); len(got) != 1 || !strings.HasPrefix(got[0], "prd.json:1: userStories[0].passes") {
		t.Errorf("invalid: %v", got)
	}
}
