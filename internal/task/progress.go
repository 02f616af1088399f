package task

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// progress.md is the plan and memory file of rslph and portableralph:
//
//	# Progress: NAME
//
//	## Status
//
//	IN_PROGRESS                        (RALPH_DONE when everything is done)
//
//	## Analysis
//
//	what exists and what is missing    (the plan's description)
//
//	## Tasks                           (portableralph: ## Task List)
//
//	### Phase 1: Foundation            (the tasks' category)
//
//	- [x] Task 1: Create the module
//	- [ ] Task 2: Add the parser
//
//	## Testing Strategy
//	## Completed This Iteration
//	## Recent Attempts
//	## Iteration Log
//
// Tasks are the checkbox items of the Tasks section, read with the grammar
// of mditem.go; done is "[x]", failed ralph's "[!]". When the last open
// task is marked done the Status section says RALPH_DONE, and when a task
// is reopened it says IN_PROGRESS again; RALPH_DONE alone never finishes a
// plan that still has open boxes. The last three sections are the runner's
// log (see RecordIteration, progresslog.go).
//
// The progress.md that ralph-tui writes is read too: "### US-001: Title"
// headings with a "- Status: completed" line under Completed Tasks and
// Current Task, and "- US-003: Title (pending)" items under Remaining
// Tasks. Its status changes rewrite the status word.
type progressFormat struct{}

func (progressFormat) name() string { return FormatProgress }

// progressDoc is a validated progress.md.
type progressDoc struct {
	*mdTasks
	// tui is set for ralph-tui's dialect: where each task's status word is.
	tui []tuiStatus
}

// tuiStatus locates the status of a ralph-tui task: the bytes of its
// status word, or, when it has none, where to add one and how.
type tuiStatus struct {
	start, end int    // the word; start == end when absent
	insert     string // text around a new word: "\n- Status: %s" or " (%s)"
}

var (
	tuiTitleRE = regexp.MustCompile(`^(.*?)\s*\(([A-Za-z_ -]+)\)\s*$`)
	tuiStateRE = regexp.MustCompile(`(?i)^\s*[-*]\s*status:\s*`)
)

// tuiWord maps a ralph-tui status word to a status.
func tuiWord(w string) Status {
	switch strings.ToLower(strings.TrimSpace(w)) {
	case "completed", "complete", "done", "passed", "passes", "finished":
		return StatusDone
	case "failed", "blocked", "error":
		return StatusFailed
	}
	return StatusOpen
}

func tuiWordFor(st Status) string {
	switch st {
	case StatusDone:
		return "completed"
	case StatusFailed:
		return "failed"
	default:
		// The other values need nothing here.
	}
	return "pending"
}

