package task

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// This file holds what the three JSON task formats share: prd.json's
// userStories, ral's tasks.json array and the fenced JSON task list of a
// markdown plan are all arrays of task objects with "passes" for done.
//
// Failure: the runner's SetStatus(failed) leaves these files as they are.
// They are shared with the tools that own them (snarktank's ralph.sh,
// ralph-tui, ral), none of which has a failed state, and a key they would
// not read only leaves the user's file changed; ralph keeps failed tasks in
// .ralph/state.json, where `ralph tasks list` and the runner find them. A
// "failed": true key is read, though, and written by `ralph convert` from a
// plan that records failure, so that a round trip through JSON keeps it;
// marking such a task done or open removes the key. "passes": true always
// wins over it: a failed task is never done.

// jsonRules are the differences between the JSON task formats.
type jsonRules struct {
	// positional: a task may lack "id"; it is then known by its 1-based
	// position, as ral's tasks.json identifies tasks by index. Integer
	// ids are accepted too.
	positional bool
	// criteria are the keys holding acceptance criteria, first found wins.
	criteria []string
	// titleFromDescription: without "title", the description is the title
	// (a ral task is one "description" line plus steps).
	titleFromDescription bool
	// noun is what the format calls a task ("story", "task"), and
	// idExample an id it would have, for messages.
	noun      string
	idExample string
}

// jsonTasks is a validated JSON task list: the plan, where the list sits,
// and each task's node so writers can find its bytes.
type jsonTasks struct {
	data []byte // the file's bytes (doc's are masked in a markdown plan)
	plan *Plan
	// doc, arr and nodes are the tree of data, for the edits that add or
	// remove members; nil in a parse that swapPasses derived, where only
	// passes is kept up to date (those edits read the file again).
	doc   *jsonDoc
	arr   *jsonNode   // the array of tasks
	nodes []*jsonNode // parallel to plan.Tasks
	// passes is where each task's "passes" value is; failed whether it has
	// "failed": true. Both parallel plan.Tasks.
	passes []jsonLiteral
	failed []bool
	// whole: the JSON document is the whole file, as in prd.json and
	// tasks.json but not in a markdown plan, which reads more around it.
	whole bool
}

// jsonLiteral is the byte range of a true, false or null value; start is
// -1 when there is no value.
type jsonLiteral struct {
	start, end int
}

func (d *jsonTasks) source() []byte { return d.data }
func (d *jsonTasks) result() *Plan  { return d.plan }

func (d *jsonTasks) index(id string) int {
	for i, t := range d.plan.Tasks {
		if t.ID == id {
			return i
		}
	}
	return -1
}

// jsonChecker collects validation errors so the user sees all of them at
// once.
type jsonChecker struct {
	path string
	doc  *jsonDoc
	errs []error
}

func (c *jsonChecker) add(off int, field, msg string) {
	c.errs = append(c.errs, &Error{File: c.path, Line: c.doc.line(off), Field: field, Msg: msg})
}

func (c *jsonChecker) err() error { return errors.Join(c.errs...) }

// parseJSONDoc parses data, turning syntax errors into *Error values.
func parseJSONDoc(path string, data []byte) (*jsonDoc, error) {
	doc, err := parseJSON(data)
	if err != nil {
		var se *errJSONSyntax
		if errors.As(err, &se) {
			return nil, &Error{File: path, Line: se.line, Msg: "invalid JSON: " + se.msg}
		}
		return nil, &Error{File: path, Msg: err.Error()}
	}
	return doc, nil
}

