package task

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// markdownFixtures is what each fixture of the newer formats parses to.
var markdownFixtures = map[string]*Plan{
	"ral-tasks.json": {
		Path: "ral-tasks.json", Format: FormatTasksJSON,
		Tasks: []Task{
			{ID: "1", Title: "Initialize the Go module and the command skeleton", Category: "setup", Status: StatusDone, Line: 2,
				Criteria: []string{"Run go mod init", "Create cmd/greet/main.go printing a usage line", "Verify go build ./... passes"}},
			{ID: "2", Title: "Greet by name", Category: "feature", Status: StatusOpen, Line: 12,
				Criteria: []string{"greet NAME prints hello, NAME", "greet without a name prints hello, world", "Add a table-driven test"}},
			{ID: "docs", Title: "Document the command in README.md", Category: "docs", Status: StatusOpen, Line: 22,
				Criteria: []string{"Describe installation and usage"}},
		},
	},
	"rslph-progress.md": {
		Path: "rslph-progress.md", Format: FormatProgress, Name: "Echo CLI",
		Description: "The repository has a Cargo skeleton and no argument handling yet.\nThe echo behaviour must match coreutils for -n and -e.",
		Tasks: []Task{
			{ID: "1", Title: "Create the binary crate with clap", Category: "Phase 1: Foundation", Status: StatusDone, Line: 16},
			{ID: "2", Title: "Add `-n` flag for newline suppression", Category: "Phase 1: Foundation", Status: StatusOpen, Line: 17},
			{ID: "3", Title: "Interpret `\\n` and `\\t` with `-e`", Category: "Phase 2: Escapes", Status: StatusOpen, Line: 21},
			{ID: "4", Title: "Write tests for `--help` output", Category: "Phase 2: Escapes", Status: StatusOpen, Line: 22},
		},
	},
	"portableralph-progress.md": {
		Path: "portableralph-progress.md", Format: FormatProgress, Name: "Rate limiter",
		Description: "There is an HTTP server in server.go; nothing limits requests yet.",
		Tasks: []Task{
			{ID: "1", Title: "Add a token bucket type with tests", Status: StatusDone, Line: 10},
			{ID: "2", Title: "Wire the bucket into the middleware chain", Status: StatusOpen, Line: 11},
			{ID: "3", Title: "Return 429 with Retry-After when the bucket is empty", Status: StatusOpen, Line: 12},
		},
	},
	"ralph-tui-sample-progress.md": {
		Path: "ralph-tui-sample-progress.md", Format: FormatProgress, Name: "Ralph TUI Progress",
		Tasks: []Task{
			{ID: "US-001", Title: "First user story", Status: StatusDone, Notes: "Initial implementation done", Line: 10},
			{ID: "US-002", Title: "Second user story", Status: StatusOpen, Line: 17},
			{ID: "US-003", Title: "Third user story", Status: StatusOpen, Line: 23},
			{ID: "US-004", Title: "Fourth user story", Status: StatusOpen, Line: 24},
		},
	},
	"IMPLEMENTATION_PLAN.md": {
		Path: "IMPLEMENTATION_PLAN.md", Format: FormatChecklist, Name: "Implementation Plan",
		Description: "Port the report generator from Python to Go, one module at a time.",
		Tasks: []Task{
			{ID: "1", Title: "Parse the CSV input", Status: StatusDone, Line: 7,
				Criteria: []string{"handles quoted fields", "rejects rows with missing columns"}},
			{ID: "REP-2", Title: "Compute the monthly totals", Status: StatusOpen, Line: 10,
				Description: "Sum amounts per month; months without rows count as zero.",
				Priority:    1, DependsOn: []string{"1"},
				Criteria: []string{"totals match the Python output on testdata/2025.csv"}},
			{ID: "3", Title: "Render the HTML report", Status: StatusOpen, DependsOn: []string{"REP-2"}, Line: 18},
			{ID: "4", Title: "Upload the report to S3", Status: StatusFailed, Line: 20},
			{ID: "5", Title: "Send the summary e-mail", Status: StatusOpen, Line: 21},
			{ID: "6", Title: "Clean up the vendored Python (nested in a plain item: a task)", Status: StatusOpen, Line: 24},
		},
	},
	"fix_plan.md": {
		Path: "fix_plan.md", Format: FormatChecklist,
		Tasks: []Task{
			{ID: "1", Title: "Fix the flaky TestServerShutdown", Status: StatusOpen, Line: 1},
			{ID: "2", Title: "Remove the unused config loader", Status: StatusDone, Line: 2},
			{ID: "3", Title: "Return a clear error when the port is taken", Status: StatusOpen, Line: 3},
		},
	},
	"heading-plan.md": {
		Path: "heading-plan.md", Format: FormatHeadingPlan, Name: "Idle Timeout for Sessions",
		Description: "Kill agent sessions that produce no output for a configured duration.",
		Tasks: []Task{
			{ID: "1", Title: "Add IdleTimeout to the executor", Status: StatusDone, Line: 9,
				Description: "**Files:**\n- Modify: `pkg/executor/executor.go`",
				Criteria:    []string{"add an `IdleTimeout time.Duration` field", "reset a timer on every output line", "write a test where the timer fires"}},
			{ID: "2", Title: "Wire the --idle-timeout flag", Status: StatusOpen, DependsOn: []string{"1"}, Line: 18,
				Criteria: []string{"add the flag and its config key", "validate that it is not negative"}},
			{ID: "3", Title: "Update the documentation", Status: StatusDone, Line: 27,
				Description: "README and CLAUDE.md describe the flag."},
			{ID: "4", Title: "Verify on a real session", Status: StatusOpen, Line: 31},
		},
	},
	"ral-plan.md": {
		Path: "ral-plan.md", Format: FormatMarkdownJSON, Name: "Project Plan",
		Description: "A command-line pomodoro timer. See @spec.md for the full specification.",
		Tasks: []Task{
			{ID: "1", Title: "Initialize the TypeScript project", Category: "setup", Status: StatusDone, Line: 13,
				Criteria: []string{"npm init with TypeScript", "Add vitest"}},
			{ID: "2", Title: "Start a 25 minute timer", Category: "feature", Status: StatusOpen, Line: 22,
				Criteria: []string{"pomo start counts down from 25:00", "Ctrl-C stops it cleanly"}},
		},
	},
}

