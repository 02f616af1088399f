package task

import (
	"bytes"
	"fmt"
	"strings"
)

// A markdown plan whose task list is a fenced JSON block: the plan.md of
// ral's first workflow, prose about the project around
//
//	```json
//	[{"category": "setup", "description": "...", "steps": [...], "passes": false}]
//	```
//
// The first ```json block holding an array with "passes" is the task list;
// its tasks read and change as in tasks.json (ids by position or "id").
// The title (# heading) is the plan's name and the Overview or Project
// Overview section its description. Edits touch only the block's bytes.
type mdJSONFormat struct{}

func (mdJSONFormat) name() string { return FormatMarkdownJSON }

func (mdJSONFormat) read(path string, data []byte) (parsed, error) {
	d, err := readMDJSON(path, data)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (mdJSONFormat) setStatus(cur parsed, id string, st Status) (parsed, error) {
	d, err := asJSONTasks(cur)
	if err != nil {
		return nil, err
	}
	return setJSONStatus(d, id, st, readMDJSON)
}

func (mdJSONFormat) add(path string, data []byte, t Task) ([]byte, error) {
	return addRalTask(path, data, t, readMDJSON)
}

func (mdJSONFormat) encode(p *Plan) ([]byte, error) {
	var b strings.Builder
	name := p.Name
	if name == "" {
		name = "Project Plan"
	}
	fmt.Fprintf(&b, "# %s\n\n## Project Overview\n\n", oneLine(name))
	if p.Description != "" {
		b.WriteString(strings.TrimSpace(p.Description) + "\n\n")
	} else {
		b.WriteString("[Describe the project here.]\n\n")
	}
	b.WriteString("---\n\n## Task List\n\n```json\n")
	b.WriteString(renderTaskArray(p.Tasks, "", ralMembers))
	b.WriteString("\n```\n")
	return []byte(b.String()), nil
}

// jsonTaskFence returns the fenced block holding the task list, or nil: the
// first json block whose content is an array mentioning "passes".
func jsonTaskFence(doc *mdDoc) *mdFence {
	for _, f := range doc.fences {
		if f.lang != "json" && f.lang != "jsonc" && f.lang != "json5" {
			continue
		}
		var content []byte
		for _, s := range f.segs {
			content = append(content, doc.src[s.Start:s.Stop]...)
		}
		if t := bytes.TrimSpace(content); len(t) > 0 && t[0] == '[' && bytes.Contains(t, []byte(`"passes"`)) {
			return f
		}
	}
	return nil
}

// readMDJSON parses and validates the task list of a markdown plan. The
// JSON is read from a copy of the file in which everything outside the
// block is blanked (newlines kept), so offsets and lines are the file's own
// and edits splice the real file.
func readMDJSON(path string, data []byte) (*jsonTasks, error) {
	return mdJSONOf(path, parseMarkdown(data))
}

func (mdJSONFormat) readMarkdown(path string, doc *mdDoc) (parsed, error) {
	d, err := mdJSONOf(path, doc)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// mdJSONOf reads the task list of parsed markdown.
func mdJSONOf(path string, doc *mdDoc) (*jsonTasks, error) {
	data := doc.src
	f := jsonTaskFence(doc)
	if f == nil {
		return nil, &Error{File: path, Msg: "no task list: a markdown plan of this kind holds its tasks in a ```json block, " +
			`[{"description": "...", "steps": [...], "passes": false}, ...]`}
	}
	masked := bytes.Repeat([]byte{' '}, len(data))
	for i, b := range data {
		if b == '\n' {
			masked[i] = '\n'
		}
	}
	for _, s := range f.segs {
		copy(masked[s.Start:s.Stop], data[s.Start:s.Stop])
	}
	jd, err := parseJSONDoc(path, masked)
	if err != nil {
		return nil, err
	}
	d, err := readRalArray(path, jd, FormatMarkdownJSON)
	if err != nil {
		return nil, err
	}
	d.plan.Name = doc.title()
	stop := f.open
	if stop < 0 {
		stop = f.start
	}
	d.plan.Description = doc.overview(stop)
	d.plan.Validation = validationCommands(string(data))
	d.data = data // the JSON was read from a masked copy
	return d, nil
}
