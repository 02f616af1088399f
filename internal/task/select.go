package task

// Next returns the task to work on next: among open tasks whose dependsOn
// are all done and that skip does not reject, the one with the lowest
// priority, ties broken by file order. Priority 0 means unset and sorts after
// every explicit priority. skip may be nil.
//
// The runner passes a skip that rejects tasks failed in its own state (a
// prd.json cannot record failure) and, with --parallel, tasks another worker
// holds.
//
// The runner calls it every iteration, so its cost is one pass over the
// tasks: dependencies and skip are only asked about a task that would beat
// the best one so far, and the statuses of dependencies are looked up one
// by one until there are enough lookups to be worth an index.
func (p *Plan) Next(skip func(Task) bool) (Task, bool) {
	status := statusLookup{p: p}
	best := -1
	for i := range p.Tasks {
		t := &p.Tasks[i]
		if t.Status != StatusOpen || (best >= 0 && priorityKey(t.Priority) >= priorityKey(p.Tasks[best].Priority)) {
			continue
		}
		if !status.depsDone(t) || (skip != nil && skip(*t)) {
			continue
		}
		best = i
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

// statusLookup finds the status of tasks by id: by a linear search for the
// first few, as Next usually asks about the dependencies of one or two
// tasks, then through a map of every id.
type statusLookup struct {
	p        *Plan
	searches int
	byID     map[string]Status
}

// linearSearches is how many lookups statusLookup makes by searching
// before it builds its map: a search costs about what hashing a tenth of
// the ids does.
const linearSearches = 8

// of returns the status of the first task with the id, or "" when there is
// none.
func (s *statusLookup) of(id string) Status {
	if s.byID == nil && s.searches < linearSearches {
		s.searches++
		for i := range s.p.Tasks {
			if s.p.Tasks[i].ID == id {
				return s.p.Tasks[i].Status
			}
		}
		return ""
	}
	if s.byID == nil {
		s.byID = s.p.statusByID()
	}
	return s.byID[id]
}

func (s *statusLookup) depsDone(t *Task) bool {
	for _, d := range t.DependsOn {
		if s.of(d) != StatusDone {
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
