package worker

import (
	"time"

	"github.com/ralph-loop/ralph/internal/task"
)

// Task states in a Report.
const (
	// TaskDone: the run branch's plan has it done.
	TaskDone = "done"
	// TaskFailed: a worker gave up on it (its claim says why), or the
	// plan marks it failed.
	TaskFailed = "failed"
	// TaskClaimed: a worker holds it, its lease running.
	TaskClaimed = "claimed"
	// TaskExpired: a worker claimed it and its lease ran out: the next
	// worker that looks takes it over.
	TaskExpired = "expired"
	// TaskReady: open, its dependencies done, unclaimed.
	TaskReady = "ready"
	// TaskWaiting: open, waiting on dependencies not done yet.
	TaskWaiting = "waiting"
)

// TaskStatus is one task of a Report.
type TaskStatus struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	State  string `json:"state"`
	Worker string `json:"worker,omitempty"`
	// Started and Expires are the claim's, LeaseLeft the time until it
	// runs out (negative: it ran out that long ago).
	Started   *time.Time     `json:"started,omitempty"`
	Expires   *time.Time     `json:"expires,omitempty"`
	LeaseLeft *time.Duration `json:"lease_left_ns,omitempty"`
	Reason    string         `json:"reason,omitempty"`
	DependsOn []string       `json:"depends_on,omitempty"`
}

// Report is what many workers are doing with one plan, as the remote
// tells it.
type Report struct {
	Remote string       `json:"remote"`
	Branch string       `json:"branch"`
	Plan   string       `json:"plan"`
	Head   string       `json:"head"`
	Tasks  []TaskStatus `json:"tasks"`
	// Counts by state.
	Counts map[string]int `json:"counts"`
}

// Status reports the view at now, tasks in plan order.
func (l *Ledger) Status(v View, now time.Time) Report {
	r := Report{Remote: l.Remote, Branch: l.Branch, Plan: l.Plan, Head: v.Head, Counts: map[string]int{}}
	status := map[string]task.Status{}
	for _, t := range v.Plan.Tasks {
		status[t.ID] = t.Status
	}
	for _, t := range v.Plan.Tasks {
		ts := TaskStatus{ID: t.ID, Title: t.Title, DependsOn: t.DependsOn}
		c, claimed := v.Claims[t.ID]
		switch {
		case t.Status == task.StatusDone:
			ts.State = TaskDone
		case t.Status == task.StatusFailed:
			ts.State = TaskFailed
		case claimed && c.State == StateFailed:
			ts.State, ts.Worker, ts.Reason = TaskFailed, c.Worker, c.Reason
		case claimed:
			ts.State, ts.Worker = TaskClaimed, c.Worker
			if !c.Live(now) {
				ts.State = TaskExpired
			}
			started, expires, left := c.Started, c.Expires, c.Expires.Sub(now).Round(time.Second)
			ts.Started, ts.Expires, ts.LeaseLeft = &started, &expires, &left
		default:
			ts.State = TaskReady
			for _, d := range t.DependsOn {
				if status[d] != task.StatusDone {
					ts.State = TaskWaiting
				}
			}
		}
		r.Counts[ts.State]++
		r.Tasks = append(r.Tasks, ts)
	}
	return r
}