// allFixtures are every plan fixture with the format it must be detected as.
func allFixtures() map[string]string {
	m := map[string]string{}
	for name, p := range markdownFixtures {
		m[name] = p.Format
	}
	for name := range fixturePlans {
		m[name] = FormatPRD
	}
	return m
}

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	for name, want := range markdownFixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(name, readFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path, content, want string
	}{
		{"prd.json", `{"userStories": []}`, FormatPRD},
		{"plan.json", "", FormatPRD},
		{"tasks.json", "", FormatTasksJSON},
		{"anything", "\ufeff  [{}]", FormatTasksJSON},
		{"progress.md", "# Notes\n", FormatProgress},
		{"notes.md", "# Progress: x\n\n## Tasks\n\n- [ ] a\n", FormatProgress},
		{"notes.md", "## Status\n\n## Task List\n- [ ] a\n", FormatProgress},
		{"log.md", "## Remaining Tasks\n\n- US-1: a (pending)\n", FormatProgress},
		{"PLAN.md", "# P\n\n### Task 1: a\n", FormatHeadingPlan},
		{"PLAN.md", "# P\n\n## ✅ Task 2.1 — a\n", FormatHeadingPlan},
		{"PLAN.md", "# P\n\n## Task List\n\n- [ ] a\n", FormatChecklist},
		{"plan.md", "# P\n\n```json\n[{\"description\": \"a\", \"passes\": false}]\n```\n", FormatMarkdownJSON},
		{"plan.md", "# P\n\n```json\n[1, 2]\n```\n- [ ] a\n", FormatChecklist},
		{"TODO", "* [ ] a\n", FormatChecklist},
		{"empty.md", "", FormatChecklist},
	}
	for _, tt := range tests {
		fm, err := detect(tt.path, []byte(tt.content))
		if err != nil {
			t.Errorf("detect(%q, %q): %v", tt.path, tt.content, err)
			continue
		}
		if fm.name() != tt.want {
			t.Errorf("detect(%q, %q) = %s, want %s", tt.path, tt.content, fm.name(), tt.want)
		}
	}
	if _, err := detect("notes.txt", []byte("hello\n")); !errors.Is(err, ErrUnsupported) {
		t.Errorf("detect(notes.txt) = %v, want ErrUnsupported", err)
	}
}

// checkSetStatus is the property every writer has, used by the unit tests
// on the fixtures and by the fuzz targets: for every task and status,
// setStatus gives a file that reads back with exactly that task changed,
// and changes nothing when the file already says so.
func checkSetStatus(t *testing.T, fm format, path string, data []byte) {
	t.Helper()
	cur, err := fm.read(path, data)
	if err != nil {
		return
	}
	before := cur.result()
	for k, task := range before.Tasks {
		for _, st := range []Status{StatusDone, StatusOpen, StatusFailed} {
			next := checkParsedStatus(t, fm, cur, task.ID, st)
			out := next.source()
			after := next.result()
			want := clonePlan(before)
			if st != StatusFailed || recordsFailure(fm) {
				setTask(want, task.ID, st)
			} else if !bytes.Equal(out, data) {
				t.Fatalf("setStatus(%q, failed) changed a %s", task.ID, fm.name())
			}
			if diff := cmp.Diff(want, after, ignoreLine); diff != "" {
				t.Fatalf("setStatus(%q, %s) (-want +got):\n%s\nfrom:\n%s\nto:\n%s", task.ID, st, diff, data, out)
			}
			if task.Status == st && !bytes.Equal(out, data) {
				t.Fatalf("setStatus(%q, %s) changed a file that already said so", task.ID, st)
			}
			// A second edit starts from the parse the first one returned,
			// as File's next edit does: it must be as good as a full read.
			other := after.Tasks[(k+1)%len(after.Tasks)]
			st2 := StatusDone
			if other.Status == StatusDone {
				st2 = StatusOpen
			}
			checkParsedStatus(t, fm, next, other.ID, st2)
		}
	}
}

