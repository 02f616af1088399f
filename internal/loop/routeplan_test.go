package loop

import (
	"context"
	"testing"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/guard"
	"github.com/ralph-loop/ralph/internal/route"
)

// editingAgent edits the plan while it runs, as an agent that picks its
// own model would.
type editingAgent struct {
	*namedAgent
	edit func()
}

func (a editingAgent) Run(ctx context.Context, req agent.Request, sink agent.Sink) (agent.Result, error) {
	if a.edit != nil {
		a.edit()
	}
	return a.namedAgent.Run(ctx, req, sink)
}

// TestRouteEditIsNotInForce: the agent, working on A, gives B a costlier
// model in the plan; B still runs on the model the plan named when the
// run started, and the edit is a guard finding, named once.
func TestRouteEditIsNotInForce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"})
	claude := named("claude", done(), done())
	edited := false
	ag := editingAgent{namedAgent: claude, edit: func() {
		if !edited {
			edited = true
			f.plan.p.Tasks[1].Model = "opus"
		}
	}}
	deps := f.deps(nil)
	deps.Agent = ag
	deps.Agents = map[string]Agent{"claude": ag}
	deps.Route = route.New(route.Config{Agent: "claude", Model: "sonnet"})
	r, err := newRunner(f.opts, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := claude.models; len(got) != 2 || got[1] != "sonnet" {
		t.Errorf("models asked = %q, want B on sonnet, the model in force at the start", got)
	}
	findings := r.routeChanged()
	if len(findings) != 1 || findings[0].Rule != guard.RuleAgentChanged {
		t.Fatalf("findings = %+v, want one %s", findings, guard.RuleAgentChanged)
	}
	if again := r.routeChanged(); len(again) != 0 {
		t.Errorf("the same edit named again: %+v", again)
	}
}
