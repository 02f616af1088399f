package task

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// format reads and writes one kind of plan file. Each format lives in its own
// file (prd.go, tasksjson.go, ...) and is chosen by detect. Implementations
// are stateless: they work on the bytes, or the parse of the bytes, they are
// given, so File can re-read, merge and retry without caring which format it
// holds.
type format interface {
	// name is the format's name as `ralph tasks list --json` prints it.
	name() string
	// read reads and validates a plan. path is only used in errors, which
	// are *Error values (joined when there are several).
	read(path string, data []byte) (parsed, error)
	// setStatus returns the parse of cur's content with task id set to st,
	// changing only the bytes it must, or cur itself when the content
	// already says so. The result is validated as read validates: it is
	// what read would return for its bytes. It returns an error wrapping
	// ErrUnknownTask when no task has that id.
	setStatus(cur parsed, id string, st Status) (parsed, error)
	// add returns data with t appended as the plan's last task, written the
	// way the tasks before it are. t.ID is set (File.Add picks one).
	add(path string, data []byte, t Task) ([]byte, error)
	// encode writes p from scratch in this format: the writer of `ralph
	// convert`, `ralph init` and the examples in planning prompts.
	encode(p *Plan) ([]byte, error)
}

// parsed is what a format read from a plan's bytes: the plan, and the
// format's own record of where each task sits in those bytes, which lets it
// edit them in place without reading them again. Like a *Plan, it is never
// modified once read.
type parsed interface {
	// source returns the bytes that were read.
	source() []byte
	// result returns the plan read from them.
	result() *Plan
}

// Format names, as `ralph tasks list --json` prints them.
const (
	FormatPRD          = "prd.json"
	FormatTasksJSON    = "tasks.json"
	FormatProgress     = "progress.md"
	FormatChecklist    = "checklist"
	FormatHeadingPlan  = "heading-plan"
	FormatMarkdownJSON = "markdown-json"
)

// formats lists every format, in the order help texts show them.
var formats = []format{prdFormat{}, tasksJSONFormat{}, progressFormat{}, checklistFormat{}, headingFormat{}, mdJSONFormat{}}

// formatAliases are the short names the command line accepts.
var formatAliases = map[string]string{
	"prd": FormatPRD, "prd.json": FormatPRD, "json": FormatPRD,
	"tasks": FormatTasksJSON, "tasks.json": FormatTasksJSON, "ral": FormatTasksJSON,
	"progress": FormatProgress, "progress.md": FormatProgress, "rslph": FormatProgress, "portableralph": FormatProgress,
	"checklist": FormatChecklist, "markdown": FormatChecklist, "md": FormatChecklist, "fix_plan": FormatChecklist, "implementation_plan": FormatChecklist,
	"heading-plan": FormatHeadingPlan, "headings": FormatHeadingPlan, "heading": FormatHeadingPlan, "ralphex": FormatHeadingPlan,
	"markdown-json": FormatMarkdownJSON, "mdjson": FormatMarkdownJSON, "plan.md": FormatMarkdownJSON,
}

// defaultFiles are the file names each format conventionally has.
var defaultFiles = map[string]string{
	FormatPRD:          "prd.json",
	FormatTasksJSON:    "tasks.json",
	FormatProgress:     "progress.md",
	FormatChecklist:    "IMPLEMENTATION_PLAN.md",
	FormatHeadingPlan:  "PLAN.md",
	FormatMarkdownJSON: "plan.md",
}

// Formats returns the names of every plan format.
func Formats() []string {
	out := make([]string, len(formats))
	for i, f := range formats {
		out[i] = f.name()
	}
	return out
}

// ShortFormatNames are the names --format takes, one per format, in the
// order of Formats.
func ShortFormatNames() []string {
	return []string{"prd", "tasks", "progress", "checklist", "headings", "mdjson"}
}

