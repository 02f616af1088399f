package task

import "fmt"

// tasks.json is ral's plan, written by `ral scaffold-json` next to plan.md
// (the project's details) and activity.md (the agents' log):
//
//	[{"category": "setup", "description": "Initialize the CLI project",
//	  "steps": ["...", "..."], "passes": false}, ...]
//
// A task is identified by its 1-based position unless it has an "id"
// (a string or a whole number); its title is "title" or, as ral writes
// it, the description. "steps" are its acceptance criteria
// ("acceptanceCriteria" is read too); "priority", "dependsOn", "notes",
// "agent" and "model" are read as in prd.json. Done is "passes": true; failure stays in ralph's
// state (see jsontasks.go). The runner accepts ral's <promise>success</promise>
// as TASK_DONE.
type tasksJSONFormat struct{}

func (tasksJSONFormat) name() string { return FormatTasksJSON }

// ralRules are ral's task conventions.
var ralRules = jsonRules{
	positional:           true,
	criteria:             []string{"steps", "acceptanceCriteria"},
	titleFromDescription: true,
	noun:                 "task",
	idExample:            "T-1",
}

func (tasksJSONFormat) read(path string, data []byte) (parsed, error) {
	d, err := readTasksJSON(path, data)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (tasksJSONFormat) setStatus(cur parsed, id string, st Status) (parsed, error) {
	d, err := asJSONTasks(cur)
	if err != nil {
		return nil, err
	}
	return setJSONStatus(d, id, st, readTasksJSON)
}

func (tasksJSONFormat) add(path string, data []byte, t Task) ([]byte, error) {
	return addRalTask(path, data, t, readTasksJSON)
}

func (tasksJSONFormat) encode(p *Plan) ([]byte, error) {
	return []byte(renderTaskArray(p.Tasks, "", ralMembers) + "\n"), nil
}

// readTasksJSON parses and validates a tasks.json.
func readTasksJSON(path string, data []byte) (*jsonTasks, error) {
	doc, err := parseJSONDoc(path, data)
	if err != nil {
		return nil, err
	}
	d, err := readRalArray(path, doc, FormatTasksJSON)
	if err != nil {
		return nil, err
	}
	d.whole = true
	return d, nil
}

// asJSONTasks is cur as the JSON formats read it.
func asJSONTasks(cur parsed) (*jsonTasks, error) {
	d, ok := cur.(*jsonTasks)
	if !ok {
		return nil, fmt.Errorf("internal error: %T is not a JSON task list", cur)
	}
	return d, nil
}

// readRalArray reads doc's root as ral's task array.
func readRalArray(path string, doc *jsonDoc, formatName string) (*jsonTasks, error) {
	c := &jsonChecker{path: path, doc: doc}
	root := doc.root
	if root.kind != jsonArray {
		msg := fmt.Sprintf(`want a JSON array of tasks, [{"description": "...", "steps": [...], "passes": false}, ...], got %s`, root.kind)
		if root.kind == jsonObject && root.member("userStories") != nil {
			msg += ` — an object with "userStories" is a prd.json: name the file prd.json`
		}
		c.add(root.start, "", msg)
		return nil, c.err()
	}
	d := c.readTasks(root, "", ralRules)
	if len(c.errs) > 0 {
		return nil, c.err()
	}
	d.plan.Path, d.plan.Format = path, formatName
	return d, nil
}

// addRalTask appends t to a ral task array, with an "id" only when its id
// is not its position.
func addRalTask(path string, data []byte, t Task, read func(string, []byte) (*jsonTasks, error)) ([]byte, error) {
	d, err := read(path, data)
	if err != nil {
		return nil, err
	}
	pos := len(d.plan.Tasks) + 1
	return addJSONTask(path, data, t, read, func(t Task, st jsonStyle) string {
		return renderObject(ralMembers(t, pos, st), st)
	})
}