// readTasks reads the task objects of arr; prefix is the field path of the
// array ("userStories", "" for a root array).
func (c *jsonChecker) readTasks(arr *jsonNode, prefix string, r jsonRules) *jsonTasks {
	d := &jsonTasks{data: c.doc.data, doc: c.doc, arr: arr, plan: &Plan{}}
	var fields []string
	if n := len(arr.elems); n > 0 {
		d.plan.Tasks, d.nodes, fields = make([]Task, 0, n), make([]*jsonNode, 0, n), make([]string, 0, n)
		d.passes, d.failed = make([]jsonLiteral, 0, n), make([]bool, 0, n)
	}
	for i, n := range arr.elems {
		field := fmt.Sprintf("%s[%d]", prefix, i)
		if n.kind != jsonObject {
			c.add(n.start, field, fmt.Sprintf("want a %s object, got %s", r.noun, describe(n)))
			continue
		}
		t := c.task(n, field, len(d.plan.Tasks)+1, r)
		d.plan.Tasks = append(d.plan.Tasks, t)
		d.nodes = append(d.nodes, n)
		lit := jsonLiteral{start: -1, end: -1}
		if m := n.member("passes"); m != nil && (m.val.kind == jsonBool || m.val.kind == jsonNull) {
			lit = jsonLiteral{start: m.val.start, end: m.val.end}
		}
		d.passes = append(d.passes, lit)
		m := n.member("failed")
		d.failed = append(d.failed, m != nil && m.val.kind == jsonBool && m.val.boolean)
		fields = append(fields, field)
	}
	c.checkIDs(d.plan.Tasks, d.nodes, fields)
	return d
}

// taskKeys are the keys of a task ralph reads; a duplicate of one of them is
// an error, since which one counts would be a guess.
var taskKeys = []string{"id", "title", "description", "acceptanceCriteria", "steps", "category", "priority", "passes", "failed", "notes", "dependsOn", "agent", "model"}

// task reads one task object; pos is its 1-based position among the tasks.
func (c *jsonChecker) task(n *jsonNode, field string, pos int, r jsonRules) Task {
	c.noDuplicates(n, field+".", taskKeys...)
	t := Task{
		Line:        c.doc.line(n.start),
		Title:       c.str(n, field+".", "title"),
		Description: c.str(n, field+".", "description"),
		Notes:       c.str(n, field+".", "notes"),
		Category:    c.str(n, field+".", "category"),
		Status:      StatusOpen,
	}
	for _, key := range r.criteria {
		if n.member(key) != nil {
			t.Criteria = c.strs(n, field+".", key)
			break
		}
	}
	t.DependsOn = c.strs(n, field+".", "dependsOn")
	t.Agent, t.AgentLine = c.routeName(n, field+".", "agent")
	t.Model, t.ModelLine = c.routeName(n, field+".", "model")
	if r.titleFromDescription && t.Title == "" {
		t.Title, t.Description = t.Description, ""
		if t.Title == "" && n.member("title") == nil && n.member("description") == nil {
			c.add(n.start, field+".description", `missing: every task needs a "description" (or a "title") saying what to do`)
		}
	}

	switch m := n.member("id"); {
	case m == nil && r.positional:
		t.ID = strconv.Itoa(pos)
	case m == nil:
		c.add(n.start, field+".id", fmt.Sprintf(`missing: every %s needs a unique "id", such as %q`, r.noun, r.idExample))
	case m.val.kind == jsonNumber && r.positional:
		if v, ok := wholeNumber(string(m.val.num)); ok {
			t.ID = strconv.Itoa(v)
		} else {
			c.add(m.val.start, field+".id", "want a string or a whole number, got "+string(m.val.num))
		}
	case m.val.kind != jsonString:
		msg := "want a string, got " + describe(m.val)
		if m.val.kind == jsonNumber {
			msg += " — put it in quotes"
		}
		c.add(m.val.start, field+".id", msg)
	case strings.TrimSpace(m.val.str) == "":
		c.add(m.val.start, field+".id", fmt.Sprintf(`empty: every %s needs a unique "id", such as %q`, r.noun, r.idExample))
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
			} else if v.kind == jsonString {
				msg += " — use a number, 1 runs first"
			}
			c.add(v.start, field+".priority", msg)
		}
	}

	passes := c.boolean(n, field+".", "passes")
	failed := c.boolean(n, field+".", "failed")
	switch {
	case passes:
		t.Status = StatusDone
	case failed:
		t.Status = StatusFailed
	}
	return t
}

