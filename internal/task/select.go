package task

// Next returns the task to work on next: among open tasks whose dependsOn
// are all done and that skip does not reject, the one with the lowest
// priority, ties broken by file order. Priority 0 means unset and sorts after
// every explicit priority. skip may be nil.
//
// The runner passes a skip that rejects tasks failed in its own state (a
// prd.json cannot record failure) and, with --parallel, tasks another worker
// holds.
func (p *Plan) Next(skip func(Task) bool) (Task, bool) {
	done := p.statusByID()
	best := -1
	for i, t := range p.Tasks {
		if t.Status != StatusOpen || !depsDone(t, done) || (skip != nil && skip(t)) {
			continue
		}
		if best < 0 || priorityKey(t.Priority) < priorityKey(p.Tasks[best].Priority) {
			best = i
		}
	}
	if best < 0 {
		return Task{}, false
	}
	return p.Tasks[best], true
}

// priorityKey makes 0 (unset) sort after every explicit priority.
func priorityKey(p int) int64 {
	if p == 0 {
		return 1 << 62
	}
	return int64(p)
}

func (p *Plan) statusByID() map[string]Status {
	m := make(map[string]Status, len(p.Tasks))
	for _, t := range p.Tasks {
		if _, dup := m[t.ID]; !dup {
			m[t.ID] = t.Status
		}
	}
	return m
}

func depsDone(t Task, status map[string]Status) bool {
	for _, d := range t.DependsOn {
		if status[d] != StatusDone {
			return false
		}
	}
	return true
}

// Blocked returns, in plan order, the open tasks that can never run because
// something they depend on, directly or through other open tasks, has
// failed, is missing from the plan, or is part of a dependency cycle. A task
// counts as failed when its status is StatusFailed or failed reports true for
// it (failed may be nil); failed tasks themselves are not in the list.
//
// The runner passes the tasks failed in its state as failed, since a
// prd.json cannot record failure.
func (p *Plan) Blocked(failed func(Task) bool) []Task {
	can := p.canFinish(failed)
	var out []Task
	for i, t := range p.Tasks {
		if t.Status == StatusOpen && !isFailed(t, failed) && !can[i] {
			out = append(out, t)
		}
	}
	return out
}

func isFailed(t Task, failed func(Task) bool) bool {
	return t.Status == StatusFailed || (failed != nil && failed(t))
}

// canFinish marks the tasks that are done or can still be done: a fixpoint
// that starts from the done tasks and adds open, non-failed tasks whose
// dependencies are all marked. What is left unmarked waits, at the end of
// some chain, on a failure, a missing id or a cycle.
func (p *Plan) canFinish(failed func(Task) bool) []bool {
	can := make([]bool, len(p.Tasks))
	ok := make(map[string]bool, len(p.Tasks))
	for i, t := range p.Tasks {
		if t.Status == StatusDone {
			can[i], ok[t.ID] = true, true
		}
	}
	for progress := true; progress; {
		progress = false
		for i, t := range p.Tasks {
			if can[i] || t.Status != StatusOpen || isFailed(t, failed) {
				continue
			}
			all := true
			for _, d := range t.DependsOn {
				if !ok[d] {
					all = false
					break
				}
			}
			if all {
				can[i], ok[t.ID], progress = true, true, true
			}
		}
	}
	return can
}