// FormatName resolves a format name or alias (prd, tasks, progress,
// checklist, headings, mdjson, or a full name) to the format's name.
func FormatName(s string) (string, error) {
	if n, ok := formatAliases[strings.ToLower(strings.TrimSpace(s))]; ok {
		return n, nil
	}
	return "", fmt.Errorf("unknown plan format %q: want prd, tasks, progress, checklist, headings or mdjson", s)
}

// FormatForPath is the format a new plan file called path is written in:
// tasks.json is ral's, other .json files are prd.json, progress.md is
// progress.md and other markdown files are checklists. ok is false for
// other names.
func FormatForPath(path string) (name string, ok bool) {
	base := strings.ToLower(filepath.Base(path))
	switch {
	case base == "tasks.json":
		return FormatTasksJSON, true
	case strings.HasSuffix(base, ".json"):
		return FormatPRD, true
	case base == "progress.md":
		return FormatProgress, true
	case strings.HasSuffix(base, ".md"), strings.HasSuffix(base, ".markdown"):
		return FormatChecklist, true
	}
	return "", false
}

// DefaultFile returns the usual file name of a format (prd.json,
// IMPLEMENTATION_PLAN.md, ...).
func DefaultFile(format string) string { return defaultFiles[format] }

// Encode writes p from scratch in the named format. Ids, titles,
// descriptions, criteria, priorities, dependencies, notes and status are
// all written; reading the result back gives the same tasks.
func Encode(formatName string, p *Plan) ([]byte, error) {
	fm, err := formatByName(formatName)
	if err != nil {
		return nil, err
	}
	return fm.encode(p)
}

// Parse reads data as a plan file called path, detecting its format as Load
// does.
func Parse(path string, data []byte) (*Plan, error) {
	_, p, err := detectAndRead(path, data)
	if err != nil {
		return nil, err
	}
	return p.result(), nil
}

// parsePlan reads data with fm and returns the plan.
func parsePlan(fm format, path string, data []byte) (*Plan, error) {
	p, err := fm.read(path, data)
	if err != nil {
		return nil, err
	}
	return p.result(), nil
}

// ParseAs reads data as a plan in the named format.
func ParseAs(formatName, path string, data []byte) (*Plan, error) {
	fm, err := formatByName(formatName)
	if err != nil {
		return nil, err
	}
	return parsePlan(fm, path, data)
}

func formatByName(name string) (format, error) {
	n, err := FormatName(name)
	if err != nil {
		return nil, err
	}
	for _, f := range formats {
		if f.name() == n {
			return f, nil
		}
	}
	return nil, fmt.Errorf("unknown plan format %q", name) // unreachable: aliases name formats
}

// supported lists the formats detect accepts, for error messages.
const supported = `prd.json (a JSON object with "userStories"), tasks.json (a JSON array of tasks), ` +
	`progress.md (## Tasks with - [ ] items), a markdown checklist (- [ ] items), ` +
	`a heading plan (### Task N: sections), a markdown plan with a fenced json task list`

// taskHeadingRE matches the heading of a heading plan's task, once its ✅
// and ❌ marks are removed: "Task 3: Title", "Task 2.1 — Title", "Task 4".
var taskHeadingRE = regexp.MustCompile(`^(?i:task)\s+([A-Za-z0-9._-]*?[0-9][\w.-]*?)\s*(?::|\.\s|\s[-—–]\s|$)\s*(.*?)\s*$`)

// taskHeading reads a heading plan's task heading.
func taskHeading(text string) (id, title string, ok bool) {
	bare := strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(text, "✅", " "), "❌", " "))
	m := taskHeadingRE.FindStringSubmatch(bare)
	if m == nil {
		return "", "", false
	}
	return m[1], strings.Join(strings.Fields(m[2]), " "), true
}

// markdownFormat is a format read from parsed markdown: detect has parsed
// it already when it picked the format, and parsing is most of reading.
type markdownFormat interface {
	readMarkdown(path string, doc *mdDoc) (parsed, error)
}

// Every markdown format reads from detect's parse.
var (
	_ markdownFormat = checklistFormat{}
	_ markdownFormat = headingFormat{}
	_ markdownFormat = progressFormat{}
	_ markdownFormat = mdJSONFormat{}
)

