package task

import (
	"bytes"
	"fmt"
	"strings"
)

// A heading plan is the shape of ralphex plans and of the step-by-step
// implementation plans people write for agents:
//
//	# Idle timeout
//
//	## Overview
//	Kill sessions that go silent.      (the plan's description)
//
//	### Task 1: Add the timer          (id 1, title "Add the timer")
//	**Files:** ...                     (the task's description)
//	- Depends on: 0                    ("Key: value" lines as in mditem.go)
//	- [x] add the field                (acceptance criteria)
//	- [ ] write the test
//
//	### Task 2: Wire the flag ✅
//
// Each "Task ID" heading (level 2 or lower) opens a task that runs to the
// next heading of the same or a higher level. A task is done when all its
// checkboxes are [x], or, without checkboxes, when its heading has a ✅.
// Failed is a ❌ in the heading, which wins over the boxes so that a failed
// task never reads as done. Marking done ticks every box (one byte each) or
// adds the ✅; a reset unticks them and removes the marks.
type headingFormat struct{}

func (headingFormat) name() string { return FormatHeadingPlan }

const (
	markDoneEmoji   = "✅"
	markFailedEmoji = "❌"
)

// headingDoc is a validated heading plan.
type headingDoc struct {
	*mdTasks
	secs []headingSec // parallel to tasks
}

// headingSec is where a heading task is.
type headingSec struct {
	h          *mdHeading
	start, end int       // the body
	boxes      []*mdItem // its checkbox items, at any depth
}

