package task

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// prd.json is the plan of snarktank/ralph and ralph-tui:
//
//	{"project" or "name", "branchName", "description",
//	 "userStories": [{"id", "title", "description", "acceptanceCriteria": [],
//	                  "priority", "passes", "notes", "dependsOn": []}]}
//
// A story is done when "passes" is true. Every other key, known or not, is
// kept byte for byte: the writer only ever replaces the bytes of one
// "passes" value, or inserts that one member when a story has none.
//
// prd.json has no failed state. Setting a story to StatusFailed leaves the
// file unchanged; the runner keeps failed tasks in its own state and passes
// them to Next as skipped.
type prdFormat struct{}

func (prdFormat) name() string { return "prd.json" }

func (prdFormat) parse(path string, data []byte) (*Plan, error) {
	d, err := readPRD(path, data)
	if err != nil {
		return nil, err
	}
	return d.plan, nil
}

func (prdFormat) setStatus(path string, data []byte, id string, st Status) ([]byte, error) {
	d, err := readPRD(path, data)
	if err != nil {
		return nil, err
	}
	i := d.index(id)
	if i < 0 {
		return nil, fmt.Errorf("%s: %w %q", path, ErrUnknownTask, id)
	}
	var want bool
	switch st {
	case StatusDone:
		want = true
	case StatusOpen:
		want = false
	case StatusFailed:
		return data, nil // no place for it in prd.json; see prdFormat
	default:
		return nil, fmt.Errorf("unknown task status %q", st)
	}

	story := d.stories[i]
	var out []byte
	if m := story.member("passes"); m != nil {
		v := m.val
		if (v.kind == jsonBool && v.boolean == want) || (v.kind == jsonNull && !want) {
			return data, nil
		}
		out = splice(data, v.start, v.end, strconv.FormatBool(want))
	} else {
		if !want {
			return data, nil // absent means not passing
		}
		out = insertMember(data, story, `"passes"`, "true")
	}

	// The edit is local, but a writer that corrupts a user's plan is the one
	// bug this package must not have: check before anyone writes it.
	check, err := readPRD(path, out)
	if err != nil {
		return nil, fmt.Errorf("internal error: setting %s to %s in %s made it invalid: %w", id, st, path, err)
	}
	if t, ok := check.plan.Task(id); !ok || t.Status != st {
		return nil, fmt.Errorf("internal error: setting %s to %s in %s did not take", id, st, path)
	}
	return out, nil
}

// insertMember adds key: val as the last member of obj, copying the
// indentation, line ending and key/value separator of the member before it.
func insertMember(data []byte, obj *jsonNode, key, val string) []byte {
	if len(obj.members) == 0 {
		return splice(data, obj.start+1, obj.start+1, key+": "+val)
	}
	last := obj.members[len(obj.members)-1]
	ws := last.keyStart
	for ws > obj.start+1 && strings.IndexByte(" \t\r\n", data[ws-1]) >= 0 {
		ws--
	}
	indent := string(data[ws:last.keyStart])
	if nl := strings.LastIndexByte(indent, '\n'); nl >= 0 {
		lineEnd := "\n"
		if nl > 0 && indent[nl-1] == '\r' {
			lineEnd = "\r\n"
		}
		indent = lineEnd + indent[nl+1:]
	}
	sep := string(data[last.keyEnd:last.val.start])
	return splice(data, last.val.end, last.val.end, ","+indent+key+sep+val)
}

// prdDoc is a validated prd.json: the plan, and each story's node so the
// writer can find its bytes.
type prdDoc struct {
	plan    *Plan
	stories []*jsonNode // parallel to plan.Tasks
}

func (d *prdDoc) index(id string) int {
	for i, t := range d.plan.Tasks {
		if t.ID == id {
			return i
		}
	}
	return -1
}

// prdChecker collects validation errors so the user sees all of them at once.
type prdChecker struct {
	path string
	doc  *jsonDoc
	errs []error
}

func (c *prdChecker) add(off int, field, msg string) {
	c.errs = append(c.errs, &Error{File: c.path, Line: c.doc.line(off), Field: field, Msg: msg})
}