// checkParsedStatus sets id to st from cur and checks that the parse
// setStatus returns is exactly what reading its bytes gives, line numbers
// included: File writes it, and edits from it, without reading again.
func checkParsedStatus(t *testing.T, fm format, cur parsed, id string, st Status) parsed {
	t.Helper()
	next, err := fm.setStatus(cur, id, st)
	if err != nil {
		t.Fatalf("setStatus(%q, %s): %v\n%s", id, st, err, cur.source())
	}
	full, err := fm.read(cur.result().Path, next.source())
	if err != nil {
		t.Fatalf("setStatus(%q, %s) wrote an unreadable file: %v\n%s", id, st, err, next.source())
	}
	if diff := cmp.Diff(full.result(), next.result()); diff != "" {
		t.Fatalf("setStatus(%q, %s): the parse it returned is not that of its bytes (-read +returned):\n%s\nfrom:\n%s\nto:\n%s",
			id, st, diff, cur.source(), next.source())
	}
	return next
}

// setStatusBytes is format.setStatus on bytes: read, set, the new bytes.
func setStatusBytes(fm format, path string, data []byte, id string, st Status) ([]byte, error) {
	cur, err := fm.read(path, data)
	if err != nil {
		return nil, err
	}
	next, err := fm.setStatus(cur, id, st)
	if err != nil {
		return nil, err
	}
	return next.source(), nil
}

// recordsFailure: the markdown formats mark failure in the file; the JSON
// formats leave it to ralph's state (see jsontasks.go).
func recordsFailure(fm format) bool {
	switch fm.(type) {
	case prdFormat, tasksJSONFormat, mdJSONFormat:
		return false
	}
	return true
}

func TestSetStatusEveryFixture(t *testing.T) {
	t.Parallel()
	for name := range allFixtures() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := readFixture(t, name)
			fm, err := detect(name, data)
			if err != nil {
				t.Fatal(err)
			}
			checkSetStatus(t, fm, name, data)
			for _, l := range layouts[1:] {
				checkSetStatus(t, fm, name, l.fn(data))
			}
		})
	}
}

// A checkbox status change is one byte, and changing it back restores the
// file byte for byte.
func TestSetStatusMarkdownIsOneByte(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"IMPLEMENTATION_PLAN.md", "fix_plan.md", "portableralph-progress.md", "rslph-progress.md"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := readFixture(t, name)
			fm, _ := detect(name, data)
			plan, err := parsePlan(fm, name, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range plan.Tasks {
				for _, st := range []Status{StatusDone, StatusOpen, StatusFailed} {
					if st == task.Status {
						continue
					}
					out, err := setStatusBytes(fm, name, data, task.ID, st)
					if err != nil {
						t.Fatal(err)
					}
					_, oldMid, newMid := changedRange(data, out)
					// progress.md's Status follows the boxes: only when
					// the last open task is done.
					if len(oldMid) != 1 || len(newMid) != 1 {
						if !(fm.name() == FormatProgress && strings.Contains(newMid, "RALPH_DONE")) {
							t.Errorf("%s → %s changed %q to %q, want one byte", task.ID, st, oldMid, newMid)
						}
					}
					back, err := setStatusBytes(fm, name, out, task.ID, task.Status)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(back, data) && !bytes.Contains(back, []byte("IN_PROGRESS")) {
						t.Errorf("%s → %s → %s is not the original file:\n%s", task.ID, st, task.Status, back)
					}
				}
			}
		})
	}
}

// A mark goes with one space that separated it, and one between two words
// leaves a space: the title reads the same without it.
func TestWithoutMark(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Task 3: Docs ✅":  "Task 3: Docs",
		"✅ Task 2 — b":    "Task 2 — b",
		"Task 1: a ✅ b":   "Task 1: a b",
		"Task 1: a ✅b":    "Task 1: a b",
		"Task 1: a✅ b":    "Task 1: a b",
		"Task 0:00✅00":    "Task 0:00 00",
		"✅Task 1":         "Task 1",
		"Task 1: x ✅✅":    "Task 1: x",
		"Task 1: ✅":       "Task 1:",
		"✅":               "",
		"Task 4: no mark": "Task 4: no mark",
	} {
		got := withoutMark(in, markDoneEmoji)
		if got != want {
			t.Errorf("withoutMark(%q) = %q, want %q", in, got, want)
		}
		_, wantTitle, _ := taskHeading(in)
		if _, title, _ := taskHeading(got); title != wantTitle {
			t.Errorf("withoutMark(%q) = %q: title %q, was %q", in, got, title, wantTitle)
		}
	}
}

