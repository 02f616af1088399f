package task

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// route is a task's agent and model with their lines.
type route struct {
	Agent     string
	AgentLine int
	Model     string
	ModelLine int
}

func routesOf(p *Plan) map[string]route {
	m := map[string]route{}
	for _, t := range p.Tasks {
		if t.Agent != "" || t.Model != "" || t.AgentLine != 0 || t.ModelLine != 0 {
			m[t.ID] = route{t.Agent, t.AgentLine, t.Model, t.ModelLine}
		}
	}
	return m
}

// ignoreRoute compares tasks without their agent, model and lines.
var ignoreRoute = cmpopts.IgnoreFields(Task{}, "Line", "Agent", "Model", "AgentLine", "ModelLine")

// routeFixtures are copies of the fixtures (testdata/route/NAME, from
// testdata/ORIG) with Agent:/Model: lines or "agent"/"model" keys added,
// and what each task names.
var routeFixtures = []struct {
	name, orig string
	want       map[string]route
}{
	{"IMPLEMENTATION_PLAN.md", "IMPLEMENTATION_PLAN.md", map[string]route{
		"1":     {Agent: "codex", AgentLine: 8},
		"REP-2": {Model: "opus", ModelLine: 13},
		"3":     {Agent: "claude", AgentLine: 21, Model: "claude-sonnet-4-5", ModelLine: 22},
	}},
	{"fix_plan.md", "fix_plan.md", map[string]route{"1": {Model: "gpt-5.1-codex", ModelLine: 2}}},
	{"heading-plan.md", "heading-plan.md", map[string]route{
		"1": {Agent: "codex", AgentLine: 14},
		"4": {Agent: "claude", AgentLine: 35, Model: "opus", ModelLine: 36},
	}},
	{"rslph-progress.md", "rslph-progress.md", map[string]route{"2": {Agent: "gemini", AgentLine: 18}}},
	{"portableralph-progress.md", "portableralph-progress.md", map[string]route{"3": {Model: "opus", ModelLine: 13}}},
	{"ral-tasks.json", "ral-tasks.json", map[string]route{"2": {Agent: "codex", AgentLine: 15, Model: "gpt-5.1-codex", ModelLine: 16}}},
	{"ral-plan.md", "ral-plan.md", map[string]route{"2": {Model: "sonnet", ModelLine: 25}}},
	{"prd.json", "snarktank-prd.json.example", map[string]route{"US-002": {Agent: "codex", AgentLine: 22, Model: "gpt-5.1-codex", ModelLine: 23}}},
	{"ralph-tui-sample-prd.json", "ralph-tui-sample-prd.json", map[string]route{"US-001": {Model: "opus", ModelLine: 14}}},
}

// Every format reads a task's agent and model, with their lines, and
// nothing else of the task changes: the lines are not description text.
func TestRouteEveryFormat(t *testing.T) {
	t.Parallel()
	for _, tt := range routeFixtures {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.name, readFixture(t, "route/"+tt.name))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, routesOf(got)); diff != "" {
				t.Errorf("agents and models (-want +got):\n%s", diff)
			}
			orig, err := Parse(tt.name, readFixture(t, tt.orig))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(orig.Tasks, got.Tasks, ignoreRoute); diff != "" {
				t.Errorf("the rest of the tasks differ from %s's (-orig +got):\n%s", tt.orig, diff)
			}
		})
	}
}

// Ticking every task done, then failing and reopening it, leaves the
// Agent:/Model: lines and keys where they were.
func TestRouteSurvivesStatusChanges(t *testing.T) {
	t.Parallel()
	for _, tt := range routeFixtures {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := readFixture(t, "route/"+tt.name)
			path := writeTemp(t, tt.name, data, 0o644)
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range f.Plan().Tasks {
				for _, st := range []Status{StatusDone, StatusFailed, StatusOpen, StatusDone} {
					if err := f.SetStatus(task.ID, st); err != nil {
						t.Fatal(err)
					}
				}
			}
			out := mustRead(t, path)
			again, err := Parse(tt.name, out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, routesOf(again)); diff != "" {
				t.Errorf("after the status changes (-want +got):\n%s\n%s", diff, out)
			}
			for _, key := range []string{"Agent: ", "Model: ", `"agent": `, `"model": `} {
				if n, m := bytes.Count(data, []byte(key)), bytes.Count(out, []byte(key)); n != m {
					t.Errorf("%q: %d in the file, %d after the status changes", key, n, m)
				}
			}
		})
	}
}

