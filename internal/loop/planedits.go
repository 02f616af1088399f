package loop

import (
	"fmt"
	"strings"

	"github.com/ralph-loop/ralph/internal/task"
)

// takePlanEdits takes in what changed in the plan file while the agent
// ran, in runner ownership: the user steering the run by editing its plan
// (or the agent editing it, which ralph cannot tell apart). Status changes
// are undone and deleted tasks restored, since only the runner marks
// tasks; the rest is kept and used from the next iteration on. It returns
// t as the plan now has it (a task known by its position may have moved),
// whether the plan had changed, and whether part of the change was undone.
func (r *runner) takePlanEdits(t task.Task) (task.Task, bool, bool) {
	e, err := r.deps.Plan.MergeEdits()
	if err != nil {
		r.stopFor(err)
		r.warn("could not take in the changes made to %s during the iteration: %v", r.deps.Plan.Plan().Path, err)
		return t, true, false
	}
	if !e.Changed() {
		return t, false, false
	}
	r.warn("%s", describeEdits(r.deps.Plan.Plan().Path, e))
	if msg := r.planGatesEdited(); msg != "" {
		r.warn("%s", msg)
	}
	if id, ok := e.Moved[t.ID]; ok {
		if nt, ok := r.deps.Plan.Plan().Task(id); ok {
			t = nt
		}
	}
	return t, true, e.Undone()
}

// describeEdits says what changed in the plan at path and what ralph did
// about it, in one line.
func describeEdits(path string, e task.Edits) string {
	if e.Discarded != nil {
		return fmt.Sprintf("the plan changed during the iteration, and the change cannot be kept (%v): "+
			"put back the last version of %s", e.Discarded, path)
	}
	var kept []string
	if len(e.Added) > 0 {
		kept = append(kept, "added "+taskList(e.Added))
	}
	if len(e.Edited) > 0 {
		kept = append(kept, "edited "+taskList(e.Edited))
	}
	if e.Reordered {
		kept = append(kept, "reordered the tasks")
	}
	if e.Other {
		kept = append(kept, "edited its text")
	}
	var undone []string
	for _, rv := range e.Reverted {
		undone = append(undone, fmt.Sprintf("%s marked %s (put back to %s: only ralph marks tasks in runner ownership)",
			rv.Task.ID, rv.Edited, rv.Task.Status))
	}
	for _, t := range e.Restored {
		undone = append(undone, fmt.Sprintf("%s deleted (restored at the end of the plan)", taskRef(t)))
	}
	msg := "the plan changed during the iteration"
	if len(kept) > 0 {
		msg += ": " + strings.Join(kept, ", ") + "; kept, used from the next iteration on"
	}
	if len(undone) > 0 {
		msg += "; undone: " + strings.Join(undone, ", ")
	}
	return msg
}

// taskList names tasks for a message.
func taskList(ts []task.Task) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = taskRef(t)
	}
	return strings.Join(names, ", ")
}

func taskRef(t task.Task) string {
	return fmt.Sprintf("%s %q", t.ID, t.Title)
}
