package cli

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
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
