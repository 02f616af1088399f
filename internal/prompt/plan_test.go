package prompt

import (
	"strings"
	"testing"
)

func TestRenderPlan(t *testing.T) {
	t.Parallel()
	example := "{\n  \"userStories\": []\n}\n"
	tests := []struct {
		name string
		d    PlanData
	}{
		{"plan-idea", PlanData{Idea: "add dark mode to the settings page", PlanFile: "prd.json", Format: "prd.json",
			Example: example, OpenRule: `Every task has "passes": false.`, Round: 1, MaxRounds: 3}},
		{"plan-spec-feedback", PlanData{Spec: "docs/spec.md", PlanFile: "IMPLEMENTATION_PLAN.md", Format: "checklist",
			Example: "# Plan\n\n- [ ] 1\n", OpenRule: "Every task's checkbox is `- [ ]`.", Exists: true,
			Problems: []string{"IMPLEMENTATION_PLAN.md:3: task 1: no acceptance criteria"}, Round: 2, MaxRounds: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := RenderPlan(tt.d)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.name, got)
		})
	}
}

func TestRenderPlanSays(t *testing.T) {
	t.Parallel()
	got, err := RenderPlan(PlanData{Idea: "x ``` y", PlanFile: "p.json", Format: "prd.json", Example: "{}", OpenRule: "r"})
	if err != nil {
		t.Fatal(err)
	}
	// What the issue asks of a planning prompt.
	for _, want := range []string{
		"do NOT implement anything",       // never implement
		"Plan only the gap",               // gap analysis against the code
		"describe it in 2–3 sentences",    // small tasks
		"Order by dependency",             // dependency order
		"name those checks as commands",   // criteria include the project's checks
		"````\nx ``` y\n````",             // an idea cannot break out of its fence
		"Write the plan to `p.json`",      // where
		"a plan never marks its own work", // nothing done
	} {
		if !strings.Contains(got, want) {
			t.Errorf("planning prompt lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Problems With") {
		t.Error("a first round shows problems")
	}
}

func TestPlanContext(t *testing.T) {
	t.Parallel()
	if got := PlanContext(nil); got != "" {
		t.Errorf("PlanContext(nil) = %q", got)
	}
	got := PlanContext([]ContextFile{{Path: "plan.md", About: "details"}, {Path: "activity.md", About: "the log"}})
	want := "\n\n## Plan Context\n\nRead these files, which go with the plan, before you start:\n- `plan.md`: details\n- `activity.md`: the log\n"
	if got != want {
		t.Errorf("PlanContext = %q, want %q", got, want)
	}
}
