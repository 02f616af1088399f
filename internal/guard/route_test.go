package guard

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/task"
)

// An agent's edit of the plan that hands tasks to other agents or models:
// one finding per change, on the line that says it, and PutBack undoes
// them.
func TestRouteFindings(t *testing.T) {
	t.Parallel()
	const start = "# Plan\n\n" +
		"- [ ] Add the parser\n  Agent: claude\n  Model: sonnet\n" +
		"- [ ] Wire the flag\n  Model: sonnet\n" +
		"- [ ] Write the docs\n"
	const edited = "# Plan\n\n" +
		"- [x] Add the parser\n  Agent: codex\n  Model: sonnet\n" +
		"- [ ] Wire the flag\n" +
		"- [ ] Write the docs\n  Model: opus\n" +
		"- [ ] Add a test\n  Agent: codex\n"
	tests := []struct {
		name          string
		before, after string
		want          []Finding
	}{
		{name: "no change of agent or model", before: start, after: start},
		{
			name: "every kind", before: start, after: edited,
			want: []Finding{
				{Rule: RuleAgentChanged, File: "IMPLEMENTATION_PLAN.md", Line: 4, Text: "task 1 agent: claude → codex"},
				{Rule: RuleAgentChanged, File: "IMPLEMENTATION_PLAN.md", Line: 7, Removed: true, Text: "task 2 model: sonnet → none"},
				{Rule: RuleAgentChanged, File: "IMPLEMENTATION_PLAN.md", Line: 8, Text: "task 3 model: none → opus"},
				{Rule: RuleAgentChanged, File: "IMPLEMENTATION_PLAN.md", Line: 10, Text: "new task 4 agent: codex"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before, err := task.Parse("IMPLEMENTATION_PLAN.md", []byte(tt.before))
			if err != nil {
				t.Fatal(err)
			}
			now, err := task.Parse("IMPLEMENTATION_PLAN.md", []byte(tt.after))
			if err != nil {
				t.Fatal(err)
			}
			got := RouteFindings("IMPLEMENTATION_PLAN.md", task.RouteChanges(before, now))
			for i := range got {
				if got[i].Why == "" {
					t.Errorf("finding %d says not why", i)
				}
				got[i].Why = ""
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(got) == 0 {
				return
			}
			if Blocking(got) == nil {
				t.Error("the findings do not block")
			}
			out, remove := PutBack("IMPLEMENTATION_PLAN.md", []byte(tt.before), true, []byte(tt.after), true, got)
			if remove {
				t.Fatal("PutBack removes the plan")
			}
			back, err := task.Parse("IMPLEMENTATION_PLAN.md", out)
			if err != nil {
				t.Fatalf("put back: %v\n%s", err, out)
			}
			if changes := task.RouteChanges(before, back); changes != nil {
				t.Errorf("after PutBack the plan still names other agents or models: %+v\n%s", changes, out)
			}
		})
	}
}

// No sentence of a task lets it change agents or models.
func TestRouteFindingsAreNeverAllowed(t *testing.T) {
	t.Parallel()
	f := Finding{Rule: RuleAgentChanged, File: "PLAN.md", Line: 3, Text: "task 1 model: sonnet → opus"}
	tt := newTaskText("Update the plan: change the model of task 1 to opus. Set the agent to codex in PLAN.md.")
	if why, ok := tt.allows(f.Rule, []string{"PLAN.md", "model", "agent", "opus"}); ok {
		t.Errorf("allowed by %q", why)
	}
}