func (progressFormat) read(path string, data []byte) (parsed, error) {
	d, err := readProgress(path, data)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// asProgress is cur as progressFormat reads it.
func asProgress(cur parsed) (*progressDoc, error) {
	d, ok := cur.(*progressDoc)
	if !ok {
		return nil, fmt.Errorf("internal error: %T is not a progress.md", cur)
	}
	return d, nil
}

// isProgressDoc: a ## Tasks (or Task List) section with a ## Status, a
// "# Progress" title, or ralph-tui's sections.
func isProgressDoc(doc *mdDoc) bool {
	if doc.findHeading("Completed Tasks", "Remaining Tasks", "Current Task") != nil {
		return true
	}
	if doc.findHeading("Tasks", "Task List") == nil {
		return false
	}
	return doc.findHeading("Status") != nil || strings.HasPrefix(strings.ToLower(doc.title()), "progress")
}

// progressName is the plan name in "# Progress: NAME".
func progressName(doc *mdDoc) string {
	t := doc.title()
	if rest, ok := cutPrefixFold(t, "progress:"); ok {
		return strings.TrimSpace(rest)
	}
	return t
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func (progressFormat) readMarkdown(path string, doc *mdDoc) (parsed, error) {
	d, err := progressOf(path, doc)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// readProgress parses and validates a progress.md.
func readProgress(path string, data []byte) (*progressDoc, error) {
	return progressOf(path, parseMarkdown(data))
}

// progressOf reads the progress.md of parsed markdown.
func progressOf(path string, doc *mdDoc) (*progressDoc, error) {
	data := doc.src
	c := &mdChecker{path: path, doc: doc}
	desc := ""
	if h := doc.findHeading("Analysis"); h != nil {
		start, end := doc.section(h)
		desc = cleanBody(data[start:end])
	}
	tasksH := doc.findHeading("Tasks", "Task List")
	if tasksH == nil && doc.findHeading("Completed Tasks", "Remaining Tasks", "Current Task") != nil {
		return readTUIProgress(c, path, desc)
	}
	if tasksH == nil {
		c.add(0, "", "no ## Tasks section: a progress.md lists its tasks as \"- [ ] ...\" items under ## Tasks")
		return nil, c.err()
	}
	start, end := doc.section(tasksH)
	var tasks []mdTask
	for _, it := range doc.items {
		if it.lineStart < start || it.lineStart >= end || !isTaskItem(it) {
			continue
		}
		t := c.itemTask(it, len(tasks)+1)
		t.Category = phaseOf(doc, it.lineStart, start)
		tasks = append(tasks, t)
	}
	if len(tasks) == 0 && len(c.errs) == 0 {
		c.add(doc.line(tasksH.start), "", "no tasks: list them under ## Tasks as \"- [ ] ...\" items")
	}
	c.checkIDs(tasks)
	if len(c.errs) > 0 {
		return nil, c.err()
	}
	return &progressDoc{mdTasks: newMDTasks(doc, path, FormatProgress, tasks, progressName(doc), desc)}, nil
}

// phaseOf is the text of the last ### heading between from and off.
func phaseOf(doc *mdDoc, off, from int) string {
	phase := ""
	for _, h := range doc.headings {
		if h.start >= off {
			break
		}
		if h.start >= from && h.level >= 3 {
			phase = h.text
		}
	}
	return phase
}

// readTUIProgress reads ralph-tui's dialect.
func readTUIProgress(c *mdChecker, path, desc string) (*progressDoc, error) {
	doc := c.doc
	var tasks []mdTask
	var where []tuiStatus
	for _, sec := range []string{"Completed Tasks", "Current Task"} {
		h := doc.findHeading(sec)
		if h == nil {
			continue
		}
		start, end := doc.section(h)
		for _, th := range doc.headings {
			if th.start < start || th.start >= end || th.level != 3 {
				continue
			}
			id, title := parseHead(th.text)
			if id == "" {
				continue
			}
			t := mdTask{Task: Task{ID: id, Title: title, Line: doc.line(th.start), Status: StatusOpen}, explicit: true}
			if sec == "Completed Tasks" {
				t.Status = StatusDone
			}
			ws := tuiStatus{start: th.end, end: th.end, insert: "- Status: %s\n"}
			_, bodyEnd := doc.sectionUntilAny(th)
			for _, it := range doc.items {
				if it.lineStart < th.end || it.lineStart >= bodyEnd || it.depth != 0 {
					continue
				}
				if m := tuiStateRE.FindString(string(doc.src[it.lineStart:it.headEnd])); m != "" {
					ws = tuiStatus{start: it.lineStart + len(m), end: it.headEnd}
					t.Status = tuiWord(string(doc.src[ws.start:ws.end]))
					continue
				}
				if key, val, ok := parseMeta(it.head); ok {
					t.metas = append(t.metas, metaLine{key: key, value: val, line: doc.line(it.lineStart)})
				}
			}
			c.applyMeta(&t)
			tasks = append(tasks, t)
			where = append(where, ws)
		}
	}
	if h := doc.findHeading("Remaining Tasks"); h != nil {
		start, end := doc.section(h)
		for _, it := range doc.items {
			if it.lineStart < start || it.lineStart >= end || it.depth != 0 {
				continue
			}
			id, title := parseHead(it.head)
			if id == "" {
				continue
			}
			t := mdTask{Task: Task{ID: id, Title: title, Line: doc.line(it.lineStart), Status: StatusOpen}, explicit: true}
			ws := tuiStatus{start: it.headEnd, end: it.headEnd, insert: " (%s)"}
			if m := tuiTitleRE.FindStringSubmatchIndex(title); m != nil {
				t.Title = title[m[2]:m[3]]
				off := it.headEnd - len(title) // title ends the head
				ws = tuiStatus{start: off + m[4], end: off + m[5]}
				t.Status = tuiWord(title[m[4]:m[5]])
			}
			tasks = append(tasks, t)
			where = append(where, ws)
		}
	}
	if len(tasks) == 0 {
		c.add(0, "", "no tasks: ralph-tui's progress.md lists them as \"### US-001: Title\" headings and \"- US-002: Title (pending)\" items")
	}
	c.checkIDs(tasks)
	if len(c.errs) > 0 {
		return nil, c.err()
	}
	return &progressDoc{mdTasks: newMDTasks(doc, path, FormatProgress, tasks, progressName(doc), desc), tui: where}, nil
}

func (progressFormat) setStatus(cur parsed, id string, st Status) (parsed, error) {
	d, err := asProgress(cur)
	if err != nil {
		return nil, err
	}
	path, data := d.plan.Path, d.doc.src
	if d.tui == nil {
		out, err := setBox(d.mdTasks, id, st)
		if err != nil {
			return nil, err
		}
		if out == nil {
			return d, nil
		}
		next, err := checkStatus(path, out, id, st, readProgress)
		if err != nil {
			return nil, err
		}
		synced := syncRalphDone(next)
		if bytes.Equal(synced, out) {
			return next, nil
		}
		if next, err = readProgress(path, synced); err != nil {
			return nil, fmt.Errorf("internal error: updating the Status section of %s made it invalid: %w", path, err)
		}
		return next, nil
	}
	i := -1
	for k := range d.tasks {
		if d.tasks[k].ID == id {
			i = k
		}
	}
	if i < 0 {
		return nil, fmt.Errorf("%s: %w %q", path, ErrUnknownTask, id)
	}
	if d.tasks[i].Status == st {
		return d, nil
	}
	w := d.tui[i]
	word := tuiWordFor(st)
	if w.insert != "" {
		word = fmt.Sprintf(w.insert, word)
		if strings.HasPrefix(word, "- ") && w.start > 0 && data[w.start-1] != '\n' {
			word = lineEnding(data) + word
		}
	}
	next, err := checkStatus(path, splice(data, w.start, w.end, word), id, st, readProgress)
	if err != nil {
		return nil, err
	}
	return next, nil
}

// syncRalphDone returns d's content with the Status section agreeing with
// the boxes: RALPH_DONE once every task is done, IN_PROGRESS when one is
// not. A file without a Status section is left as it is.
func syncRalphDone(d *progressDoc) []byte {
	data := d.doc.src
	h := d.doc.findHeading("Status")
	if h == nil {
		return data
	}
	all := true
	for _, t := range d.plan.Tasks {
		all = all && t.Status == StatusDone
	}
	start, end := d.doc.section(h)
	body := string(data[start:end])
	has := strings.Contains(body, "RALPH_DONE")
	switch {
	case all && !has:
		// The first line of text in the section becomes RALPH_DONE.
		off := start
		for _, line := range strings.SplitAfter(body, "\n") {
			if t := strings.TrimSpace(line); t != "" {
				ls := off + strings.Index(line, t)
				return splice(data, ls, ls+len(t), "RALPH_DONE")
			}
			off += len(line)
		}
		return splice(data, start, start, lineEnding(data)+"RALPH_DONE"+lineEnding(data))
	case !all && has:
		i := start + strings.Index(body, "RALPH_DONE")
		return splice(data, i, i+len("RALPH_DONE"), "IN_PROGRESS")
	}
	return data
}

func (progressFormat) add(path string, data []byte, t Task) ([]byte, error) {
	d, err := readProgress(path, data)
	if err != nil {
		return nil, err
	}
	if d.tui != nil {
		return nil, fmt.Errorf("%s: ralph-tui writes this progress.md; add tasks to its prd.json instead", path)
	}
	read := func(path string, data []byte) (*mdTasks, error) {
		d, err := readProgress(path, data)
		if err != nil {
			return nil, err
		}
		return d.mdTasks, nil
	}
	last := d.tasks[len(d.tasks)-1].item
	out, err := addItemAfter(path, data, last, t, len(d.tasks)+1, read)
	if err != nil {
		return nil, err
	}
	added, err := readProgress(path, out)
	if err != nil {
		return nil, err
	}
	return syncRalphDone(added), nil
}

// progressTail is the sections of a new progress.md after its tasks.
const progressTail = "## Testing Strategy\n\n## Completed This Iteration\n\n## Recent Attempts\n\n## Iteration Log\n\n" + iterationLogHeader

func (progressFormat) encode(p *Plan) ([]byte, error) {
	var b strings.Builder
	name := p.Name
	if name == "" {
		name = "Plan"
	}
	status := "RALPH_DONE"
	for _, t := range p.Tasks {
		if t.Status != StatusDone {
			status = "IN_PROGRESS"
		}
	}
	if len(p.Tasks) == 0 {
		status = "IN_PROGRESS"
	}
	fmt.Fprintf(&b, "# Progress: %s\n\n## Status\n\n%s\n\n## Analysis\n\n", oneLine(name), status)
	if p.Description != "" {
		b.WriteString(strings.TrimSpace(p.Description) + "\n\n")
	}
	b.WriteString("## Tasks\n\n")
	phase := ""
	for i, t := range p.Tasks {
		if t.Category != phase && t.Category != "" {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "### %s\n\n", oneLine(t.Category))
			phase = t.Category
		}
		b.WriteString(renderItem(t, i+1, "- ", "\n"))
	}
	b.WriteString("\n" + progressTail)
	return []byte(b.String()), nil
}