// Converting a plan to every format and back keeps each task's agent and
// model (TestConvertRoundTripEveryPair does so for every pair).
func TestRouteConvertsToEveryFormat(t *testing.T) {
	t.Parallel()
	for _, tt := range routeFixtures {
		for _, to := range Formats() {
			t.Run(tt.name+"-"+to, func(t *testing.T) {
				t.Parallel()
				p, err := Parse(tt.name, readFixture(t, "route/"+tt.name))
				if err != nil {
					t.Fatal(err)
				}
				back := roundTrip(t, to, p)
				if len(back.Tasks) != len(p.Tasks) {
					// A heading plan cannot write the id "docs" (its ids
					// have a digit): not this test's subject.
					t.Skipf("%s → %s keeps %d of %d tasks", tt.name, to, len(back.Tasks), len(p.Tasks))
				}
				// By position: a heading plan's ids are numbers.
				var want, got [][2]string
				for _, t := range p.Tasks {
					want = append(want, [2]string{t.Agent, t.Model})
				}
				for _, t := range back.Tasks {
					got = append(got, [2]string{t.Agent, t.Model})
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s → %s (-want +got):\n%s", tt.name, to, diff)
				}
			})
		}
	}
}

// Only a line that is exactly "Agent: NAME" or "Model: NAME" names one;
// every other line stays the task's text.
func TestRouteLinesThatAreText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, in string
		text           string // where the line went: the description, else a criterion
	}{
		{"lower case", "fix_plan.md", "- [ ] a\n  agent: codex\n", "agent: codex"},
		{"two words", "fix_plan.md", "- [ ] a\n  Model: opus please\n", "Model: opus please"},
		{"prose", "fix_plan.md", "- [ ] a\n  Model: the user's data model\n", "Model: the user's data model"},
		{"emphasis", "fix_plan.md", "- [ ] a\n  **Agent:** codex\n", "**Agent:** codex"},
		{"code span", "fix_plan.md", "- [ ] a\n  Agent: `codex`\n", "Agent: `codex`"},
		{"no space", "fix_plan.md", "- [ ] a\n  Agent:codex\n", "Agent:codex"},
		{"inside a sentence", "fix_plan.md", "- [ ] a\n  Set Model: opus in the config\n", "Set Model: opus in the config"},
		{"a list item", "fix_plan.md", "- [ ] a\n  - Agent: codex\n", "Agent: codex"},
		{"a fenced block", "fix_plan.md", "- [ ] a\n\n  ```\n  Agent: codex\n  ```\n", "Agent: codex"},
		{"an indented code block", "fix_plan.md", "- [ ] a\n\n      Agent: codex\n", "Agent: codex"},
		{"an html comment", "fix_plan.md", "- [ ] a\n\n  <!--\n  Agent: codex\n  -->\n", "Agent: codex"},
		{"heading plan: list item", "PLAN.md", "### Task 1: a\n\n- Model: opus\n", "- Model: opus"},
		{"heading plan: fenced block", "PLAN.md", "### Task 1: a\n\n```yaml\nAgent: codex\n```\n", "Agent: codex"},
		{"heading plan: indented code", "PLAN.md", "### Task 1: a\n\ntext\n\n    Agent: codex\n", "Agent: codex"},
		{"heading plan: html comment", "PLAN.md", "### Task 1: a\n\n<!--\nAgent: codex\n-->\n", "Agent: codex"},
		{"heading plan: outside the task", "PLAN.md", "# P\n\nAgent: codex\n\n### Task 1: a\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse(tt.path, []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			task := p.Tasks[0]
			if task.Agent != "" || task.Model != "" {
				t.Errorf("read agent %q, model %q from %q", task.Agent, task.Model, tt.in)
			}
			if !strings.Contains(task.Description+"\n"+strings.Join(task.Criteria, "\n"), tt.text) {
				t.Errorf("%q is neither description nor criterion: %+v", tt.text, task)
			}
		})
	}
}

