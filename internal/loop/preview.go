package loop

import (
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
	req, err := r.request(t)
	if err != nil {
		return NextRun{}, err
	}
	req.PromptFile, _ = state.TranscriptFiles("", "<run_id>", 1)
	inv, err := deps.Agent.Invocation(req)
	if err != nil {
		return NextRun{}, err
	}
	return NextRun{Task: &TaskRef{ID: t.ID, Title: t.Title}, Prompt: req.Prompt, Invocation: inv, Request: req}, nil
}

// nopStore stands in for the store where nothing may be written.
type nopStore struct{}

func (nopStore) LoadState() (state.State, error)                    { return state.State{}, nil }
func (nopStore) SaveState(state.State) error                        { return nil }
func (nopStore) AppendHistory(state.Record) error                   { return nil }
func (nopStore) History() ([]state.Record, error)                   { return nil, nil }
func (nopStore) IterationFiles(string, int) (string, string, error) { return "", "", nil }