func TestSetStatusHeadingPlan(t *testing.T) {
	t.Parallel()
	data := readFixture(t, "heading-plan.md")
	tests := []struct {
		id       string
		st       Status
		old, new string // the one change, as strings.Replace would make it
	}{
		{"2", StatusDone, "- [ ] validate", "- [x] validate"},
		{"2", StatusFailed, "### Task 2: Wire the --idle-timeout flag\n", "### Task 2: Wire the --idle-timeout flag ❌\n"},
		{"4", StatusDone, "### Task 4: Verify on a real session\n", "### Task 4: Verify on a real session ✅\n"},
		{"3", StatusOpen, "### Task 3: Update the documentation ✅\n", "### Task 3: Update the documentation\n"},
		{"3", StatusFailed, "### Task 3: Update the documentation ✅\n", "### Task 3: Update the documentation ❌\n"},
	}
	for _, tt := range tests {
		got, err := setStatusBytes(headingFormat{}, "p.md", data, tt.id, tt.st)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(string(data), tt.old, tt.new, 1)
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s → %s (-want +got):\n%s", tt.id, tt.st, diff)
		}
	}
	// Reopening a task with ticked boxes unticks them all.
	got, err := setStatusBytes(headingFormat{}, "p.md", data, "1", StatusOpen)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(got), "- [x]"); n != 1 {
		t.Errorf("after reopening task 1, %d boxes are ticked, want 1 (task 2's)", n)
	}
}

func TestSetStatusTUIProgress(t *testing.T) {
	t.Parallel()
	data := readFixture(t, "ralph-tui-sample-progress.md")
	tests := []struct {
		id       string
		st       Status
		old, new string
	}{
		{"US-002", StatusDone, "- Status: in_progress", "- Status: completed"},
		{"US-003", StatusDone, "- US-003: Third user story (pending)", "- US-003: Third user story (completed)"},
		{"US-004", StatusFailed, "Fourth user story (pending)", "Fourth user story (failed)"},
		{"US-001", StatusOpen, "- Status: completed", "- Status: pending"},
	}
	for _, tt := range tests {
		got, err := setStatusBytes(progressFormat{}, "p.md", data, tt.id, tt.st)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(string(data), tt.old, tt.new, 1)
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s → %s (-want +got):\n%s", tt.id, tt.st, diff)
		}
	}
}

func TestProgressStatusFollowsTheBoxes(t *testing.T) {
	t.Parallel()
	data := readFixture(t, "portableralph-progress.md")
	out := data
	for _, id := range []string{"2", "3"} {
		var err error
		if out, err = setStatusBytes(progressFormat{}, "p", out, id, StatusDone); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Replace(strings.Replace(strings.Replace(string(data), "- [ ] Task 2", "- [x] Task 2", 1),
		"- [ ] Task 3", "- [x] Task 3", 1), "## Status\nIN_PROGRESS", "## Status\nRALPH_DONE", 1)
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Fatalf("all done (-want +got):\n%s", diff)
	}
	back, err := setStatusBytes(progressFormat{}, "p", out, "1", StatusOpen)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(back, []byte("## Status\nIN_PROGRESS")) || !bytes.Contains(back, []byte("- [ ] Task 1")) {
		t.Errorf("reopened:\n%s", back)
	}
}

func TestTasksJSONKeepsUnknownFields(t *testing.T) {
	t.Parallel()
	data := readFixture(t, "ral-tasks.json")
	out, err := setStatusBytes(tasksJSONFormat{}, "tasks.json", data, "docs", StatusDone)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(data), `"passes": false,
    "reviewer"`, `"passes": true,
    "reviewer"`, 1)
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMarkdownJSONEditsOnlyTheBlock(t *testing.T) {
	t.Parallel()
	data := readFixture(t, "ral-plan.md")
	out, err := setStatusBytes(mdJSONFormat{}, "plan.md", data, "2", StatusDone)
	if err != nil {
		t.Fatal(err)
	}
	start, oldMid, newMid := changedRange(data, out)
	if oldMid != "fals" || newMid != "tru" || !bytes.HasSuffix(data[:start], []byte(`"passes": `)) {
		t.Errorf("changed %q to %q at %d", oldMid, newMid, start)
	}
}

func TestAddEveryFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		task    Task
		wantID  string
		want    string // the inserted text
	}{
		{"snarktank-prd.json.example", Task{Title: "Sort by priority", Priority: 5, Criteria: []string{"Typecheck passes"}}, "US-005",
			",\n    {\n      \"id\": \"US-005\",\n      \"title\": \"Sort by priority\",\n      \"acceptanceCriteria\": [\n        \"Typecheck passes\"\n      ],\n      \"priority\": 5,\n      \"passes\": false\n    }"},
		{"ral-tasks.json", Task{Title: "Publish the binary", Category: "release"}, "4",
			""},
		{"fix_plan.md", Task{Title: "Log the bound address"}, "4", "- [ ] Log the bound address\n"},
		{"IMPLEMENTATION_PLAN.md", Task{Title: "Archive old reports", DependsOn: []string{"REP-2"}}, "7",
			"  - [ ] Archive old reports\n    - Depends on: REP-2\n"},
		{"rslph-progress.md", Task{Title: "Support `-E`"}, "5", "- [ ] Support `-E`\n"},
		{"heading-plan.md", Task{Title: "Release", Criteria: []string{"tag v1"}}, "5", "### Task 5: Release\n\n- [ ] tag v1\n\n"},
		{"ral-plan.md", Task{Title: "Pause the timer"}, "3", ""},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			path := writeTemp(t, tt.fixture, readFixture(t, tt.fixture), 0o644)
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			before := f.Bytes()
			got, err := f.Add(tt.task)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != tt.wantID {
				t.Errorf("new task id %q, want %q", got.ID, tt.wantID)
			}
			if got.Title != tt.task.Title || got.Status != StatusOpen {
				t.Errorf("new task %+v", got)
			}
			after := mustRead(t, path)
			if _, oldMid, _ := changedRange(before, after); oldMid != "" {
				t.Errorf("Add replaced %q, want a pure insertion", oldMid)
			}
			if tt.want != "" && !bytes.Equal(bytes.Replace(after, []byte(tt.want), nil, 1), before) {
				t.Errorf("inserted something else than %q:\n%s", tt.want, after)
			}
			plan := f.Plan()
			if n := len(plan.Tasks); plan.Tasks[n-1].ID != got.ID {
				t.Errorf("the new task is not last")
			}
			if _, err := f.Add(Task{Title: "again", ID: got.ID}); err == nil {
				t.Error("adding a duplicate id worked")
			}
		})
	}
}

func TestNewTaskID(t *testing.T) {
	t.Parallel()
	ids := func(list ...string) *Plan {
		p := &Plan{}
		for _, id := range list {
			p.Tasks = append(p.Tasks, Task{ID: id})
		}
		return p
	}
	tests := []struct {
		plan       *Plan
		positional bool
		want       string
	}{
		{ids(), false, "US-001"},
		{ids(), true, "1"},
		{ids("1", "2"), false, "3"},
		{ids("US-001", "US-009", "US-003"), false, "US-010"},
		{ids("T9"), false, "T10"},
		{ids("a", "b"), false, "US-001"},
		{ids("a", "US-001"), false, "US-002"},
		{ids("1", "docs"), true, "3"},
		{ids("3", "x"), true, "4"},
		{ids("US-001", "3"), true, "4"},
	}
	for _, tt := range tests {
		if got := newTaskID(tt.plan, tt.positional, "US-001"); got != tt.want {
			t.Errorf("newTaskID(%v) = %q, want %q", tt.plan.Tasks, got, tt.want)
		}
	}
}

// samplePlan has every field a plan can carry, for round trips.
func samplePlan() *Plan {
	return &Plan{
		Name:        "Greeter",
		Description: "A friendly greeting tool.\nIt says hello.",
		Tasks: []Task{
			{ID: "US-001", Title: "Create the greeting", Description: "As a user, I want hello.sh.", Criteria: []string{"prints hello", "is executable"},
				Priority: 1, Status: StatusDone, Category: "Core"},
			{ID: "US-002", Title: "Greet by name", Description: "First paragraph.\n\nSecond paragraph.", Criteria: []string{"hello.sh Ada prints hello, Ada"},
				Priority: 2, DependsOn: []string{"US-001"}, Status: StatusOpen, Notes: "keep it POSIX", Category: "Core",
				Agent: "codex", Model: "gpt-5.1-codex"},
			{ID: "US-003", Title: "Add a farewell", Priority: 3, DependsOn: []string{"US-001", "US-002"}, Status: StatusFailed, Category: "Extras"},
			{ID: "US-004", Title: "Document it", Status: StatusOpen, Category: "Extras", Model: "opus"},
		},
	}
}

// positionalPlan is a plan whose ids are positions, as ral and checklists
// have them.
func positionalPlan() *Plan {
	return &Plan{Name: "Tool", Description: "Does things.", Tasks: []Task{
		{ID: "1", Title: "Set up", Criteria: []string{"go build passes"}, Status: StatusDone},
		{ID: "2", Title: "Parse input", DependsOn: []string{"1"}, Status: StatusOpen},
		{ID: "3", Title: "Write output", Priority: 2, Status: StatusFailed, Agent: "claude"},
	}}
}

// holds says which parts of a plan a format keeps.
func holds(formatName string) (category, header bool) {
	switch formatName {
	case FormatTasksJSON:
		return true, false
	case FormatChecklist, FormatHeadingPlan:
		return false, true
	}
	return true, true
}

func comparable(p *Plan, category, header bool) *Plan {
	c := &Plan{}
	if header {
		c.Name, c.Description = p.Name, p.Description
	}
	for _, t := range p.Tasks {
		if !category {
			t.Category = ""
		}
		t.Line, t.AgentLine, t.ModelLine = 0, 0, 0
		c.Tasks = append(c.Tasks, t)
	}
	return c
}

