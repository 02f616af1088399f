package cli

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

func TestTasksFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want tasksOptions
	}{
		{[]string{}, tasksOptions{Action: "list"}},
		{[]string{"list", "--json", "--plan", "x.md"}, tasksOptions{Action: "list", JSON: true, Plan: "x.md"}},
		{[]string{"--plan", "x.md", "show", "US-1"}, tasksOptions{Action: "show", Arg: "US-1", Plan: "x.md"}},
		{[]string{"reset", "3"}, tasksOptions{Action: "reset", Arg: "3"}},
		{[]string{"add", "Fix the bug", "-c", "a, b", "-c", "c", "--depends-on", "1,2", "--priority", "4", "-d", "why", "--id", "B-1"},
			tasksOptions{Action: "add", Arg: "Fix the bug", Criteria: []string{"a, b", "c"}, DependsOn: []string{"1", "2"}, Priority: 4, Description: "why", ID: "B-1"}},
		// The plan as the last argument, flags anywhere.
		{[]string{"list", "--json", "x.md"}, tasksOptions{Action: "list", JSON: true, PlanArg: "x.md"}},
		{[]string{"next", "x.md"}, tasksOptions{Action: "next", PlanArg: "x.md"}},
		{[]string{"show", "US-1", "x.md"}, tasksOptions{Action: "show", Arg: "US-1", PlanArg: "x.md"}},
		{[]string{"done", "US-1", "x.md", "--plan", "x.md"}, tasksOptions{Action: "done", Arg: "US-1", PlanArg: "x.md", Plan: "x.md"}},
		{[]string{"reset", "3", "x.md"}, tasksOptions{Action: "reset", Arg: "3", PlanArg: "x.md"}},
		{[]string{"add", "Fix the bug", "x.md"}, tasksOptions{Action: "add", Arg: "Fix the bug", PlanArg: "x.md"}},
		// An unquoted title: its words are joined; a last word that names
		// an existing file is the plan.
		{[]string{"add", "Fix", "the", "bug"}, tasksOptions{Action: "add", Arg: "Fix the bug"}},
		{[]string{"add", "Fix", "the", "bug", "x.md"}, tasksOptions{Action: "add", Arg: "Fix the bug", PlanArg: "x.md"}},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x.md"), []byte("- [ ] a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, _, _ := testFactory(t, dir)
		var got *tasksOptions
		cmd := newCmdTasks(f, func(o *tasksOptions) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		got.f, got.flags = nil, nil // wiring, not parsed values
		if diff := cmp.Diff(tt.want, *got, cmp.AllowUnexported(tasksOptions{})); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tt.args, diff)
		}
	}
	for _, args := range [][]string{{"done"}, {"show", "a", "b", "c"}, {"add"}, {"list", "x", "y"},
		{"x"}, {"x.json"}, {"--priority", "x"}} {
		f, _, _ := testFactory(t, t.TempDir())
		cmd := newCmdTasks(f, func(*tasksOptions) error { return nil })
		cmd.SetArgs(args)
		cmd.SetOut(f.IO.Out)
		cmd.SetErr(f.IO.ErrOut)
		err := cmd.Execute()
		var ee *ExitError
		if err == nil || (errors.As(err, &ee) && ee.Code != ExitUsage) {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
}

func TestConvertAndPlanFlags(t *testing.T) {
	t.Parallel()
	f, _, _ := testFactory(t, t.TempDir())
	var co *convertOptions
	cmd := newCmdConvert(f, func(o *convertOptions) error { co = o; return nil })
	cmd.SetArgs([]string{"--format", "headings", "--force", "a.json", "b.md"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if co.In != "a.json" || co.Out != "b.md" || co.Format != "headings" || !co.Force {
		t.Errorf("convert options %+v", co)
	}

	var po *planOptions
	pc := newCmdPlan(f, func(o *planOptions) error { po = o; return nil })
	pc.SetArgs([]string{"add dark mode", "--format", "checklist", "-o", "docs/TODO.md", "--max-rounds", "5", "--model", "m"})
	if err := pc.Execute(); err != nil {
		t.Fatal(err)
	}
	if po.Input != "add dark mode" || po.Format != "checklist" || po.Out != "docs/TODO.md" || po.MaxRounds != 5 || !po.flags.Changed("model") {
		t.Errorf("plan options %+v", po)
	}
}

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
		gotFormat, gotOut, err := planTarget(&planOptions{Format: tt.format, Out: tt.out})
		var ee *ExitError
		if tt.wantUsage {
			if !errors.As(err, &ee) || ee.Code != ExitUsage {
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

func TestSetConfigKey(t *testing.T) {
	t.Parallel()
	cfg := configTemplate()
	got := setConfigKey(cfg, "prompt", "prompt.md")
	if !strings.Contains(got, "\nprompt = \"prompt.md\"\n") || strings.Count(got, "prompt = ") != strings.Count(cfg, "prompt = ") {
		t.Errorf("prompt not set in place:\n%s", got)
	}
	got = setConfigKey("# head\n\n# x = 1\n", "tasks", "PLAN.md")
	if got != "# head\n\ntasks = \"PLAN.md\"\n\n# x = 1\n" {
		t.Errorf("no commented key: %q", got)
	}
}

func TestInitFilesEveryFormat(t *testing.T) {
	t.Parallel()
	for _, name := range task.Formats() {
		files, err := initFiles(name)
		if err != nil {
			t.Fatal(err)
		}
		plan := files[len(files)-1]
		p, err := task.Parse(plan.name, []byte(plan.body))
		if err != nil {
			t.Fatalf("%s: the example %s does not read: %v", name, plan.name, err)
		}
		if p.Format != name || len(p.Tasks) != 2 || p.Open() != 2 {
			t.Errorf("%s: the example reads as %s with %d tasks, %d open", name, p.Format, len(p.Tasks), p.Open())
		}
	}
	if _, err := initFiles("yaml"); err == nil {
		t.Error("an unknown format works")
	}
}
