package loop

import (
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
)

// EventKind names what happened in the loop.
type EventKind string

// The loop's events, in the order a run produces them.
const (
	EventRunStarted       EventKind = "run_started"
	EventIterationStarted EventKind = "iteration_started"
	EventAgent            EventKind = "agent"
	EventIterationEnded   EventKind = "iteration_ended"
	EventTaskFailed       EventKind = "task_failed"
	EventWaiting          EventKind = "waiting"
	EventWarning          EventKind = "warning"
	// EventQuota: the agent reported a change in the account's usage
	// windows (Quota holds them all, Message says them in one line).
	EventQuota EventKind = "quota"
	// EventReview: a reviewer starts on a done claim (Message says who),
	// or the end-of-run review phase reports.
	EventReview   EventKind = "review"
	EventRunEnded EventKind = "run_ended"
	// EventWorker: a --worker claimed a task, landed its result, lost or
	// gave back a claim, or waits for other workers (Message says which).
	EventWorker EventKind = "worker"
	// EventLeftOut: a commit left untracked artefacts out (LeftOut holds
	// the .gitignore lines that would ignore them, each said once a run).
	EventLeftOut EventKind = "left_out"
	// EventAgentSwitched: a usage limit made another agent stand in for
	// the task's (From, To, Message says why, Until when the limit ends),
	// or the run went back to an agent whose limit has reset.
	EventAgentSwitched EventKind = "agent_switched"
)

// TaskRef names a task in events.
type TaskRef struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// Event is one thing the loop reports. Renderers show events; --json
// writes them one per line.
type Event struct {
	Kind      EventKind `json:"event"`
	Time      time.Time `json:"time"`
	RunID     string    `json:"run_id,omitempty"`
	Iteration int       `json:"iteration,omitempty"`
	// Worker is the parallel worker (1..--parallel) whose task the event
	// is about; 0 for the run as a whole and for runs without --parallel.
	Worker int `json:"worker,omitempty"`
	// WorkerID names the --worker process the event comes from, one of
	// many on one plan; "" without --worker.
	WorkerID string `json:"worker_id,omitempty"`
	// MaxIterations is the bound the run started with.
	MaxIterations int      `json:"max_iterations,omitempty"`
	Task          *TaskRef `json:"task,omitempty"`
	// Agent is the agent's own event, for EventAgent.
	Agent *agent.Event `json:"agent,omitempty"`
	// Record is the history line, for EventIterationEnded, and for the
	// EventReview that ends an end review round.
	Record *state.Record `json:"record,omitempty"`
	// Until is when a wait ends, for EventWaiting.
	Until   *time.Time `json:"until,omitempty"`
	Message string     `json:"message,omitempty"`
	// Plan progress and run totals, on run and iteration boundaries.
	Plan   *PlanProgress `json:"plan,omitempty"`
	Totals *state.Totals `json:"totals,omitempty"`
	// Status is the run's final status, for EventRunEnded.
	Status string `json:"status,omitempty"`
	// Sandbox is the sandbox in force, for EventRunStarted.
	Sandbox *state.Sandbox `json:"sandbox,omitempty"`
	// Quota is the latest state of each usage window, for EventQuota.
	Quota map[string]state.QuotaWindow `json:"quota,omitempty"`
	// From and To are the agents of an EventAgentSwitched.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// LeftOut is what the commits left out, for EventLeftOut.
	LeftOut []LeftOut `json:"left_out,omitempty"`
	// Schema is EventSchema where events leave the process (--json, the
	// control channel, ralph serve's API); 0 inside it.
	Schema int `json:"schema,omitempty"`
}

// EventSchema is the version of Event's JSON form: --json lines, the
// control channel's stream and ralph serve's API carry it. A field added
// keeps it; one renamed, removed or changed in meaning bumps it.
const EventSchema = 1

// PlanProgress counts the plan's tasks.
type PlanProgress struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	Total  int    `json:"total"`
	Done   int    `json:"done"`
	Failed int    `json:"failed"`
}
