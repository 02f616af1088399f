package task

import (
	"bytes"
	"testing"
)

// Each fuzz target checks that reading never panics, that on anything that
// reads, setting each task done, open and failed yields a file that reads
// again with exactly that task changed (checkSetStatus), and that adding a
// task keeps the file readable with one more task.

func seedFuzz(f *testing.F, fixtures []string, extra ...string) {
	f.Helper()
	for _, name := range fixtures {
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
	nt := Task{ID: "ZZ-9", Title: "added task", Criteria: []string{"it works"}, Priority: 3, Status: StatusOpen}
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
}

func FuzzReadPRD(f *testing.F) {
	seedFuzz(f, []string{"ralph-tui-sample-prd.json", "ralph-tui-test-prd.json", "snarktank-prd.json.example"},
		`{"userStories":[{"id":"A"},{"id":"B","passes":null,"dependsOn":["A"]}]}`,
		`{"userStories":[{"id":"A","passes":"true"}]}`,
		`{"userStories":[{"failed":true,"id":"A"},{"id":"B","failed":false,"passes":true}]}`,
		`[{"passes": false}]`)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, prdFormat{}, "prd.json", data) })
}

func FuzzReadTasksJSON(f *testing.F) {
	seedFuzz(f, []string{"ral-tasks.json"},
		`[{"description":"a","steps":[],"passes":false},{"id":1,"description":"b"}]`,
		`[]`, `[{"title":"t","failed":true}]`)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, tasksJSONFormat{}, "tasks.json", data) })
}

func FuzzReadMarkdownJSON(f *testing.F) {
	seedFuzz(f, []string{"ral-plan.md"},
		"# P\n\n> ```json\n> [{\"description\": \"q\", \"passes\": false}]\n> ```\n",
		"```json\n[]\n```\n```json\n[{\"description\":\"a\",\"passes\":true}]\n```\n")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, mdJSONFormat{}, "plan.md", data) })
}

func FuzzReadProgressMD(f *testing.F) {
	seedFuzz(f, []string{"rslph-progress.md", "portableralph-progress.md", "ralph-tui-sample-progress.md"},
		"# Progress: x\n\n## Status\n\nRALPH_DONE\n\n## Tasks\n\n- [x] a\n- [!] b\n")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, progressFormat{}, "progress.md", data) })
}

func FuzzReadChecklist(f *testing.F) {
	seedFuzz(f, []string{"IMPLEMENTATION_PLAN.md", "fix_plan.md"},
		"1. [ ] a\n2) [x] b\n   - [ ] c\n* [!] d\n+ [X] e\n",
		"- [ ] T1: a\n  Depends on: T2\n- [ ] T2: b\n  - Priority: P2\n  - ID: x y\n")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, checklistFormat{}, "fix_plan.md", data) })
}

func FuzzReadHeadingPlan(f *testing.F) {
	seedFuzz(f, []string{"heading-plan.md"},
		"## Task 1: a ✅ ❌\n- [ ] x\n## ✅ Task 2 — b\n### Task 2.1: c\n- [!] y\n",
		"Task 1\n===\n- [x] a\n")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFormat(t, headingFormat{}, "PLAN.md", data) })
}