// readPRD parses and validates a prd.json.
func readPRD(path string, data []byte) (*prdDoc, error) {
	doc, err := parseJSON(data)
	if err != nil {
		var se *errJSONSyntax
		if errors.As(err, &se) {
			return nil, &Error{File: path, Line: se.line, Msg: "invalid JSON: " + se.msg}
		}
		return nil, &Error{File: path, Msg: err.Error()}
	}
	c := &prdChecker{path: path, doc: doc}
	root := doc.root
	if root.kind != jsonObject {
		c.add(root.start, "", fmt.Sprintf(`want a JSON object with a "userStories" array, got %s`, root.kind))
		return nil, errors.Join(c.errs...)
	}

	plan := &Plan{Path: path, Format: prdFormat{}.name()}
	c.noDuplicates(root, "", "project", "name", "branchName", "description", "userStories")
	plan.Name = c.str(root, "", "project")
	if plan.Name == "" {
		plan.Name = c.str(root, "", "name")
	}
	plan.Branch = c.str(root, "", "branchName")
	plan.Description = c.str(root, "", "description")

	d := &prdDoc{plan: plan}
	us := root.member("userStories")
	switch {
	case us == nil:
		c.add(root.start, "userStories", `missing: a prd.json lists its tasks as "userStories": [{"id": "US-001", "title": "...", "passes": false}, ...]`)
		return nil, errors.Join(c.errs...)
	case us.val.kind != jsonArray:
		c.add(us.val.start, "userStories", fmt.Sprintf(`want an array of stories, got %s — write "userStories": [{"id": "US-001", ...}, ...]`, us.val.kind))
		return nil, errors.Join(c.errs...)
	}
	var fields []string // "userStories[i]" of each task: i skips nothing
	for i, n := range us.val.elems {
		field := fmt.Sprintf("userStories[%d]", i)
		if n.kind != jsonObject {
			c.add(n.start, field, fmt.Sprintf("want a story object, got %s", describe(n)))
			continue
		}
		plan.Tasks = append(plan.Tasks, c.story(n, field))
		d.stories = append(d.stories, n)
		fields = append(fields, field)
	}
	c.checkIDs(plan.Tasks, d.stories, fields)
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return d, nil
}

// storyKeys are the keys of a story ralph reads; a duplicate of one of them
// is an error, since which one counts would be a guess.
var storyKeys = []string{"id", "title", "description", "acceptanceCriteria", "priority", "passes", "notes", "dependsOn"}

func (c *prdChecker) story(n *jsonNode, field string) Task {
	c.noDuplicates(n, field+".", storyKeys...)
	t := Task{
		Line:        c.doc.line(n.start),
		Title:       c.str(n, field+".", "title"),
		Description: c.str(n, field+".", "description"),
		Notes:       c.str(n, field+".", "notes"),
		Criteria:    c.strs(n, field+".", "acceptanceCriteria"),
		DependsOn:   c.strs(n, field+".", "dependsOn"),
		Status:      StatusOpen,
	}

	switch m := n.member("id"); {
	case m == nil:
		c.add(n.start, field+".id", `missing: every story needs a unique "id", such as "US-001"`)
	case m.val.kind != jsonString:
		msg := "want a string, got " + describe(m.val)
		if m.val.kind == jsonNumber {
			msg += " — put it in quotes"
		}
		c.add(m.val.start, field+".id", msg)
	case strings.TrimSpace(m.val.str) == "":
		c.add(m.val.start, field+".id", `empty: every story needs a unique "id", such as "US-001"`)
	default:
		t.ID = m.val.str
	}

	if m := n.member("priority"); m != nil {
		v := m.val
		switch v.kind {
		case jsonNull:
		case jsonNumber:
			p, ok := wholeNumber(string(v.num))
			if !ok {
				c.add(v.start, field+".priority", "want a whole number, got "+string(v.num))
			}
			t.Priority = p
		default:
			msg := "want a number, got " + describe(v)
			if _, err := strconv.Atoi(v.str); v.kind == jsonString && err == nil {
				msg += " — remove the quotes"
			}
			c.add(v.start, field+".priority", msg)
		}
	}

	if m := n.member("passes"); m != nil {
		v := m.val
		switch v.kind {
		case jsonNull:
		case jsonBool:
			if v.boolean {
				t.Status = StatusDone
			}
		default:
			msg := "want true or false, got " + describe(v)
			if v.kind == jsonString && (v.str == "true" || v.str == "false") {
				msg += " — remove the quotes"
			}
			c.add(v.start, field+".passes", msg)
		}
	}
	return t
}