// boolean reads an optional boolean member; null counts as false. The usual
// mistake, "true" in quotes, gets a message saying so.
func (c *jsonChecker) boolean(n *jsonNode, prefix, key string) bool {
	m := n.member(key)
	if m == nil {
		return false
	}
	v := m.val
	switch v.kind {
	case jsonNull:
		return false
	case jsonBool:
		return v.boolean
	default:
		// The other values need nothing here.
	}
	msg := "want true or false, got " + describe(v)
	if v.kind == jsonString && (v.str == "true" || v.str == "false") {
		msg += " — remove the quotes"
	}
	c.add(v.start, prefix+key, msg)
	return false
}

// checkIDs reports duplicate ids, dependsOn entries naming no task, and
// dependency cycles.
func (c *jsonChecker) checkIDs(tasks []Task, nodes []*jsonNode, fields []string) {
	idAt := func(i int) int {
		if m := nodes[i].member("id"); m != nil {
			return m.val.start
		}
		return nodes[i].start
	}
	for _, is := range graphIssues(tasks) {
		i := is.task
		switch is.kind {
		case issueDuplicate:
			c.add(idAt(i), fields[i]+".id",
				fmt.Sprintf("duplicate id %q (first on line %d)", tasks[i].ID, c.doc.line(idAt(is.other))))
		case issueUnknownDep:
			deps := nodes[i].member("dependsOn").val
			c.add(deps.elems[is.other].start, fmt.Sprintf("%s.dependsOn[%d]", fields[i], is.other),
				fmt.Sprintf("unknown id %q", tasks[i].DependsOn[is.other]))
		case issueCycle:
			c.add(nodes[i].member("dependsOn").val.start, fields[i]+".dependsOn", "dependency cycle: "+is.cycle)
		}
	}
}

