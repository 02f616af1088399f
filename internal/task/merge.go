package task

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// Edits is what MergeEdits found in a plan file edited on disk, and what
// it did about it.
type Edits struct {
	// Added are the tasks new in the file, kept, as the file now has them.
	Added []Task
	// Edited are the tasks whose text changed (title, description,
	// criteria, priority, dependencies, notes, category, agent, model, or
	// an id that is not a position), kept, as the file now has them.
	Edited []Task
	// Reordered: the tasks kept are in another order.
	Reordered bool
	// Other: the file changed outside its tasks (a header, a note).
	Other bool
	// Reverted are the status changes undone.
	Reverted []Reverted
	// Restored are the tasks the edit deleted, written back at the end
	// of the plan, as the file now has them (a task known by its
	// position has a new one).
	Restored []Task
	// Moved maps the ids of the tasks that have another id now (a task
	// known by its position that moved, a restored task) to the new one.
	Moved map[string]string
	// Discarded, when set, is why the edit could not be kept: the file
	// was removed or is not a valid plan any more. The last version was
	// written back in its place.
	Discarded error
}

// Reverted is a status change MergeEdits undid.
type Reverted struct {
	// Task is the task as the file now has it, its status put back.
	Task Task
	// Edited is the status the edit gave it.
	Edited Status
}

// Changed reports whether the file had been edited.
func (e Edits) Changed() bool {
	return len(e.Added) > 0 || len(e.Edited) > 0 || e.Reordered || e.Other ||
		len(e.Reverted) > 0 || len(e.Restored) > 0 || e.Discarded != nil
}

// Undone reports whether MergeEdits put back part of the edit, or all of
// it.
func (e Edits) Undone() bool {
	return len(e.Reverted) > 0 || len(e.Restored) > 0 || e.Discarded != nil
}

// mergeTries bounds how often MergeEdits starts again when the file
// changes once more while it merges.
const mergeTries = 3

// MergeEdits takes in an edit made to the file on disk since it was last
// read or written, the way runner ownership allows: status changes are
// reverted (only the runner marks tasks), deleted tasks are restored, and
// everything else (tasks added, text edited, tasks reordered, notes) is
// kept and becomes the new baseline. Both the reverts and the restores
// are made by the format's own writers, so the rest of the edit stays
// byte for byte. An edit that removed the file or left it an invalid plan
// cannot be kept: the last version is written back and Discarded says
// why.
//
// Tasks are matched by id and title, then title alone (a task known by
// its position keeps its title when another is inserted before it), then
// id alone (a task whose title was edited). An unchanged file gives zero
// Edits.
func (f *File) MergeEdits() (Edits, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for try := 1; ; try++ {
		changed, data, err := f.disk()
		if err != nil || !changed {
			return Edits{}, err
		}
		if data == nil {
			if err := f.write(f.cur); err != nil {
				return Edits{}, err
			}
			return Edits{Discarded: errors.New("the file was removed")}, nil
		}
		theirs, err := f.format.read(f.path, data)
		if err != nil {
			if err := f.write(f.cur); err != nil {
				return Edits{}, err
			}
			return Edits{Discarded: err}, nil
		}
		next, ed, err := f.merge(theirs)
		if err != nil {
			// An edit the writers cannot merge: as if it were invalid.
			if werr := f.write(f.cur); werr != nil {
				return Edits{}, werr
			}
			return Edits{Discarded: err}, nil
		}
		if bytes.Equal(next.source(), data) {
			f.cur = next
			return ed, nil
		}
		// Write only over the edit that was merged: when the file changed
		// again meanwhile (an editor saving twice), merge the newer one.
		if now, err := f.read(); err == nil && !bytes.Equal(now, data) && try < mergeTries {
			continue
		}
		if err := f.write(next); err != nil {
			return Edits{}, err
		}
		return ed, nil
	}
}

// merge applies the runner-ownership rules to theirs, the edited file,
// against f.cur. f.mu is held.
func (f *File) merge(theirs parsed) (parsed, Edits, error) {
	base := f.cur.result().Tasks
	edited := theirs.result().Tasks
	m := matchTasks(base, edited)
	var ed Edits
	next := theirs

	// Status changes the runner did not make.
	for _, p := range m.pairs {
		b, t := base[p[0]], edited[p[1]]
		if b.Status == t.Status {
			continue
		}
		out, err := f.revertStatus(next, t.ID, b.Status)
		if err != nil {
			return nil, Edits{}, err
		}
		nt, _ := out.result().Task(t.ID)
		if nt.Status == t.Status {
			continue // the format cannot write it (failed, in JSON): nothing changed
		}
		next = out
		ed.Reverted = append(ed.Reverted, Reverted{Task: nt, Edited: t.Status})
	}

	// What else changed, and was kept.
	positional := f.format.name() != FormatPRD && f.format.name() != FormatHeadingPlan
	lastBase := -1
	for _, p := range m.pairs {
		b, t := base[p[0]], edited[p[1]]
		if p[0] < lastBase {
			ed.Reordered = true
		}
		lastBase = max(lastBase, p[0])
		if b.ID != t.ID {
			if ed.Moved == nil {
				ed.Moved = map[string]string{}
			}
			ed.Moved[b.ID] = t.ID
		}
		if textChanged(b, t, !positional) {
			nt, _ := next.result().Task(t.ID)
			ed.Edited = append(ed.Edited, nt)
		}
	}
	for _, i := range m.added {
		nt, _ := next.result().Task(edited[i].ID)
		ed.Added = append(ed.Added, nt)
	}

	bp, tp := f.cur.result(), theirs.result()
	ed.Other = bp.Name != tp.Name || bp.Description != tp.Description || bp.Branch != tp.Branch ||
		!slices.Equal(bp.Validation, tp.Validation) ||
		// The bytes differ, with the statuses put back, and no task does.
		(len(ed.Added) == 0 && len(ed.Edited) == 0 && !ed.Reordered && len(m.deleted) == 0 && len(ed.Moved) == 0 &&
			!bytes.Equal(next.source(), f.cur.source()))

	// Deleted tasks come back, after those they depend on.
	left := slices.Clone(m.deleted)
	for len(left) > 0 {
		var failed []int
		var lastErr error
		for _, i := range left {
			out, t, err := f.restoreTask(next, i, positional)
			if err != nil {
				failed, lastErr = append(failed, i), err
				continue
			}
			next = out
			ed.Restored = append(ed.Restored, t)
			if t.ID != base[i].ID {
				if ed.Moved == nil {
					ed.Moved = map[string]string{}
				}
				ed.Moved[base[i].ID] = t.ID
			}
		}
		if len(failed) == len(left) {
			return nil, Edits{}, fmt.Errorf("restoring the deleted task %s: %w", base[failed[0]].ID, lastErr)
		}
		left = failed
	}
	return next, ed, nil
}

