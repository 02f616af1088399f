package task

import (
	"bytes"
	"os"
	"testing"
)

// Each fuzz target checks that reading never panics, that on anything that
// reads, setting each task done, open and failed yields a file that reads
// again with exactly that task changed (checkSetStatus: its agent and
// model kept), and that adding a task keeps the file readable with one
// more task, which names the agent and model it was given.

func seedFuzz(f *testing.F, fixtures []string, extra ...string) {
	f.Helper()
	for _, name := range fixtures {
		if data, err := os.ReadFile("testdata/route/" + name); err == nil {
			f.Add(data) // the fixture with agents and models
		}
		data := readFixture(f, name)
		f.Add(data)
		for _, l := range layouts[1:] {
			f.Add(l.fn(data))
		}
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

func fuzzFormat(t *testing.T, fm format, path string, data []byte) {
	t.Helper()
	checkSetStatus(t, fm, path, data)
	before, err := parsePlan(fm, path, data)
	if err != nil {
		return
	}
	nt := Task{ID: "ZZ-9", Title: "added task", Criteria: []string{"it works"}, Priority: 3, Status: StatusOpen, Agent: "codex", Model: "opus[1m]"}
	if _, taken := before.Task(nt.ID); taken {
		return
	}
	out, err := fm.add(path, data, nt)
	if err != nil {
		if fm.name() == FormatProgress && bytes.Contains([]byte(err.Error()), []byte("ralph-tui")) {
			return // ralph-tui's own log takes no new tasks
		}
		t.Fatalf("add: %v\n%s", err, data)
	}
	after, err := parsePlan(fm, path, out)
	if err != nil {
		t.Fatalf("add wrote an unreadable file: %v\n%s", err, out)
	}
	if len(after.Tasks) != len(before.Tasks)+1 {
		t.Fatalf("add: %d tasks, want %d\n%s", len(after.Tasks), len(before.Tasks)+1, out)
	}
	if got, ok := after.Task(nt.ID); ok && (got.Agent != nt.Agent || got.Model != nt.Model) {
		t.Fatalf("add: the new task's agent %q and model %q, want %q and %q\n%s", got.Agent, got.Model, nt.Agent, nt.Model, out)
	}
	checkRouteChanges(t, before, after, nt, out)
}

func FuzzReadPRD(f *testing.F) {
	seedFuzz(f, []string{"ralph-tui-sample-prd.json", "ralph-tui-test-prd.json", "snarktank-prd.json.example"},
		`{"userStories":[{"id":"A"},{"id":"B","passes":null,"dependsOn":["A"]}]}`,
		`{"userStories":[{"id":"A","passes":"true"}]}`,
		`{"userStories":[{"failed":true,"id":"A"},{"id":"B","failed":false,"passes":true}]}`,
		`{"userStories":[{"id":"A","agent":"codex","model":"gpt-5.1-codex"},{"id":"B","model":"opus","agent":null}]}`,
		`{"userStories":[{"id":"A","agent":"codex","agent":"claude","model":"two words"}]}`,
		`[{"passes": false}]`)
	f.Add(readFixture(f, "route/prd.json"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, prdFormat{}, "prd.json", data) })
}

func FuzzReadTasksJSON(f *testing.F) {
	seedFuzz(f, []string{"ral-tasks.json"},
		`[{"description":"a","steps":[],"passes":false},{"id":1,"description":"b"}]`,
		`[]`, `[{"title":"t","failed":true}]`, `[{"description":"a","agent":"codex","model":"opus[1m]"},{"model":3}]`)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, tasksJSONFormat{}, "tasks.json", data) })
}

func FuzzReadMarkdownJSON(f *testing.F) {
	seedFuzz(f, []string{"ral-plan.md"},
		"# P\n\n> ```json\n> [{\"description\": \"q\", \"passes\": false}]\n> ```\n",
		"```json\n[]\n```\n```json\n[{\"description\":\"a\",\"passes\":true}]\n```\n",
		"# P\n\n```json\n[{\"description\": \"a\", \"agent\": \"codex\", \"model\": \"opus\", \"passes\": false}]\n```\n")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, mdJSONFormat{}, "plan.md", data) })
}

func FuzzReadProgressMD(f *testing.F) {
	seedFuzz(f, []string{"rslph-progress.md", "portableralph-progress.md", "ralph-tui-sample-progress.md"},
		"# Progress: x\n\n## Status\n\nRALPH_DONE\n\n## Tasks\n\n- [x] a\n- [!] b\n",
		"# Progress: x\n\n## Tasks\n\n### Phase 1\n\n- [ ] a\n  Agent: codex\n  Model: opus\n- [x] b\nModel: sonnet\n")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, progressFormat{}, "progress.md", data) })
}

func FuzzReadChecklist(f *testing.F) {
	seedFuzz(f, []string{"IMPLEMENTATION_PLAN.md", "fix_plan.md"},
		"1. [ ] a\n2) [x] b\n   - [ ] c\n* [!] d\n+ [X] e\n",
		"- [ ] T1: a\n  Depends on: T2\n- [ ] T2: b\n  - Priority: P2\n  - ID: x y\n",
		"- [ ] a\n  Agent: codex\n  Model: gpt-5.1-codex\n- [ ] b\n  text\n\n  Model: opus\n  - Agent: x\n  ```\n  Agent: y\n  ```\n",
		"- [ ] a\n  Agent: codex\n  Agent: claude\n")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, checklistFormat{}, "fix_plan.md", data) })
}

func FuzzReadHeadingPlan(f *testing.F) {
	seedFuzz(f, []string{"heading-plan.md"},
		"## Task 1: a ✅ ❌\n- [ ] x\n## ✅ Task 2 — b\n### Task 2.1: c\n- [!] y\n",
		"Task 1\n===\n- [x] a\n",
		"### Task 1: a\n\nAgent: codex\nModel: opus\n\n- [ ] x\n\n### Task 2: b\n\n```\nAgent: y\n```\n    Model: z\n")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, headingFormat{}, "PLAN.md", data) })
}

// checkRouteChanges: a plan has no route changes against itself, and
// against the plan with nt added, exactly nt's agent and model, new.
func checkRouteChanges(t *testing.T, before, after *Plan, nt Task, out []byte) {
	t.Helper()
	if c := RouteChanges(before, before); c != nil {
		t.Fatalf("RouteChanges of a plan and itself: %+v", c)
	}
	for _, bt := range before.Tasks {
		if bt.Title == nt.Title || bt.ID == nt.ID {
			return // the added task could pair with this one
		}
	}
	got := RouteChanges(before, after)
	if len(got) != 2 || got[0].Task != nt.ID || !got[0].New || got[0].After != nt.Agent || got[1].After != nt.Model {
		t.Fatalf("RouteChanges after adding %s: %+v\n%s", nt.ID, got, out)
	}
}
