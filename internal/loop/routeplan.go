package loop

import (
	"slices"

	"github.com/ralph-loop/ralph/internal/guard"
	"github.com/ralph-loop/ralph/internal/task"
)

// A task's agent and model are the plan's as the run started, as its
// Validation Commands are (plangates.go): the agent can edit the plan, and
// an agent that hands a task to another agent, or a costlier model, picks
// what the user did not. An edit of them is a guard finding and is not in
// force in this run; a name the config does not allow still fails the
// task at once (routeTask).

// snapshotPlan is a copy of p that later edits of p do not change.
func snapshotPlan(p *task.Plan) *task.Plan {
	c := *p
	c.Tasks = slices.Clone(p.Tasks)
	return &c
}

// routeInForce is t with the agent and model in force for it
// (Options.RouteInForce), else those the plan gave it when the run
// started: none for a task the plan did not have then.
func (r *runner) routeInForce(t task.Task) task.Task {
	was, known := r.routeStart.Task(t.ID)
	if in := r.opts.RouteInForce; in != nil {
		agentName, model := in(t.ID)
		if agentName != t.Agent || model != t.Model || !known {
			t.AgentLine, t.ModelLine = 0, 0
		}
		t.Agent, t.Model = agentName, model
		return t
	}
	t.Agent, t.Model, t.AgentLine, t.ModelLine = "", "", 0, 0
	if known {
		t.Agent, t.Model, t.AgentLine, t.ModelLine = was.Agent, was.Model, was.AgentLine, was.ModelLine
	}
	return t
}

// routeChanged are the findings of the edits of the plan's agents and
// models since the run started that no earlier finding named.
func (r *runner) routeChanged() []guard.Finding {
	var changes []task.RouteChange
	for _, c := range task.RouteChanges(r.routeStart, r.deps.Plan.Plan()) {
		if key := c.String(); !r.routeReported[key] {
			r.routeReported[key] = true
			changes = append(changes, c)
		}
	}
	if len(changes) == 0 {
		return nil
	}
	return guard.RouteFindings(r.planName(), changes)
}