// The forms that do name one: surrounding whitespace, a lazy continuation
// line, a later paragraph of the item, a tab.
func TestRouteLinesThatCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, in string
		want           route
	}{
		{"indented", "fix_plan.md", "- [ ] a\n    Agent: codex   \n", route{Agent: "codex", AgentLine: 2}},
		{"lazy continuation", "fix_plan.md", "- [ ] a\nModel: opus\n", route{Model: "opus", ModelLine: 2}},
		{"a later paragraph", "fix_plan.md", "- [ ] a\n  text\n\n  Model: opus[1m]\n", route{Model: "opus[1m]", ModelLine: 4}},
		{"a tab", "fix_plan.md", "- [ ] a\n  Model:\topenai/gpt-5\n", route{Model: "openai/gpt-5", ModelLine: 2}},
		{"crlf", "fix_plan.md", "- [ ] a\r\n  Agent: codex\r\n", route{Agent: "codex", AgentLine: 2}},
		{"heading plan: in a paragraph", "PLAN.md", "### Task 1: a\n\nDo it well.\nAgent: codex\n", route{Agent: "codex", AgentLine: 4}},
		{"heading plan: in a subsection", "PLAN.md", "## Task 1: a\n\n### Notes\n\n  Model: deepseek-r1:free\n", route{Model: "deepseek-r1:free", ModelLine: 5}},
		{"progress.md", "progress.md", "# Progress: x\n\n## Tasks\n\n- [ ] a\n  Agent: gemini\n", route{Agent: "gemini", AgentLine: 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse(tt.path, []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			task := p.Tasks[0]
			if diff := cmp.Diff(tt.want, route{task.Agent, task.AgentLine, task.Model, task.ModelLine}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if strings.Contains(task.Description, "Agent:") || strings.Contains(task.Description, "Model:") {
				t.Errorf("the line is in the description too: %q", task.Description)
			}
		})
	}
}

func TestRouteErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, in string
		want           []string
	}{
		{"checklist: two agents", "fix_plan.md", "- [ ] a\n  Agent: codex\n  Agent: claude\n- [ ] b\n",
			[]string{`fix_plan.md:3: agent: given twice (first on line 2)`}},
		{"checklist: two models in two paragraphs", "IMPLEMENTATION_PLAN.md", "# P\n\n- [ ] a\n  Model: opus\n\n  Model: sonnet\n",
			[]string{`IMPLEMENTATION_PLAN.md:6: model: given twice (first on line 4)`}},
		{"heading plan: two agents", "PLAN.md", "### Task 1: a\n\nAgent: codex\n\nAgent: codex\n",
			[]string{`PLAN.md:5: agent: given twice (first on line 3)`}},
		{"progress.md: two models", "progress.md", "# Progress: x\n\n## Tasks\n\n- [ ] a\n  Model: opus\n  Model: opus\n",
			[]string{`progress.md:7: model: given twice (first on line 6)`}},
		{"prd.json: not a string", "prd.json", "{\"userStories\": [\n  {\"id\": \"A\", \"title\": \"a\",\n   \"agent\": 3,\n   \"model\": [\"opus\"]}\n]}\n",
			[]string{`prd.json:3: userStories[0].agent: want a string, got 3`, `prd.json:4: userStories[0].model: want a string, got an array`}},
		{"prd.json: two words", "prd.json", "{\"userStories\": [{\"id\": \"A\", \"title\": \"a\", \"model\": \"claude opus\"}]}",
			[]string{`prd.json:1: userStories[0].model: want the name of one model, one word such as "opus", got "claude opus" (a string)`}},
		{"prd.json: twice", "prd.json", "{\"userStories\": [{\"id\": \"A\", \"title\": \"a\",\n \"agent\": \"codex\",\n \"agent\": \"claude\"}]}",
			[]string{`prd.json:3: userStories[0].agent: duplicate key (first on line 2)`}},
		{"tasks.json: a boolean", "tasks.json", "[\n  {\"description\": \"a\",\n   \"agent\": true}\n]\n",
			[]string{`tasks.json:3: [0].agent: want a string, got true`}},
		{"markdown json: on the file's line", "plan.md", "# P\n\n```json\n[\n  {\"description\": \"a\", \"passes\": false,\n   \"model\": 4.5}\n]\n```\n",
			[]string{`plan.md:6: [0].model: want a string, got 4.5`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.path, []byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tt.want, errorLines(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	// null and "" name nothing.
	p, err := Parse("prd.json", []byte(`{"userStories": [{"id": "A", "title": "a", "agent": null, "model": ""}]}`))
	if err != nil || p.Tasks[0].Agent != "" || p.Tasks[0].Model != "" || p.Tasks[0].ModelLine != 0 {
		t.Errorf("null and empty: %+v %v", p.Tasks, err)
	}
}

func TestRouteChanges(t *testing.T) {
	t.Parallel()
	const start = "# P\n\n- [ ] a\n  Agent: codex\n- [ ] b\n  Model: opus\n- [ ] c\n"
	tests := []struct {
		name, now string
		want      []RouteChange
	}{
		{"unchanged", start, nil},
		{"a status change and a new description", "# P\n\n- [x] a\n  Agent: codex\n  More words.\n- [ ] b\n  Model: opus\n- [ ] c\n", nil},
		{"agent changed", "# P\n\n- [ ] a\n  Agent: claude\n- [ ] b\n  Model: opus\n- [ ] c\n",
			[]RouteChange{{Task: "1", Field: "agent", Before: "codex", After: "claude", File: "fix_plan.md", Line: 4, BeforeLine: 4}}},
		{"model removed, one given", "# P\n\n- [ ] a\n  Agent: codex\n- [ ] b\n- [ ] c\n  Model: opus\n",
			[]RouteChange{
				{Task: "2", Field: "model", Before: "opus", File: "fix_plan.md", Line: 5, BeforeLine: 6},
				{Task: "3", Field: "model", After: "opus", File: "fix_plan.md", Line: 7},
			}},
		{"a task moved: by its title, not its position", "# P\n\n- [ ] new\n- [ ] a\n  Agent: codex\n- [ ] b\n  Model: opus\n- [ ] c\n", nil},
		{"a new task naming a model", "# P\n\n- [ ] a\n  Agent: codex\n- [ ] b\n  Model: opus\n- [ ] c\n- [ ] d\n  Model: opus\n",
			[]RouteChange{{Task: "4", Field: "model", After: "opus", New: true, File: "fix_plan.md", Line: 9}}},
		{"a task removed", "# P\n\n- [ ] a\n  Agent: codex\n- [ ] c\n", nil},
	}
	before, err := Parse("fix_plan.md", []byte(start))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now, err := Parse("fix_plan.md", []byte(tt.now))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, RouteChanges(before, now)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for c, want := range map[RouteChange]string{
		{Task: "1", Field: "agent", Before: "codex", After: "claude", File: "fix_plan.md", Line: 4}: "fix_plan.md:4: task 1 agent: codex → claude",
		{Task: "2", Field: "model", Before: "opus", File: "fix_plan.md", Line: 5}:                   "fix_plan.md:5: task 2 model: opus → none",
		{Task: "4", Field: "model", After: "opus", New: true, File: "fix_plan.md", Line: 9}:         "fix_plan.md:9: new task 4 model: opus",
	} {
		if got := c.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

// In JSON the line of a change is the line of the key.
func TestRouteChangesJSON(t *testing.T) {
	t.Parallel()
	data := readFixture(t, "route/prd.json")
	before, err := Parse("prd.json", data)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(data, []byte(`"model": "gpt-5.1-codex"`), []byte(`"model": "gpt-5.1-codex-max"`), 1)
	edited = bytes.Replace(edited, []byte(`"title": "Add priority field to database",`),
		[]byte(`"title": "Add priority field to database",`+"\n      \"agent\": \"claude\","), 1)
	now, err := Parse(filepath.Join("x", "prd.json"), edited)
	if err != nil {
		t.Fatal(err)
	}
	want := []RouteChange{
		{Task: "US-001", Field: "agent", After: "claude", File: "x/prd.json", Line: 9},
		{Task: "US-002", Field: "model", Before: "gpt-5.1-codex", After: "gpt-5.1-codex-max", File: "x/prd.json", Line: 24, BeforeLine: 23},
	}
	if diff := cmp.Diff(want, RouteChanges(before, now)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A task added after one with continuation lines comes after them: they
// are the last task's description, agent and model, not the new one's.
func TestAddAfterContinuationLines(t *testing.T) {
	t.Parallel()
	data := []byte("- [ ] a\n- [ ] b\n  the description of b\n  Agent: codex\n")
	out, err := checklistFormat{}.add("fix_plan.md", data, Task{ID: "3", Title: "c", Model: "opus"})
	if err != nil {
		t.Fatal(err)
	}
	if want := string(data) + "- [ ] c\n  Model: opus\n"; string(out) != want {
		t.Errorf("added:\n%s\nwant:\n%s", out, want)
	}
	// In a heading plan a box's continuation line is its criterion's, not
	// the task's description.
	p, err := Parse("PLAN.md", []byte("### Task 1: a\n\nWhat to do.\n\n- [ ] a criterion\n  on two lines\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Tasks[0]; got.Description != "What to do." || len(got.Criteria) != 1 || got.Criteria[0] != "a criterion on two lines" {
		t.Errorf("task %+v", got)
	}
}
