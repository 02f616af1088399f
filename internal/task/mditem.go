package task

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// This file is the grammar of one task written as a markdown list item,
// shared by checklists and progress.md:
//
//	- [ ] US-002: Greet by name
//	  As a user, I want hello.sh NAME to greet NAME.
//	  Agent: codex
//	  Model: gpt-5.1-codex
//	  - Priority: 2
//	  - Depends on: US-001
//	  - Notes: keep it POSIX sh
//	  - hello.sh Ada prints "hello, Ada"
//	  - [ ] without an argument it still prints "hello, world"
//
// The head is "ID: Title" when it starts with an id such as US-002, T3 or
// P1.2 (letters then a number) or "Task 7" (rslph, portableralph), else the
// whole line is the title and the id is the task's 1-based position among
// the plan's tasks. Other lines of the item are its description; nested
// items are its acceptance criteria, except "Key: value" lines for the keys
// Priority, Depends on, Notes and ID, which may also be written as
// continuation lines. "Agent: NAME" and "Model: NAME" are continuation
// lines only (route.go).

var (
	// headRE splits "US-002: Title", "**T3** - Title", "Task 7: Title".
	headRE = regexp.MustCompile(`^(?:\*\*|__)?\[?(?:(?i:task)[ \t]+([A-Za-z0-9][\w.-]*)|([A-Za-z][A-Za-z0-9]*[-_.]?[0-9][\w.-]*))\]?(?:\*\*|__)?[ \t]*(?::|[ \t]-[ \t]|[ \t]—[ \t]|[ \t]–[ \t])(?:\*\*|__)?[ \t]*(.*)$`)
	// metaRE reads "Priority: 2", "**Depends on:** US-001", "- notes: x".
	metaRE = regexp.MustCompile(`^(?:\*\*|__)?(?i:(priority|depends on|depends-on|dependson|depends|dependencies|blocked by|notes?|id))(?:\*\*|__)?[ \t]*:(?:\*\*|__)?[ \t]*(.*)$`)
	// priorityRE accepts 2 and P2.
	priorityRE = regexp.MustCompile(`^[Pp]?([0-9]+)$`)
)

// parseHead splits an item's first line into an explicit id (or "") and
// the title.
func parseHead(head string) (id, title string) {
	head = strings.TrimSpace(head)
	if !strings.ContainsAny(head, ":-—–") {
		return "", head // every separator headRE knows has one of these
	}
	m := headRE.FindStringSubmatch(head)
	if m == nil {
		return "", head
	}
	id = m[1] + m[2]
	title = strings.TrimSpace(m[3])
	if strings.Count(title, "**")%2 == 1 {
		title = strings.TrimSpace(strings.TrimSuffix(title, "**"))
	}
	if title == "" {
		return "", head
	}
	return id, title
}

// metaLine is one "Key: value" line of a task.
type metaLine struct {
	key   string // canonical: priority, depends, notes, id; agent and model (route.go)
	value string
	line  int
}

// parseMeta reads a metadata line, or reports ok=false.
func parseMeta(s string) (key, value string, ok bool) {
	if strings.IndexByte(s, ':') < 0 {
		return "", "", false // most lines of a task, and metaRE needs one
	}
	m := metaRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", "", false
	}
	value = strings.TrimSpace(m[2])
	switch k := strings.ToLower(m[1]); k {
	case "priority", "id":
		key = k
	case "note", "notes":
		key = "notes"
	default:
		key = "depends"
	}
	return key, value, true
}

// splitIDs reads a dependency list: "US-001, US-002", "`T1` `T2`", "none".
func splitIDs(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == ';' }) {
		f = strings.Trim(f, "`*_[]()#")
		switch strings.ToLower(f) {
		case "", "none", "-", "n/a", "nothing", "and":
			continue
		}
		out = append(out, f)
	}
	return out
}