// detectAndRead detects data's format and reads it, parsing markdown once
// for both.
func detectAndRead(path string, data []byte) (format, parsed, error) {
	fm, doc, err := detectDoc(path, data)
	if err != nil {
		return nil, nil, err
	}
	var p parsed
	if md, ok := fm.(markdownFormat); ok && doc != nil {
		p, err = md.readMarkdown(path, doc)
	} else {
		p, err = fm.read(path, data)
	}
	if err != nil {
		return nil, nil, err
	}
	return fm, p, nil
}

// detect picks the format of a plan from its content, then its name. A JSON
// object is prd.json even when it lacks "userStories", so that the user gets
// prd.json's error saying what to add rather than "unknown format".
func detect(path string, data []byte) (format, error) {
	fm, _, err := detectDoc(path, data)
	return fm, err
}

// detectDoc is detect, plus the markdown it parsed to decide, if it did.
func detectDoc(path string, data []byte) (format, *mdDoc, error) {
	body := bytes.TrimLeft(bytes.TrimPrefix(data, utf8BOM), " \t\r\n")
	base := strings.ToLower(filepath.Base(path))
	ext := filepath.Ext(base)
	switch {
	case len(body) > 0 && body[0] == '[':
		return tasksJSONFormat{}, nil, nil
	case len(body) > 0 && body[0] == '{':
		return prdFormat{}, nil, nil
	case base == "tasks.json":
		return tasksJSONFormat{}, nil, nil
	case ext == ".json":
		return prdFormat{}, nil, nil
	}
	doc := parseMarkdown(data)
	if base == "progress.md" {
		return progressFormat{}, doc, nil
	}
	if jsonTaskFence(doc) != nil {
		return mdJSONFormat{}, doc, nil
	}
	for _, h := range doc.headings {
		if _, _, ok := taskHeading(h.text); ok && h.level >= 2 {
			return headingFormat{}, doc, nil
		}
	}
	if isProgressDoc(doc) {
		return progressFormat{}, doc, nil
	}
	for _, it := range doc.items {
		if it.box != 0 {
			return checklistFormat{}, doc, nil
		}
	}
	switch ext {
	case ".md", ".markdown":
		return checklistFormat{}, doc, nil // its error says how tasks are written
	}
	return nil, nil, unsupported(path, "not a format ralph knows")
}

func unsupported(path, what string) error {
	return fmt.Errorf("%s: %w (%s); supported: %s", path, ErrUnsupported, what, supported)
}

// newTaskID picks the id of a task added to p. In a format that knows
// tasks by position it is the new task's position, when free; otherwise the
// next number in the style of the plan's last numbered id (US-004 after
// US-003), else def.
func newTaskID(p *Plan, positional bool, def string) string {
	taken := map[string]bool{}
	for _, t := range p.Tasks {
		taken[t.ID] = true
	}
	if pos := strconv.Itoa(len(p.Tasks) + 1); positional && !taken[pos] {
		return pos
	}
	for i := len(p.Tasks) - 1; i >= 0; i-- {
		prefix, num, width, ok := splitNumbered(p.Tasks[i].ID)
		if !ok {
			continue
		}
		for _, t := range p.Tasks {
			if pf, n, _, ok := splitNumbered(t.ID); ok && pf == prefix && n > num {
				num = n
			}
		}
		for {
			num++
			if id := fmt.Sprintf("%s%0*d", prefix, width, num); !taken[id] {
				return id
			}
		}
	}
	for n := len(p.Tasks) + 1; taken[def]; n++ {
		def = strconv.Itoa(n)
	}
	return def
}

var numberedRE = regexp.MustCompile(`^(.*?)([0-9]+)$`)

// splitNumbered splits "US-007" into "US-", 7 and its width 3.
func splitNumbered(id string) (prefix string, num, width int, ok bool) {
	m := numberedRE.FindStringSubmatch(id)
	if m == nil {
		return "", 0, 0, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return "", 0, 0, false
	}
	return m[1], n, len(m[2]), true
}
