package guard

import (
	"fmt"

	"github.com/ralph-loop/ralph/internal/task"
)

// A plan names the agent and the model of a task (task.Task.Agent, Model),
// and the agent can edit the plan: it could hand its own task, or the
// next one, to another agent or a costlier model. As with the plan's
// Validation Commands, what is in force is what the plan said when the
// run started, and an edit of it is a finding. No task text allows one:
// an agent that may choose its own agent or model is what the rule is
// against, and the task's text is the plan's, which the agent may write.

// RouteFindings are the findings of a plan's edit that gave tasks another
// agent or model (task.RouteChanges of the plan as the run started and as
// it is now). file is the plan's path as findings name it (relative to the
// repository root). A finding is on the line that names the new agent or
// model; on the line that named the old one, Removed, when the edit
// removed it, so that PutBack restores that line.
func RouteFindings(file string, changes []task.RouteChange) []Finding {
	out := make([]Finding, 0, len(changes))
	for _, c := range changes {
		f := Finding{
			Rule: RuleAgentChanged,
			File: file,
			Line: c.Line,
			Text: fmt.Sprintf("task %s %s: %s → %s", c.Task, c.Field, orNone(c.Before), orNone(c.After)),
			Why: fmt.Sprintf("a task's agent and model are the plan's as the run started; an edit of them is not in force, "+
				"since the agent would choose its own %s", c.Field),
		}
		if c.New {
			f.Text = fmt.Sprintf("new task %s %s: %s", c.Task, c.Field, c.After)
		}
		if c.After == "" && c.BeforeLine > 0 {
			f.Line, f.Removed = c.BeforeLine, true
		}
		out = append(out, f)
	}
	return sortFindings(out)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
