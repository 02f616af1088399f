package task

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A markdown checklist is the plan of the original Ralph technique
// (IMPLEMENTATION_PLAN.md, fix_plan.md) and of any tool that keeps a
// "- [ ]" list: every checkbox item that is not nested in another checkbox
// item is a task, in file order, bullets and numbered items alike. Each task
// item follows the grammar of mditem.go (id in the head or by position,
// description, "Key: value" metadata, nested items as criteria). The title
// (# heading) is the plan's name, the text under it its description.
//
// Done is "[x]", failed is ralph's "[!]"; a status change rewrites the one
// byte between the brackets.
type checklistFormat struct{}

func (checklistFormat) name() string { return FormatChecklist }

func (checklistFormat) read(path string, data []byte) (parsed, error) {
	d, err := readChecklist(path, data)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// mdTasks is a validated markdown plan: the plan and where each task is.
type mdTasks struct {
	doc   *mdDoc
	plan  *Plan
	tasks []mdTask // parallel to plan.Tasks
}

func (d *mdTasks) source() []byte { return d.doc.src }
func (d *mdTasks) result() *Plan  { return d.plan }

func (d *mdTasks) find(path, id string) (*mdTask, error) {
	for i := range d.tasks {
		if d.tasks[i].ID == id {
			return &d.tasks[i], nil
		}
	}
	return nil, fmt.Errorf("%s: %w %q", path, ErrUnknownTask, id)
}

func (checklistFormat) readMarkdown(path string, doc *mdDoc) (parsed, error) {
	d, err := checklistOf(path, doc)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// readChecklist parses and validates a checklist.
func readChecklist(path string, data []byte) (*mdTasks, error) {
	return checklistOf(path, parseMarkdown(data))
}

// checklistOf reads the checklist of parsed markdown.
func checklistOf(path string, doc *mdDoc) (*mdTasks, error) {
	c := &mdChecker{path: path, doc: doc}
	var tasks []mdTask
	for _, it := range doc.items {
		if isTaskItem(it) {
			tasks = append(tasks, c.itemTask(it, len(tasks)+1))
		}
	}
	if len(tasks) == 0 && len(c.errs) == 0 {
		c.add(0, "", `no tasks: a checklist plan lists its tasks as "- [ ] ..." items`)
	}
	c.checkIDs(tasks)
	if len(c.errs) > 0 {
		return nil, c.err()
	}
	return newMDTasks(doc, path, FormatChecklist, tasks, doc.title(), doc.overview(len(doc.src))), nil
}

func newMDTasks(doc *mdDoc, path, formatName string, tasks []mdTask, name, desc string) *mdTasks {
	p := &Plan{Path: path, Format: formatName, Name: name, Description: desc, Validation: validationCommands(string(doc.src))}
	for _, t := range tasks {
		p.Tasks = append(p.Tasks, t.Task)
	}
	return &mdTasks{doc: doc, plan: p, tasks: tasks}
}

// isTaskItem: a checkbox item with no checkbox item above it.
func isTaskItem(it *mdItem) bool {
	if it.box == 0 {
		return false
	}
	for p := it.parent; p != nil; p = p.parent {
		if p.box != 0 {
			return false
		}
	}
	return true
}

func (checklistFormat) setStatus(cur parsed, id string, st Status) (parsed, error) {
	d, ok := cur.(*mdTasks)
	if !ok {
		return nil, fmt.Errorf("internal error: %T is not a checklist", cur)
	}
	out, err := setBox(d, id, st)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return d, nil
	}
	next, err := checkStatus(d.plan.Path, out, id, st, readChecklist)
	if err != nil {
		return nil, err
	}
	return next, nil
}

// setBox returns d's content with checkbox task id's mark set to st, one
// byte, or nil when it already says so.
func setBox(d *mdTasks, id string, st Status) ([]byte, error) {
	path, data := d.plan.Path, d.doc.src
	t, err := d.find(path, id)
	if err != nil {
		return nil, err
	}
	switch st {
	case StatusDone, StatusOpen, StatusFailed:
	default:
		return nil, fmt.Errorf("unknown task status %q", st)
	}
	if t.Status == st {
		return nil, nil
	}
	return splice(data, t.item.boxOff, t.item.boxOff+1, string(boxMark(st))), nil
}

// checkStatus reads an edited plan again and checks the edit took: a
// writer that corrupts a user's plan is the one bug this package must not
// have. In markdown even a one-byte edit is not obviously local (goldmark
// knows "[x]" as a checkbox but "[!]" as text), so the result is read in
// full; the read is what the caller gets, and what File writes.
func checkStatus[T interface{ result() *Plan }](path string, out []byte, id string, st Status, read func(string, []byte) (T, error)) (T, error) {
	check, err := read(path, out)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("internal error: setting %s to %s in %s made it invalid: %w", id, st, path, err)
	}
	if t, ok := check.result().Task(id); !ok || t.Status != st {
		var zero T
		return zero, fmt.Errorf("internal error: setting %s to %s in %s did not take", id, st, path)
	}
	return check, nil
}

func (checklistFormat) add(path string, data []byte, t Task) ([]byte, error) {
	d, err := readChecklist(path, data)
	if err != nil {
		return nil, err
	}
	last := d.tasks[len(d.tasks)-1].item
	return addItemAfter(path, data, last, t, len(d.tasks)+1, readChecklist)
}

// orderedRE finds the number of an ordered list marker.
var orderedRE = regexp.MustCompile(`^([ \t>]*)([0-9]+)([.)][ \t]*)$`)

// addItemAfter inserts t as a new item after last (and its nested items),
// with last's indentation and marker (the next number for a numbered list).
func addItemAfter(path string, data []byte, last *mdItem, t Task, pos int, read func(string, []byte) (*mdTasks, error)) ([]byte, error) {
	prefix := last.prefix(data)
	if strings.TrimSpace(prefix) == "" {
		// The item's marker is alone on the line above ("*" then "  [x]
		// a"): its prefix is indentation only, which would not make an
		// item. A list of its own, at the margin, does.
		prefix = "- "
	}
	if m := orderedRE.FindStringSubmatch(prefix); m != nil {
		n, _ := strconv.Atoi(m[2])
		prefix = m[1] + strconv.Itoa(n+1) + m[3]
	}
	nl := lineEnding(data)
	at := last.end
	text := renderItem(t, pos, prefix, nl)
	if at > 0 && data[at-1] != '\n' {
		text = nl + text
	}
	out := splice(data, at, at, text)
	check, err := read(path, out)
	if err != nil {
		return nil, fmt.Errorf("internal error: adding a task to %s made it invalid: %w", path, err)
	}
	if got, ok := check.plan.Task(t.ID); !ok || got.Title != oneLine(t.Title) || len(check.plan.Tasks) != pos {
		return nil, fmt.Errorf("internal error: adding %s to %s did not take", t.ID, path)
	}
	return out, nil
}

func (checklistFormat) encode(p *Plan) ([]byte, error) {
	var b strings.Builder
	name := p.Name
	if name == "" {
		name = "Implementation Plan"
	}
	fmt.Fprintf(&b, "# %s\n\n", oneLine(name))
	if p.Description != "" {
		b.WriteString(strings.TrimSpace(p.Description) + "\n\n")
	}
	for i, t := range p.Tasks {
		b.WriteString(renderItem(t, i+1, "- ", "\n"))
	}
	return []byte(b.String()), nil
}
