package task

import (
	"fmt"
	"strings"
)

// prd.json is the plan of snarktank/ralph and ralph-tui:
//
//	{"project" or "name", "branchName", "description",
//	 "userStories": [{"id", "title", "description", "acceptanceCriteria": [],
//	                  "priority", "passes", "notes", "dependsOn": [],
//	                  "agent", "model"}]}
//
// A story is done when "passes" is true. Every other key, known or not, is
// kept byte for byte: the writer only ever replaces the bytes of one
// "passes" value, or inserts that one member when a story has none. A
// "category" string is read too (ralph writes it when converting a plan
// that groups its tasks).
//
// A story the runner gave up on is failed in .ralph/state.json only; the
// file is left as it is (see jsontasks.go for why, and for the "failed" key
// ralph reads).
type prdFormat struct{}

func (prdFormat) name() string { return "prd.json" }

func (prdFormat) read(path string, data []byte) (parsed, error) {
	d, err := readPRD(path, data)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (prdFormat) setStatus(cur parsed, id string, st Status) (parsed, error) {
	d, err := asJSONTasks(cur)
	if err != nil {
		return nil, err
	}
	return setJSONStatus(d, id, st, readPRD)
}

func (prdFormat) add(path string, data []byte, t Task) ([]byte, error) {
	return addJSONTask(path, data, t, readPRD, func(t Task, st jsonStyle) string {
		return renderObject(storyMembers(t, st), st)
	})
}

func (prdFormat) encode(p *Plan) ([]byte, error) {
	var b strings.Builder
	b.WriteString("{\n")
	name := p.Name
	if name == "" {
		name = "project"
	}
	fmt.Fprintf(&b, "  \"project\": %s,\n", quoteJSON(name))
	if p.Branch != "" {
		fmt.Fprintf(&b, "  \"branchName\": %s,\n", quoteJSON(p.Branch))
	}
	if p.Description != "" {
		fmt.Fprintf(&b, "  \"description\": %s,\n", quoteJSON(p.Description))
	}
	b.WriteString("  \"userStories\": ")
	b.WriteString(renderTaskArray(p.Tasks, "  ", func(t Task, _ int, st jsonStyle) []jsonKV { return storyMembers(t, st) }))
	b.WriteString("\n}\n")
	return []byte(b.String()), nil
}

// prdRules are prd.json's task conventions: every story has a string id.
var prdRules = jsonRules{criteria: []string{"acceptanceCriteria"}, noun: "story", idExample: "US-001"}

// readPRD parses and validates a prd.json.
func readPRD(path string, data []byte) (*jsonTasks, error) {
	doc, err := parseJSONDoc(path, data)
	if err != nil {
		return nil, err
	}
	c := &jsonChecker{path: path, doc: doc}
	root := doc.root
	if root.kind != jsonObject {
		msg := fmt.Sprintf(`want a JSON object with a "userStories" array, got %s`, root.kind)
		if root.kind == jsonArray {
			msg += ` — a plain array is ral's tasks.json format: name the file tasks.json, or wrap it as {"userStories": [...]}`
		}
		c.add(root.start, "", msg)
		return nil, c.err()
	}

	plan := &Plan{Path: path, Format: prdFormat{}.name()}
	c.noDuplicates(root, "", "project", "name", "branchName", "description", "userStories")
	plan.Name = c.str(root, "", "project")
	if plan.Name == "" {
		plan.Name = c.str(root, "", "name")
	}
	plan.Branch = c.str(root, "", "branchName")
	plan.Description = c.str(root, "", "description")

	us := root.member("userStories")
	switch {
	case us == nil:
		var msg strings.Builder
		msg.WriteString(`missing: a prd.json lists its tasks as "userStories": [{"id": "US-001", "title": "...", "passes": false}, ...]`)
		for _, m := range root.members {
			if m.val.kind == jsonArray && isStoriesLike(m.key) {
				msg.WriteString(fmt.Sprintf(` — rename %q to "userStories"`, m.key))
				break
			}
		}
		c.add(root.start, "userStories", msg.String())
		return nil, c.err()
	case us.val.kind != jsonArray:
		c.add(us.val.start, "userStories", fmt.Sprintf(`want an array of stories, got %s — write "userStories": [{"id": "US-001", ...}, ...]`, us.val.kind))
		return nil, c.err()
	}
	d := c.readTasks(us.val, "userStories", prdRules)
	if len(c.errs) > 0 {
		return nil, c.err()
	}
	d.plan.Path, d.plan.Format = plan.Path, plan.Format
	d.plan.Name, d.plan.Branch, d.plan.Description = plan.Name, plan.Branch, plan.Description
	d.whole = true
	return d, nil
}

// isStoriesLike reports keys LLM-written plans use for the story list.
func isStoriesLike(key string) bool {
	switch strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(key)) {
	case "stories", "tasks", "userstories", "items", "features", "requirements":
		return true
	}
	return false
}