// checkIDs reports duplicate ids, dependsOn entries naming no story, and
// dependency cycles.
func (c *prdChecker) checkIDs(tasks []Task, nodes []*jsonNode, fields []string) {
	first := map[string]int{} // id -> index of its first story
	for i, t := range tasks {
		if t.ID == "" {
			continue
		}
		if j, dup := first[t.ID]; dup {
			c.add(nodes[i].member("id").val.start, fields[i]+".id",
				fmt.Sprintf("duplicate id %q (first on line %d)", t.ID, c.doc.line(nodes[j].member("id").val.start)))
			continue
		}
		first[t.ID] = i
	}
	for i, t := range tasks {
		if len(t.DependsOn) == 0 {
			continue
		}
		deps := nodes[i].member("dependsOn").val
		for k, dep := range t.DependsOn {
			if _, ok := first[dep]; !ok {
				c.add(deps.elems[k].start, fmt.Sprintf("%s.dependsOn[%d]", fields[i], k),
					fmt.Sprintf("unknown id %q", dep))
			}
		}
	}
	for _, cycle := range findCycles(tasks, first) {
		i := cycle[0]
		ids := make([]string, 0, len(cycle)+1)
		for _, j := range cycle {
			ids = append(ids, tasks[j].ID)
		}
		ids = append(ids, tasks[i].ID)
		c.add(nodes[i].member("dependsOn").val.start, fields[i]+".dependsOn",
			"dependency cycle: "+strings.Join(ids, " → "))
	}
}

// findCycles returns each dependency cycle once, as task indexes starting
// with the task earliest in the file. Unknown ids are ignored here (they are
// reported on their own).
func findCycles(tasks []Task, index map[string]int) [][]int {
	const (
		unseen = iota
		onStack
		finished
	)
	color := make([]int, len(tasks))
	var stack []int
	var cycles [][]int
	var visit func(i int)
	visit = func(i int) {
		color[i] = onStack
		stack = append(stack, i)
		for _, dep := range tasks[i].DependsOn {
			j, ok := index[dep]
			if !ok {
				continue
			}
			switch color[j] {
			case unseen:
				visit(j)
			case onStack:
				k := len(stack) - 1
				for stack[k] != j {
					k--
				}
				cycles = append(cycles, rotateToMin(stack[k:]))
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = finished
	}
	for i, t := range tasks {
		if color[i] == unseen && t.ID != "" {
			visit(i)
		}
	}
	return cycles
}

// rotateToMin returns a copy of cycle rotated to start at its smallest index.
func rotateToMin(cycle []int) []int {
	m := 0
	for k, v := range cycle {
		if v < cycle[m] {
			m = k
		}
	}
	return append(append([]int(nil), cycle[m:]...), cycle[:m]...)
}

// noDuplicates reports keys ralph reads that appear twice in n.
func (c *prdChecker) noDuplicates(n *jsonNode, prefix string, keys ...string) {
	for _, key := range keys {
		firstLine := 0
		for _, m := range n.members {
			if m.key != key {
				continue
			}
			if firstLine == 0 {
				firstLine = c.doc.line(m.keyStart)
				continue
			}
			c.add(m.keyStart, prefix+key, fmt.Sprintf("duplicate key (first on line %d)", firstLine))
		}
	}
}

// str reads an optional string member; null counts as absent.
func (c *prdChecker) str(n *jsonNode, prefix, key string) string {
	m := n.member(key)
	if m == nil || m.val.kind == jsonNull {
		return ""
	}
	if m.val.kind != jsonString {
		c.add(m.val.start, prefix+key, "want a string, got "+describe(m.val))
		return ""
	}
	return m.val.str
}

// strs reads an optional array of strings; null and [] give nil.
func (c *prdChecker) strs(n *jsonNode, prefix, key string) []string {
	m := n.member(key)
	if m == nil || m.val.kind == jsonNull {
		return nil
	}
	if m.val.kind != jsonArray {
		c.add(m.val.start, prefix+key, "want an array of strings, got "+describe(m.val))
		return nil
	}
	var out []string
	for k, e := range m.val.elems {
		if e.kind != jsonString {
			c.add(e.start, fmt.Sprintf("%s%s[%d]", prefix, key, k), "want a string, got "+describe(e))
			continue
		}
		out = append(out, e.str)
	}
	return out
}

// wholeNumber parses an integer priority; 2.0 counts, 2.5 does not.
func wholeNumber(s string) (int, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// describe shows a value in an error message: scalars as written, strings
// quoted and marked as strings (the usual mistake is "true" for true).
func describe(n *jsonNode) string {
	switch n.kind {
	case jsonString:
		s := n.str
		if r := []rune(s); len(r) > 40 {
			s = string(r[:40]) + "…"
		}
		return strconv.Quote(s) + " (a string)"
	case jsonNumber:
		return string(n.num)
	case jsonBool:
		return strconv.FormatBool(n.boolean)
	}
	return n.kind.String()
}