// Every pair of formats: A → B → A keeps ids, titles, descriptions,
// criteria, priorities, dependencies, notes, agents, models and status (and the category
// and header where both formats have them).
func TestConvertRoundTripEveryPair(t *testing.T) {
	t.Parallel()
	for _, sample := range []func() *Plan{samplePlan, positionalPlan} {
		for _, a := range Formats() {
			for _, b := range Formats() {
				t.Run(fmt.Sprintf("%s-%s-%s", a, b, sample().Tasks[0].ID), func(t *testing.T) {
					t.Parallel()
					orig := sample()
					ca, ha := holds(a)
					cb, hb := holds(b)
					pa := roundTrip(t, a, orig)
					if diff := cmp.Diff(comparable(orig, ca, ha), comparable(pa, ca, ha), cmpopts.EquateEmpty()); diff != "" {
						t.Fatalf("%s (-want +got):\n%s", a, diff)
					}
					pb := roundTrip(t, b, pa)
					back := roundTrip(t, a, pb)
					if diff := cmp.Diff(comparable(orig, ca && cb, ha && hb), comparable(back, ca && cb, ha && hb), cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("%s → %s → %s (-want +got):\n%s", a, b, a, diff)
					}
				})
			}
		}
	}
}

// roundTrip encodes p in a format and reads it back.
func roundTrip(t *testing.T, formatName string, p *Plan) *Plan {
	t.Helper()
	data, err := Encode(formatName, p)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("x", DefaultFile(formatName))
	got, err := ParseAs(formatName, path, data)
	if err != nil {
		t.Fatalf("%s: %v\n%s", formatName, err, data)
	}
	if fm, err := detect(path, data); err != nil || fm.name() != formatName {
		t.Errorf("%s written is detected as %v (%v)", formatName, fm, err)
	}
	return got
}

func TestEncodeIsStable(t *testing.T) {
	t.Parallel()
	// Encoding what was read from an encoded plan gives the same bytes.
	for _, name := range Formats() {
		data, err := Encode(name, samplePlan())
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseAs(name, DefaultFile(name), data)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, data)
		}
		again, err := Encode(name, p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(data), string(again)); diff != "" && name != FormatTasksJSON {
			t.Errorf("%s (-first +second):\n%s", name, diff)
		}
	}
}

func TestMarkdownValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, in string
		format         string // detected when empty
		want           []string
	}{
		{
			name: "checklist: duplicate ids, unknown dependency, bad priority",
			path: "fix_plan.md",
			in:   "# Plan\n\n- [ ] T-1: a\n- [ ] T-1: b\n- [ ] c\n  - Depends on: T-9\n  - Priority: high\n",
			want: []string{
				`fix_plan.md:7: priority: want a whole number, got "high" — use a number, 1 runs first`,
				`fix_plan.md:4: id: duplicate id "T-1" (first on line 3)`,
				`fix_plan.md:6: depends on: unknown id "T-9"`,
			},
		},
		{
			name: "checklist: cycle",
			path: "IMPLEMENTATION_PLAN.md",
			in:   "- [ ] A1: a\n  Depends on: B1\n- [ ] B1: b\n  - Depends on: A1\n",
			want: []string{`IMPLEMENTATION_PLAN.md:2: depends on: dependency cycle: A1 → B1 → A1`},
		},
		{
			name: "checklist: no tasks",
			path: "IMPLEMENTATION_PLAN.md",
			in:   "# Plan\n\n- one\n- two\n",
			want: []string{`IMPLEMENTATION_PLAN.md: no tasks: a checklist plan lists its tasks as "- [ ] ..." items`},
		},
		{
			name: "progress: no tasks section",
			path: "progress.md",
			in:   "# Progress: x\n\n## Status\n\nIN_PROGRESS\n",
			want: []string{`progress.md: no ## Tasks section: a progress.md lists its tasks as "- [ ] ..." items under ## Tasks`},
		},
		{
			name: "progress: empty tasks",
			path: "progress.md",
			in:   "# Progress: x\n\n## Tasks\n\n## Notes\n- [ ] not here\n",
			want: []string{`progress.md:3: no tasks: list them under ## Tasks as "- [ ] ..." items`},
		},
		{
			name: "heading plan: duplicate task numbers",
			path: "PLAN.md",
			in:   "# P\n\n### Task 1: a\n\n### Task 1: b\n\n- Depends on: 7\n",
			want: []string{
				`PLAN.md:5: id: duplicate id "1" (first on line 3)`,
				`PLAN.md:7: depends on: unknown id "7"`,
			},
		},
		{
			name: "markdown json: errors on the file's lines",
			path: "plan.md",
			in:   "# P\n\n```json\n[\n  {\"description\": \"a\",\n   \"passes\": \"true\"}\n]\n```\n",
			want: []string{`plan.md:6: [0].passes: want true or false, got "true" (a string) — remove the quotes`},
		},
		{
			name: "markdown json: syntax error line",
			path: "plan.md",
			in:   "# P\n\ntext\n\n```json\n[\n  {\"description\": \"a\", \"passes\": false},\n]\n```\n",
			want: []string{`plan.md:8: invalid JSON: invalid character ']' looking for beginning of value`},
		},
		{
			name: "tasks.json: usual mistakes",
			path: "tasks.json",
			in:   "[\n  {\"description\": \"a\", \"passes\": \"false\", \"priority\": \"2\"},\n  {\"id\": 1.5, \"description\": \"b\"}\n]\n",
			want: []string{
				`tasks.json:2: [0].priority: want a number, got "2" (a string) — remove the quotes`,
				`tasks.json:2: [0].passes: want true or false, got "false" (a string) — remove the quotes`,
				`tasks.json:3: [1].id: want a string or a whole number, got 1.5`,
			},
		},
		{
			name: "tasks.json: a prd.json by mistake",
			path: "tasks.json", format: FormatTasksJSON,
			in:   "{\"userStories\": []}",
			want: []string{`tasks.json:1: want a JSON array of tasks, [{"description": "...", "steps": [...], "passes": false}, ...], got an object — an object with "userStories" is a prd.json: name the file prd.json`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tt.format != "" {
				_, err = ParseAs(tt.format, tt.path, []byte(tt.in))
			} else {
				_, err = Parse(tt.path, []byte(tt.in))
			}
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tt.want, errorLines(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseHead(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, id, title string }{
		{"US-001: Title", "US-001", "Title"},
		{"**T3** - Do it", "T3", "Do it"},
		{"**P1.2: Bold all**", "P1.2", "Bold all"},
		{"Task 7: Seven", "7", "Seven"},
		{"task 2.1 — Sub", "2.1", "Sub"},
		{"Fix: the bug", "", "Fix: the bug"},
		{"Add v2 support", "", "Add v2 support"},
		{"US-001:", "", "US-001:"},
		{"[REP-4]: bracketed", "REP-4", "bracketed"},
	}
	for _, tt := range tests {
		id, title := parseHead(tt.in)
		if id != tt.id || title != tt.title {
			t.Errorf("parseHead(%q) = %q, %q; want %q, %q", tt.in, id, title, tt.id, tt.title)
		}
	}
}

func TestRecordIteration(t *testing.T) {
	t.Parallel()
	data := readFixture(t, "rslph-progress.md")
	path := writeTemp(t, "progress.md", data, 0o644)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	started := mustTime(t, "2026-01-17T11:00:00Z")
	for i := 2; i <= 7; i++ {
		rec := IterationRecord{Iteration: i, Started: started, Duration: 90_500_000_000, TaskID: "2", Outcome: "no_marker", Error: "the agent ended | without a marker"}
		if i == 7 {
			rec = IterationRecord{Iteration: i, Started: started, Duration: 60_000_000_000, TaskID: "2", Outcome: "task_done", Done: []string{"2"}}
		}
		if err := f.RecordIteration(rec); err != nil {
			t.Fatal(err)
		}
	}
	got := string(mustRead(t, path))
	// Everything before the log is untouched.
	head, _, _ := strings.Cut(string(data), "## Completed This Iteration")
	if !strings.HasPrefix(got, head) {
		t.Errorf("the part before the log changed:\n%s", got)
	}
	for _, want := range []string{
		"## Completed This Iteration\n\n- [x] Add `-n` flag for newline suppression\n\n## Recent Attempts",
		"### Iteration 3\n\n- Tried: 2: Add `-n` flag for newline suppression\n- Result: no_marker — the agent ended | without a marker\n",
		"### Iteration 7\n\n- Tried: 2: Add `-n` flag for newline suppression\n- Result: task_done\n",
		"| 1 | 2026-01-17 10:00 | 5m 30s | 1 | Initial run |\n| 2 | ",
		" | 1m31s | 0 | 2: no_marker — the agent ended \\| without a marker |\n",
		" | 1m0s | 1 | 2: task_done |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "### Iteration 2\n") || strings.Count(got, "### Iteration ") != maxRecentAttempts {
		t.Errorf("Recent Attempts keeps %d, want the last %d:\n%s", strings.Count(got, "### Iteration "), maxRecentAttempts, got)
	}
	if strings.Count(got, "\n| ") != 1+1+6 { // header, separator, 7 rows: "\n| " starts all but the header
		t.Logf("log:\n%s", got)
	}

	// A plan without the sections gets them; other formats ignore it.
	p2 := writeTemp(t, "progress.md", []byte("# Progress: x\n\n## Tasks\n\n- [ ] a\n"), 0o644)
	g, err := Load(p2)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.RecordIteration(IterationRecord{Iteration: 1, Started: started, TaskID: "1", Outcome: "timeout"}); err != nil {
		t.Fatal(err)
	}
	want := "# Progress: x\n\n## Tasks\n\n- [ ] a\n\n## Completed This Iteration\n\n## Recent Attempts\n\n### Iteration 1\n\n- Tried: 1: a\n- Result: timeout\n\n## Iteration Log\n\n" +
		iterationLogHeader + "| 1 | " + started.Local().Format("2006-01-02 15:04") + " | 0s | 0 | 1: timeout |\n"
	if diff := cmp.Diff(want, string(mustRead(t, p2))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	prd := writeTemp(t, "prd.json", readFixture(t, "snarktank-prd.json.example"), 0o644)
	h, err := Load(prd)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.RecordIteration(IterationRecord{Iteration: 1}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, prd), readFixture(t, "snarktank-prd.json.example")) {
		t.Error("RecordIteration changed a prd.json")
	}
}

func TestFileSetStatusRefusesMovedPositionalTask(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, "fix_plan.md", []byte("- [ ] a\n- [ ] b\n"), 0o644)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// Someone inserts a task at the top: task 2 is now "a".
	theirs := "- [ ] new\n- [ ] a\n- [ ] b\n"
	writeFile(t, path, theirs)
	err = f.SetStatus("2", StatusDone)
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), `task 2 is now "a", not "b"`) {
		t.Fatalf("got %v, want ErrChanged naming the move", err)
	}
	if got := string(mustRead(t, path)); got != theirs {
		t.Errorf("file changed to %q", got)
	}
	// An edit elsewhere merges.
	theirs = "- [ ] a\n- [ ] b\n- [ ] c\n"
	writeFile(t, path, theirs)
	g, _ := Load(path)
	writeFile(t, path, "- [x] a\n- [ ] b\n- [ ] c\n")
	if err := g.SetStatus("2", StatusDone); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, path)); got != "- [x] a\n- [x] b\n- [ ] c\n" {
		t.Errorf("merged file %q", got)
	}
}

func TestContextFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"tasks.json", "plan.md", "activity.md"} {
		writeFile(t, filepath.Join(dir, name), "x\n")
	}
	got := ContextFiles(&Plan{Path: filepath.Join(dir, "tasks.json"), Format: FormatTasksJSON})
	var names []string
	for _, f := range got {
		names = append(names, filepath.Base(f.Path))
	}
	if diff := cmp.Diff([]string{"plan.md", "activity.md"}, names); diff != "" {
		t.Errorf("tasks.json (-want +got):\n%s", diff)
	}
	// A markdown plan with a JSON list is plan.md itself: only activity.md.
	got = ContextFiles(&Plan{Path: filepath.Join(dir, "plan.md"), Format: FormatMarkdownJSON})
	if len(got) != 1 || filepath.Base(got[0].Path) != "activity.md" {
		t.Errorf("markdown-json: %v", got)
	}
	if got := ContextFiles(&Plan{Path: filepath.Join(dir, "prd.json"), Format: FormatPRD}); got != nil {
		t.Errorf("prd.json: %v", got)
	}
	if got := ContextFiles(&Plan{Path: filepath.Join(t.TempDir(), "tasks.json"), Format: FormatTasksJSON}); got != nil {
		t.Errorf("no companions: %v", got)
	}
}

// Selection works the same on every format: priority, then file order,
// dependencies done first, failed tasks skipped.
func TestNextEveryFixture(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"ral-tasks.json":               "2",
		"rslph-progress.md":            "2",
		"portableralph-progress.md":    "2",
		"ralph-tui-sample-progress.md": "US-002",
		"IMPLEMENTATION_PLAN.md":       "REP-2", // priority 1 first; 4 failed is never picked
		"fix_plan.md":                  "1",
		"heading-plan.md":              "2",
		"ral-plan.md":                  "2",
		"ralph-tui-sample-prd.json":    "US-001",
		"ralph-tui-test-prd.json":      "TEST-001",
		"snarktank-prd.json.example":   "US-001",
	}
	for name, id := range want {
		p, err := Parse(name, readFixture(t, name))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := p.Next(nil)
		if !ok || got.ID != id {
			t.Errorf("%s: Next() = %q, %v; want %q", name, got.ID, ok, id)
		}
	}
	// After REP-2, task 3 (which waited on it) comes before 5, and the
	// failed 4 never does.
	p, _ := Parse("IMPLEMENTATION_PLAN.md", readFixture(t, "IMPLEMENTATION_PLAN.md"))
	var order []string
	for {
		nt, ok := p.Next(nil)
		if !ok {
			break
		}
		order = append(order, nt.ID)
		setTask(p, nt.ID, StatusDone)
	}
	if diff := cmp.Diff([]string{"REP-2", "3", "5", "6"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if next, ok := p.Next(nil); ok || p.Open() != 1 {
		t.Errorf("with only the failed task left: Next = %v, %v; Open %d; want nothing next, 1 open", next.ID, ok, p.Open())
	}
}

// An empty heading ("###") has no lines of its own; its place is taken
// from what comes before it, a list included, so that it ends the section
// where it stands.
func TestEmptyHeadingAfterList(t *testing.T) {
	t.Parallel()
	src := "## Tasks\n\n- a\n- b\n  - c\n\n###\n\ntext\n"
	doc := parseMarkdown([]byte(src))
	var empty *mdHeading
	for _, h := range doc.headings {
		if h.text == "" {
			empty = h
		}
	}
	if empty == nil {
		t.Fatal("no empty heading")
	}
	if list := strings.Index(src, "  - c\n") + len("  - c\n"); empty.start < list || empty.start > strings.Index(src, "###") {
		t.Errorf("empty heading at %d, want between the list's end (%d) and the ### (%d)", empty.start, list, strings.Index(src, "###"))
	}
}