// mdChecker collects validation errors of a markdown plan.
type mdChecker struct {
	path string
	doc  *mdDoc
	errs []error
}

func (c *mdChecker) add(line int, field, msg string) {
	c.errs = append(c.errs, &Error{File: c.path, Line: line, Field: field, Msg: msg})
}

func (c *mdChecker) err() error { return errors.Join(c.errs...) }

// mdTask is a task read from markdown, with where its parts are.
type mdTask struct {
	Task
	item     *mdItem    // the task's list item; nil for heading plans
	explicit bool       // the id is written in the file
	metas    []metaLine // the metadata lines read
}

func (t *mdTask) metaLine(key string) int {
	for _, m := range t.metas {
		if m.key == key {
			return m.line
		}
	}
	return t.Line
}

// itemTask reads the task of a checkbox item at 1-based position pos.
func (c *mdChecker) itemTask(it *mdItem, pos int) mdTask {
	t := mdTask{item: it, Task: Task{Line: c.doc.line(it.lineStart), Status: StatusOpen}}
	switch it.box {
	case markDone:
		t.Status = StatusDone
	case markFailed:
		t.Status = StatusFailed
	}
	id, title := parseHead(it.head)
	t.ID, t.Title, t.explicit = id, title, id != ""
	var desc []string
	for k, l := range it.more {
		if key, name, ok := parseRoute(l); ok && it.moreAt[k] >= 0 && !c.doc.inCode(it.moreAt[k]) {
			t.metas = append(t.metas, metaLine{key: key, value: name, line: c.doc.line(it.moreAt[k])})
			continue
		}
		if key, val, ok := parseMeta(l); ok && it.moreAt[k] >= 0 {
			t.metas = append(t.metas, metaLine{key: key, value: val, line: c.doc.line(it.moreAt[k])})
			continue
		}
		desc = append(desc, l)
	}
	t.Description = strings.TrimSpace(strings.Join(desc, "\n"))
	for _, ch := range it.children {
		line := c.doc.line(ch.lineStart)
		if ch.box == 0 {
			if key, val, ok := parseMeta(ch.head); ok {
				t.metas = append(t.metas, metaLine{key: key, value: val, line: line})
				continue
			}
		}
		crit := ch.head
		if len(ch.more) > 0 {
			crit = strings.TrimSpace(crit + " " + strings.Join(nonEmpty(ch.more), " "))
		}
		if crit != "" {
			t.Criteria = append(t.Criteria, crit)
		}
	}
	c.applyMeta(&t)
	if t.ID == "" {
		t.ID = strconv.Itoa(pos)
	}
	if t.Title == "" {
		c.add(t.Line, "title", "empty: write what the task is after the checkbox, as in \"- [ ] Add the login page\"")
	}
	return t
}

// applyMeta applies the metadata lines to t, reporting bad values.
func (c *mdChecker) applyMeta(t *mdTask) {
	seen := map[string]int{}
	for _, m := range t.metas {
		if first, dup := seen[m.key]; dup {
			c.add(m.line, m.key, fmt.Sprintf("given twice (first on line %d)", first))
			continue
		}
		seen[m.key] = m.line
		switch m.key {
		case "priority":
			v := strings.Trim(m.value, "`*_")
			if v == "" || strings.EqualFold(v, "none") {
				continue
			}
			sm := priorityRE.FindStringSubmatch(v)
			p, err := 0, error(nil)
			if sm != nil {
				p, err = strconv.Atoi(sm[1])
			}
			if sm == nil || err != nil || p > 1<<31-1 {
				c.add(m.line, "priority", fmt.Sprintf("want a whole number, got %q — use a number, 1 runs first", v))
				continue
			}
			t.Priority = p
		case "depends":
			t.DependsOn = splitIDs(m.value)
		case "notes":
			t.Notes = m.value
		case "agent":
			t.Agent, t.AgentLine = m.value, m.line
		case "model":
			t.Model, t.ModelLine = m.value, m.line
		case "id":
			v := strings.Trim(m.value, "`*_ ")
			if v == "" {
				c.add(m.line, "id", "empty: write the task's id, or remove the line")
				continue
			}
			t.ID, t.explicit = v, true
		}
	}
}