func (headingFormat) read(path string, data []byte) (parsed, error) {
	d, err := readHeadingPlan(path, data)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (headingFormat) readMarkdown(path string, doc *mdDoc) (parsed, error) {
	d, err := headingPlanOf(path, doc)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// readHeadingPlan parses and validates a heading plan.
func readHeadingPlan(path string, data []byte) (*headingDoc, error) {
	return headingPlanOf(path, parseMarkdown(data))
}

// headingPlanOf reads the heading plan of parsed markdown.
func headingPlanOf(path string, doc *mdDoc) (*headingDoc, error) {
	c := &mdChecker{path: path, doc: doc}
	var tasks []mdTask
	var secs []headingSec
	var taskHeads []*mdHeading
	for _, h := range doc.headings {
		if _, _, ok := taskHeading(h.text); ok && h.level >= 2 {
			taskHeads = append(taskHeads, h)
		}
	}
	for k, h := range taskHeads {
		id, title, _ := taskHeading(h.text)
		// A task runs to the next heading of its level or higher, or to the
		// next task, whatever its level: a box belongs to one task only.
		start, end := doc.section(h)
		if k+1 < len(taskHeads) {
			end = min(end, taskHeads[k+1].start)
		}
		sec := headingSec{h: h, start: start, end: end}
		t := mdTask{explicit: true, Task: Task{ID: id, Title: title, Line: doc.line(h.start), Status: StatusOpen}}
		if t.Title == "" {
			t.Title = "Task " + t.ID
		}
		c.sectionBody(&t, &sec)
		switch {
		case strings.Contains(h.text, markFailedEmoji):
			t.Status = StatusFailed
		case strings.Contains(h.text, markDoneEmoji), len(sec.boxes) > 0 && allBoxes(sec.boxes, markDone):
			t.Status = StatusDone
		case anyBox(sec.boxes, markFailed):
			t.Status = StatusFailed
		}
		c.applyMeta(&t)
		tasks = append(tasks, t)
		secs = append(secs, sec)
	}
	if len(tasks) == 0 {
		c.add(0, "", `no tasks: a heading plan has one "### Task 1: Title" heading per task`)
	}
	c.checkIDs(tasks)
	if len(c.errs) > 0 {
		return nil, c.err()
	}
	return &headingDoc{mdTasks: newMDTasks(doc, path, FormatHeadingPlan, tasks, doc.title(), doc.overview(len(doc.src))), secs: secs}, nil
}

// sectionBody reads a task section: checkbox items are criteria, "Key:
// value" lines metadata, the rest the description.
func (c *mdChecker) sectionBody(t *mdTask, sec *headingSec) {
	doc := c.doc
	var skip [][2]int // byte ranges of checkbox items
	for _, it := range doc.items {
		if it.lineStart < sec.start || it.lineStart >= sec.end || it.box == 0 {
			continue
		}
		sec.boxes = append(sec.boxes, it)
		if inRanges(skip, it.lineStart) {
			continue // nested in a box already counted as one criterion
		}
		crit := it.head
		if len(it.more) > 0 {
			crit = strings.TrimSpace(crit + " " + strings.Join(nonEmpty(it.more), " "))
		}
		if crit != "" {
			t.Criteria = append(t.Criteria, crit)
		}
		skip = append(skip, [2]int{it.lineStart, min(it.end, sec.end)})
	}
	var desc []string
	off := sec.start
	for _, line := range strings.SplitAfter(string(doc.src[sec.start:sec.end]), "\n") {
		at := off
		off += len(line)
		if inRanges(skip, at) {
			continue
		}
		text := strings.TrimRight(line, "\r\n")
		if key, name, ok := parseRoute(text); ok && !doc.inCode(at+len(text)-len(strings.TrimLeft(text, " \t"))) {
			t.metas = append(t.metas, metaLine{key: key, value: name, line: doc.line(at)})
			continue
		}
		bare := strings.TrimLeft(strings.TrimSpace(text), "-*+ ")
		if key, val, ok := parseMeta(bare); ok && !isRule(text) {
			t.metas = append(t.metas, metaLine{key: key, value: val, line: doc.line(at)})
			continue
		}
		desc = append(desc, text)
	}
	t.Description = cleanBody([]byte(strings.Join(desc, "\n")))
}

func inRanges(rs [][2]int, off int) bool {
	for _, r := range rs {
		if off >= r[0] && off < r[1] {
			return true
		}
	}
	return false
}

func allBoxes(its []*mdItem, mark byte) bool {
	for _, it := range its {
		if it.box != mark {
			return false
		}
	}
	return true
}

func anyBox(its []*mdItem, mark byte) bool {
	for _, it := range its {
		if it.box == mark {
			return true
		}
	}
	return false
}

func (headingFormat) setStatus(cur parsed, id string, st Status) (parsed, error) {
	d, ok := cur.(*headingDoc)
	if !ok {
		return nil, fmt.Errorf("internal error: %T is not a heading plan", cur)
	}
	path, data := d.plan.Path, d.doc.src
	i := -1
	for k := range d.tasks {
		if d.tasks[k].ID == id {
			i = k
		}
	}
	if i < 0 {
		return nil, fmt.Errorf("%s: %w %q", path, ErrUnknownTask, id)
	}
	switch st {
	case StatusDone, StatusOpen, StatusFailed:
	default:
		return nil, fmt.Errorf("unknown task status %q", st)
	}
	if d.tasks[i].Status == st {
		return d, nil
	}
	sec := d.secs[i]
	out := bytes.Clone(data)
	// Boxes first: one byte each, so no offset moves. The heading, before
	// them in the file, is edited last.
	for _, b := range sec.boxes {
		switch {
		case st == StatusDone && b.box != markDone:
			out[b.boxOff] = markDone
		case st == StatusOpen && b.box != markOpen:
			out[b.boxOff] = markOpen
		}
	}
	h := sec.h
	text := string(out[h.textStart:h.textEnd])
	want := text
	switch st {
	case StatusDone:
		want = withoutMark(want, markFailedEmoji)
		if len(sec.boxes) == 0 && !strings.Contains(want, markDoneEmoji) {
			want += " " + markDoneEmoji
		}
	case StatusOpen:
		want = withoutMark(withoutMark(want, markFailedEmoji), markDoneEmoji)
	case StatusFailed:
		want = withoutMark(want, markDoneEmoji)
		if !strings.Contains(want, markFailedEmoji) {
			want += " " + markFailedEmoji
		}
	}
	if want != text {
		out = splice(out, h.textStart, h.textEnd, want)
	}
	next, err := checkStatus(path, out, id, st, readHeadingPlan)
	if err != nil {
		return nil, err
	}
	return next, nil
}

// withoutMark removes every mark from a heading's text, with a space that
// separated it. Readers see a mark as a space (see taskHeading), so one
// between two words is replaced by a space: "00✅00" is the title "00 00",
// and must stay it.
func withoutMark(text, mark string) string {
	for {
		i := strings.Index(text, mark)
		if i < 0 {
			return text
		}
		j := i + len(mark)
		spaceBefore := i == 0 || text[i-1] == ' '
		spaceAfter := j == len(text) || text[j] == ' '
		switch {
		case spaceBefore && spaceAfter:
			if i > 0 {
				i--
			} else if j < len(text) {
				j++
			}
			text = text[:i] + text[j:]
		case spaceBefore || spaceAfter:
			text = text[:i] + text[j:]
		default:
			text = text[:i] + " " + text[j:]
		}
	}
}

func (headingFormat) add(path string, data []byte, t Task) ([]byte, error) {
	d, err := readHeadingPlan(path, data)
	if err != nil {
		return nil, err
	}
	last := d.secs[len(d.secs)-1]
	nl := lineEnding(data)
	at := last.end
	var b strings.Builder
	if at > 0 && data[at-1] != '\n' {
		b.WriteString(nl)
	}
	if !bytes.HasSuffix(bytes.TrimRight(data[:at], " \t"), []byte(nl+nl)) && at > 0 {
		b.WriteString(nl)
	}
	b.WriteString(renderSection(t, last.h.level, nl))
	if at < len(data) {
		b.WriteString(nl)
	}
	out := splice(data, at, at, b.String())
	check, err := readHeadingPlan(path, out)
	if err != nil {
		return nil, fmt.Errorf("internal error: adding a task to %s made it invalid: %w", path, err)
	}
	if got, ok := check.plan.Task(t.ID); !ok || got.Title != oneLine(t.Title) || len(check.plan.Tasks) != len(d.tasks)+1 {
		return nil, fmt.Errorf("internal error: adding %s to %s did not take", t.ID, path)
	}
	return out, nil
}

// renderSection writes t as a task section with a heading of the level.
func renderSection(t Task, level int, nl string) string {
	var b strings.Builder
	head := fmt.Sprintf("%s Task %s: %s", strings.Repeat("#", level), t.ID, oneLine(t.Title))
	switch {
	case t.Status == StatusFailed:
		head += " " + markFailedEmoji
	case t.Status == StatusDone && len(t.Criteria) == 0:
		head += " " + markDoneEmoji
	}
	b.WriteString(head + nl + nl)
	var route []string
	if t.Agent != "" {
		route = append(route, "Agent: "+t.Agent)
	}
	if t.Model != "" {
		route = append(route, "Model: "+t.Model)
	}
	if len(route) > 0 {
		b.WriteString(strings.Join(route, nl) + nl + nl)
	}
	if t.Description != "" {
		b.WriteString(strings.ReplaceAll(strings.TrimSpace(t.Description), "\n", nl) + nl + nl)
	}
	var meta []string
	if t.Priority != 0 {
		meta = append(meta, fmt.Sprintf("- Priority: %d", t.Priority))
	}
	if len(t.DependsOn) > 0 {
		meta = append(meta, "- Depends on: "+strings.Join(t.DependsOn, ", "))
	}
	if t.Notes != "" {
		meta = append(meta, "- Notes: "+oneLine(t.Notes))
	}
	if len(meta) > 0 {
		b.WriteString(strings.Join(meta, nl) + nl + nl)
	}
	mark := markOpen
	if t.Status == StatusDone {
		mark = markDone
	}
	for _, c := range t.Criteria {
		fmt.Fprintf(&b, "- [%c] %s%s", mark, oneLine(c), nl)
	}
	return strings.TrimRight(b.String(), nl) + nl
}

func (headingFormat) encode(p *Plan) ([]byte, error) {
	var b strings.Builder
	name := p.Name
	if name == "" {
		name = "Plan"
	}
	fmt.Fprintf(&b, "# %s\n\n", oneLine(name))
	if p.Description != "" {
		fmt.Fprintf(&b, "## Overview\n\n%s\n\n", strings.TrimSpace(p.Description))
	}
	b.WriteString("## Implementation Steps\n")
	for _, t := range p.Tasks {
		b.WriteString("\n" + renderSection(t, 3, "\n"))
	}
	return []byte(b.String()), nil
}