// noDuplicates reports keys ralph reads that appear twice in n.
func (c *jsonChecker) noDuplicates(n *jsonNode, prefix string, keys ...string) {
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
func (c *jsonChecker) str(n *jsonNode, prefix, key string) string {
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

// routeName reads a task's optional "agent" or "model": a string of one
// word (see route.go), and the line of its key. null and "" are absent.
func (c *jsonChecker) routeName(n *jsonNode, prefix, key string) (name string, line int) {
	m := n.member(key)
	if m == nil || m.val.kind == jsonNull || (m.val.kind == jsonString && m.val.str == "") {
		return "", 0
	}
	if m.val.kind != jsonString {
		c.add(m.val.start, prefix+key, "want a string, got "+describe(m.val))
		return "", 0
	}
	if !routeName.MatchString(m.val.str) {
		c.add(m.val.start, prefix+key, fmt.Sprintf("want the name of one %s, one word such as %q, got %s", key, routeExample[key], describe(m.val)))
		return "", 0
	}
	return m.val.str, c.doc.line(m.keyStart)
}

// routeExample is a name for each key, for messages.
var routeExample = map[string]string{"agent": "codex", "model": "opus"}

// strs reads an optional array of strings; null and [] give nil.
func (c *jsonChecker) strs(n *jsonNode, prefix, key string) []string {
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
	default:
		// The other values need nothing here.
	}
	return n.kind.String()
}

// setJSONStatus returns the parse of d's content with task id set to st:
// "passes" carries done; failure is not written (see the top of this file).
// read reads the format, to validate a result that swapPasses cannot vouch
// for.
func setJSONStatus(d *jsonTasks, id string, st Status, read func(path string, data []byte) (*jsonTasks, error)) (*jsonTasks, error) {
	path := d.plan.Path
	i := d.index(id)
	if i < 0 {
		return nil, fmt.Errorf("%s: %w %q", path, ErrUnknownTask, id)
	}
	switch st {
	case StatusDone, StatusOpen, StatusFailed:
	default:
		return nil, fmt.Errorf("unknown task status %q", st)
	}
	if d.plan.Tasks[i].Status == st || st == StatusFailed {
		return d, nil // failed: see the top of this file
	}
	if next, ok := d.swapPasses(i, st); ok {
		return next, nil
	}
	if d.nodes == nil {
		// Derived by swapPasses: no tree to find members in.
		var err error
		if d, err = read(path, d.data); err != nil {
			return nil, fmt.Errorf("internal error: reading %s again: %w", path, err)
		}
	}
	out := d.data
	// passes: true only for done; a failed or reopened task must not pass.
	n := d.nodes[i]
	if m := n.member("passes"); m != nil {
		want := st == StatusDone
		v := m.val
		if !(v.kind == jsonBool && v.boolean == want) && !(v.kind == jsonNull && !want) {
			out = splice(out, v.start, v.end, strconv.FormatBool(want))
		}
	} else if st == StatusDone {
		out = insertMember(out, n, `"passes"`, "true")
	}
	// A failed task that is done or open again loses its "failed": read
	// the new offsets first.
	if d.failed[i] {
		nd, err := read(path, out)
		if err != nil {
			return nil, fmt.Errorf("internal error: setting %s to %s in %s made it invalid: %w", id, st, path, err)
		}
		out = deleteMember(out, nd.nodes[i], "failed")
	}
	next, err := read(path, out)
	if err != nil {
		return nil, fmt.Errorf("internal error: setting %s to %s in %s made it invalid: %w", id, st, path, err)
	}
	return next, nil
}

// swapPasses is the usual status change, done or open again, when it is
// one "passes" literal replaced by true or false: it splices the literal
// and derives the parse of the result from d instead of reading the file
// again, which is most of the cost of a status change (and grows with the
// plan, while this does not).
//
// Why the derived parse is what reading the result would give: d is the
// validated parse of d.data, and [start, end) is exactly one literal value
// token in it (checked against the bytes below). Replacing a value token
// by another value token keeps the document valid JSON with the same
// tree: every other value, key and line is the same, and every offset
// after the token moves by the difference in length. What read checks
// about "passes" is that it is a boolean or null, which true and false
// are; and the status read from a task is done when "passes" is true,
// else failed when "failed" is true, else open, so with no "failed": true
// (tasks with one take the general path) it is exactly st. Only the whole
// JSON file qualifies: a markdown plan also reads the prose around its
// JSON block (Validation Commands may even include it), which is left to
// a full read. checkSetStatus and the fuzz targets compare this result
// with a full read of the new bytes.
func (d *jsonTasks) swapPasses(i int, st Status) (*jsonTasks, bool) {
	lit := d.passes[i]
	if !d.whole || d.failed[i] || lit.start < 0 {
		return nil, false
	}
	switch string(d.data[lit.start:lit.end]) {
	case "true", "false", "null":
	default:
		return nil, false // not the parse of these bytes: take the long way
	}
	text := strconv.FormatBool(st == StatusDone)
	out := splice(d.data, lit.start, lit.end, text)
	delta := len(text) - (lit.end - lit.start)

	plan := *d.plan
	plan.Tasks = slices.Clone(d.plan.Tasks)
	plan.Tasks[i].Status = st
	passes := slices.Clone(d.passes)
	for k, p := range passes {
		if p.start > lit.start {
			passes[k] = jsonLiteral{start: p.start + delta, end: p.end + delta}
		}
	}
	passes[i] = jsonLiteral{start: lit.start, end: lit.start + len(text)}
	return &jsonTasks{data: out, plan: &plan, passes: passes, failed: d.failed, whole: true}, true
}

// addJSONTask appends t as the last task of the list read reads, rendered
// by render in the layout of the tasks before it.
func addJSONTask(path string, data []byte, t Task, read func(path string, data []byte) (*jsonTasks, error), render func(t Task, st jsonStyle) string) ([]byte, error) {
	d, err := read(path, data)
	if err != nil {
		return nil, err
	}
	out := appendElement(data, d.arr, func(st jsonStyle) string { return render(t, st) })
	check, err := read(path, out)
	if err != nil {
		return nil, fmt.Errorf("internal error: adding a task to %s made it invalid: %w", path, err)
	}
	if len(check.plan.Tasks) != len(d.plan.Tasks)+1 {
		return nil, fmt.Errorf("internal error: adding a task to %s did not take", path)
	}
	return out, nil
}

// storyMembers are t's members in snarktank's key order, for prd.json.
func storyMembers(t Task, st jsonStyle) []jsonKV {
	m := []jsonKV{{"id", quoteJSON(t.ID)}, {"title", quoteJSON(t.Title)}}
	if t.Description != "" {
		m = append(m, jsonKV{"description", quoteJSON(t.Description)})
	}
	if t.Category != "" {
		m = append(m, jsonKV{"category", quoteJSON(t.Category)})
	}
	m = append(m, jsonKV{"acceptanceCriteria", jsonStrings(t.Criteria, st, 1)})
	if t.Priority != 0 {
		m = append(m, jsonKV{"priority", strconv.Itoa(t.Priority)})
	}
	m = appendRoute(m, t)
	m = append(m, jsonKV{"passes", strconv.FormatBool(t.Status == StatusDone)})
	if t.Status == StatusFailed {
		m = append(m, jsonKV{"failed", "true"})
	}
	if t.Notes != "" {
		m = append(m, jsonKV{"notes", quoteJSON(t.Notes)})
	}
	if len(t.DependsOn) > 0 {
		m = append(m, jsonKV{"dependsOn", jsonStrings(t.DependsOn, jsonStyle{compact: true}, 0)})
	}
	return m
}

// ralMembers are t's members in ral's key order, for tasks.json and the
// JSON task list of a markdown plan. pos is t's 1-based position: an id
// equal to it is not written (ral identifies tasks by index).
func ralMembers(t Task, pos int, st jsonStyle) []jsonKV {
	var m []jsonKV
	if t.ID != strconv.Itoa(pos) {
		m = append(m, jsonKV{"id", quoteJSON(t.ID)})
	}
	m = append(m, jsonKV{"category", quoteJSON(t.Category)})
	if t.Description != "" {
		m = append(m, jsonKV{"title", quoteJSON(t.Title)}, jsonKV{"description", quoteJSON(t.Description)})
	} else {
		m = append(m, jsonKV{"description", quoteJSON(t.Title)})
	}
	m = append(m, jsonKV{"steps", jsonStrings(t.Criteria, st, 1)})
	if t.Priority != 0 {
		m = append(m, jsonKV{"priority", strconv.Itoa(t.Priority)})
	}
	if len(t.DependsOn) > 0 {
		m = append(m, jsonKV{"dependsOn", jsonStrings(t.DependsOn, jsonStyle{compact: true}, 0)})
	}
	m = appendRoute(m, t)
	m = append(m, jsonKV{"passes", strconv.FormatBool(t.Status == StatusDone)})
	if t.Status == StatusFailed {
		m = append(m, jsonKV{"failed", "true"})
	}
	if t.Notes != "" {
		m = append(m, jsonKV{"notes", quoteJSON(t.Notes)})
	}
	return m
}

// appendRoute adds t's "agent" and "model", when it names them.
func appendRoute(m []jsonKV, t Task) []jsonKV {
	if t.Agent != "" {
		m = append(m, jsonKV{"agent", quoteJSON(t.Agent)})
	}
	if t.Model != "" {
		m = append(m, jsonKV{"model", quoteJSON(t.Model)})
	}
	return m
}

// renderTaskArray writes tasks as a JSON array at indentation indent, each
// task's members given by members.
func renderTaskArray(tasks []Task, indent string, members func(t Task, pos int, st jsonStyle) []jsonKV) string {
	if len(tasks) == 0 {
		return "[]"
	}
	st := jsonStyle{indent: indent + "  ", unit: "  ", lineEnd: "\n"}
	parts := make([]string, len(tasks))
	for i, t := range tasks {
		parts[i] = st.indent + renderObject(members(t, i+1, st), st)
	}
	return "[\n" + strings.Join(parts, ",\n") + "\n" + indent + "]"
}