// checkIDs reports duplicate ids, unknown dependencies and cycles.
func (c *mdChecker) checkIDs(tasks []mdTask) {
	plain := make([]Task, len(tasks))
	for i := range tasks {
		plain[i] = tasks[i].Task
	}
	for _, is := range graphIssues(plain) {
		t := &tasks[is.task]
		switch is.kind {
		case issueDuplicate:
			c.add(t.Line, "id", fmt.Sprintf("duplicate id %q (first on line %d)", t.ID, tasks[is.other].Line))
		case issueUnknownDep:
			c.add(t.metaLine("depends"), "depends on", fmt.Sprintf("unknown id %q", t.DependsOn[is.other]))
		case issueCycle:
			c.add(t.metaLine("depends"), "depends on", "dependency cycle: "+is.cycle)
		}
	}
}

func nonEmpty(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// boxMark is the checkbox mark that says st.
func boxMark(st Status) byte {
	switch st {
	case StatusDone:
		return markDone
	case StatusFailed:
		return markFailed
	default:
		// The other values need nothing here.
	}
	return markOpen
}

// oneLine makes s fit on one markdown line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// renderItem writes t as a checkbox item: prefix is the marker with its
// indentation ("- ", "  * ", "3. "), pos t's 1-based position (an id equal
// to it is not written), nl the line ending. The result ends with nl.
func renderItem(t Task, pos int, prefix, nl string) string {
	var b strings.Builder
	in := strings.Repeat(" ", len(prefix))
	head, idMeta := itemHead(t, pos)
	fmt.Fprintf(&b, "%s[%c] %s%s", prefix, boxMark(t.Status), head, nl)
	// The agent and model first: as continuation lines of the head they
	// are the item's text whatever the description holds (after a list in
	// it they would continue its last item).
	if t.Agent != "" {
		fmt.Fprintf(&b, "%sAgent: %s%s", in, t.Agent, nl)
	}
	if t.Model != "" {
		fmt.Fprintf(&b, "%sModel: %s%s", in, t.Model, nl)
	}
	if t.Description != "" {
		for l := range strings.SplitSeq(strings.TrimSpace(t.Description), "\n") {
			if l = strings.TrimSpace(l); l == "" {
				b.WriteString(nl) // a paragraph break inside the item
				continue
			}
			fmt.Fprintf(&b, "%s%s%s", in, l, nl)
		}
	}
	sub := in + "- "
	if idMeta {
		fmt.Fprintf(&b, "%sID: %s%s", sub, t.ID, nl)
	}
	if t.Priority != 0 {
		fmt.Fprintf(&b, "%sPriority: %d%s", sub, t.Priority, nl)
	}
	if len(t.DependsOn) > 0 {
		fmt.Fprintf(&b, "%sDepends on: %s%s", sub, strings.Join(t.DependsOn, ", "), nl)
	}
	if t.Notes != "" {
		fmt.Fprintf(&b, "%sNotes: %s%s", sub, oneLine(t.Notes), nl)
	}
	for _, c := range t.Criteria {
		fmt.Fprintf(&b, "%s%s%s", sub, oneLine(c), nl)
	}
	return b.String()
}

// itemHead is the head line of t, and whether its id needs an "ID:" line
// because it cannot be written in the head.
func itemHead(t Task, pos int) (head string, idMeta bool) {
	title := oneLine(t.Title)
	if t.ID == strconv.Itoa(pos) {
		if id, _ := parseHead(title); id == "" {
			return title, false
		}
		return title, true
	}
	head = t.ID + ": " + title
	if id, got := parseHead(head); id == t.ID && got == title {
		return head, false
	}
	return title, true
}
