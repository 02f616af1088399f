// Package task owns the plan: the one Task/Plan model every plan format maps
// onto, a reader/writer per format, task selection, and atomic persistence.
//
// It never runs processes and never prints. Writers change only the bytes
// they must, and never overwrite a file that changed on disk since it was
// read.
package task

import "errors"

// Status is a task's state in the plan.
type Status string

// The task states. A task becomes failed only through the runner's policy
// (too many failed attempts); failed is never done.
const (
	StatusOpen   Status = "open"
	StatusDone   Status = "done"
	StatusFailed Status = "failed"
)

// Task is one unit of work, in the shape shared by every plan format.
type Task struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Criteria    []string `json:"acceptance_criteria,omitempty"`
	// Priority orders selection: lower runs first. Zero means unset and sorts
	// after every explicit priority.
	Priority  int      `json:"priority,omitempty"`
	DependsOn []string `json:"depends_on,omitempty"`
	Status    Status   `json:"status"`
	Notes     string   `json:"notes,omitempty"`
	// Category is the group the plan files the task under: tasks.json's
	// "category", a progress.md "### Phase" heading.
	Category string `json:"category,omitempty"`
	// Agent and Model are the agent and model the plan names for the task
	// ("" for the run's).
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// Line is the 1-based line of the task in its file, for error messages.
	Line int `json:"-"`
}

// Plan is a parsed plan file.
type Plan struct {
	Path   string
	Format string
	// Name, Description and Branch come from the plan's header where the
	// format has one (prd.json: project/name, description, branchName).
	Name        string
	Description string
	Branch      string
	Tasks       []Task
	// Validation are the commands of the plan's "Validation Commands"
	// section (markdown plans), run as quality gates before a task is
	// accepted.
	Validation []string
}

// Task returns the task with the given id.
func (p *Plan) Task(id string) (Task, bool) {
	for _, t := range p.Tasks {
		if t.ID == id {
			return t, true
		}
	}
	return Task{}, false
}

// Open reports how many tasks are not done: open, or failed in the plan. A
// plan is finished when Open is 0; a failed task keeps it unfinished, since
// failed is never done (the formats that can say "failed" do).
func (p *Plan) Open() int {
	n := 0
	for _, t := range p.Tasks {
		if t.Status != StatusDone {
			n++
		}
	}
	return n
}

// ErrChanged is returned when a plan file changed on disk since it was read
// and the change could not be merged.
var ErrChanged = errors.New("plan file changed on disk since it was read")