// revertStatus sets task id of cur back to st. A format that cannot write
// failed (the JSON ones) gets open for a failed task marked done.
func (f *File) revertStatus(cur parsed, id string, st Status) (parsed, error) {
	out, err := f.format.setStatus(cur, id, st)
	if err != nil {
		return nil, err
	}
	if t, _ := out.result().Task(id); st == StatusFailed && t.Status == StatusDone {
		return f.format.setStatus(out, id, StatusOpen)
	}
	return out, nil
}

// restoreTask appends task i of f.cur, deleted from cur: as it was in a
// JSON plan, else as the format writes a new task. A task known by its
// position, or whose id another task has taken, gets the next free one.
func (f *File) restoreTask(cur parsed, i int, positional bool) (parsed, Task, error) {
	t := f.cur.result().Tasks[i]
	p := cur.result()
	if _, taken := p.Task(t.ID); taken || (positional && isPosition(t.ID)) {
		t.ID = newTaskID(p, positional, "1")
	}
	out, ok := f.restoreJSON(cur, i, t.ID)
	if !ok {
		var err error
		if out, err = f.format.add(f.path, cur.source(), t); err != nil {
			return nil, Task{}, err
		}
	}
	next, err := f.format.read(f.path, out)
	if err != nil {
		return nil, Task{}, err
	}
	np := next.result()
	if len(np.Tasks) != len(p.Tasks)+1 {
		return nil, Task{}, fmt.Errorf("internal error: restoring %s in %s did not take", t.ID, f.path)
	}
	return next, np.Tasks[len(np.Tasks)-1], nil
}

// restoreJSON appends the object of f.cur's task i to cur's task list
// byte for byte, unknown keys and all, as task id. ok is false where that
// does not apply: not a JSON plan, or an object whose "id" is not id.
func (f *File) restoreJSON(cur parsed, i int, id string) (out []byte, ok bool) {
	reread := func(p parsed) *jsonTasks {
		d, ok := p.(*jsonTasks)
		if !ok {
			return nil
		}
		if d.nodes == nil { // derived by swapPasses: no tree
			np, err := f.format.read(f.path, d.data)
			if err != nil {
				return nil
			}
			d, _ = np.(*jsonTasks)
		}
		return d
	}
	base, into := reread(f.cur), reread(cur)
	if base == nil || into == nil {
		return nil, false
	}
	if i >= len(base.nodes) {
		return nil, false
	}
	n := base.nodes[i]
	if n.member("id") != nil && base.plan.Tasks[i].ID != id {
		return nil, false
	}
	obj := string(base.data[n.start:n.end])
	return appendElement(into.data, into.arr, func(jsonStyle) string { return obj }), true
}

// textChanged reports whether a task's text differs between two versions;
// ids count when they are names rather than positions.
func textChanged(a, b Task, ids bool) bool {
	return a.Title != b.Title || a.Description != b.Description || !slices.Equal(a.Criteria, b.Criteria) ||
		a.Priority != b.Priority || !slices.Equal(a.DependsOn, b.DependsOn) || a.Notes != b.Notes ||
		a.Category != b.Category || a.Agent != b.Agent || a.Model != b.Model || (ids && a.ID != b.ID)
}

// matching pairs the tasks of two versions of a plan.
type matching struct {
	pairs   [][2]int // base index, edited index, in edited order
	added   []int    // edited indexes
	deleted []int    // base indexes
}

// matchTasks pairs base's tasks with edited's: same id and title, then
// same title, then same id.
func matchTasks(base, edited []Task) matching {
	inBase := make([]int, len(base)) // edited index + 1, 0 unmatched
	inEdited := make([]int, len(edited))
	pass := func(same func(b, e Task) bool) {
		for i := range base {
			if inBase[i] != 0 {
				continue
			}
			for j := range edited {
				if inEdited[j] == 0 && same(base[i], edited[j]) {
					inBase[i], inEdited[j] = j+1, i+1
					break
				}
			}
		}
	}
	pass(func(b, e Task) bool { return b.ID == e.ID && b.Title == e.Title })
	pass(func(b, e Task) bool { return b.Title == e.Title })
	pass(func(b, e Task) bool { return b.ID == e.ID })
	var m matching
	for j, i := range inEdited {
		if i == 0 {
			m.added = append(m.added, j)
			continue
		}
		m.pairs = append(m.pairs, [2]int{i - 1, j})
	}
	for i, j := range inBase {
		if j == 0 {
			m.deleted = append(m.deleted, i)
		}
	}
	return m
}
