package loop

import (
	"fmt"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
)

// NextRun is what the next iteration would run.
type NextRun struct {
	Task       *TaskRef
	Prompt     string
	Invocation agent.Invocation
	// Request is the request the invocation was built from.
	Request agent.Request
	// Route is the rule in one line, and Why where the task's agent and
	// model come from, when a route decides them (Deps.Route).
	Route, Why string
}

// Preview renders the next iteration's prompt and agent invocation
// without running anything or writing any file (--dry-run).
func Preview(opts Options, deps Deps) (NextRun, error) {
	if deps.Store == nil {
		deps.Store = nopStore{} // a preview reads and writes no state
	}
	r, err := newRunner(opts, deps)
	if err != nil {
		return NextRun{}, err
	}
	r.st.Tasks = map[string]state.TaskState{}
	r.st.Iteration = 1
	t, ok := r.next()
	if !ok {
		return NextRun{}, nil
	}
	var routed NextRun
	if rt := r.deps.Route; rt != nil {
		if err := rt.Check(r.deps.Plan.Plan().Path, t); err != nil {
			return NextRun{}, err
		}
		ch := rt.For(t, 0, r.deps.Now())
		a, ok := r.deps.Agents[ch.Agent]
		if !ok {
			return NextRun{}, fmt.Errorf("task %s is for agent %s, which the run did not set up", t.ID, ch.Agent)
		}
		r.cur, r.curModel = a, ch.Model
		routed.Route, routed.Why = rt.Describe(), ch.Why
	}
	req, err := r.request(t)
	if err != nil {
		return NextRun{}, err
	}
	req.PromptFile, _ = state.TranscriptFiles("", "<run_id>", 1)
	inv, err := r.agentNow().Invocation(req)
	if err != nil {
		return NextRun{}, err
	}
	return NextRun{Task: &TaskRef{ID: t.ID, Title: t.Title}, Prompt: req.Prompt, Invocation: inv, Request: req,
		Route: routed.Route, Why: routed.Why}, nil
}

// nopStore stands in for the store where nothing may be written.
type nopStore struct{}

func (nopStore) LoadState() (state.State, error)                    { return state.State{}, nil }
func (nopStore) SaveState(state.State) error                        { return nil }
func (nopStore) AppendHistory(state.Record) error                   { return nil }
func (nopStore) History() ([]state.Record, error)                   { return nil, nil }
func (nopStore) IterationFiles(string, int) (string, string, error) { return "", "", nil }
