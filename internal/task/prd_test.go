package task

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fixturePlans is what each prd fixture must parse to.
var fixturePlans = map[string]*Plan{
	"ralph-tui-sample-prd.json": {
		Path: "ralph-tui-sample-prd.json", Format: "prd.json",
		Name:        "Sample Feature",
		Description: "A sample feature for testing purposes",
		Branch:      "feature/sample-feature",
		Tasks: []Task{
			{
				ID: "US-001", Title: "First user story",
				Description: "As a developer, I want to load sample PRDs for testing",
				Criteria:    []string{"PRD file can be loaded", "Data matches expected structure"},
				Priority:    1, Status: StatusOpen, Line: 11,
			},
			{
				ID: "US-002", Title: "Second user story",
				Description: "As a tester, I want to verify PRD parsing",
				Criteria:    []string{"User stories are parsed correctly", "All fields are populated"},
				Priority:    2, DependsOn: []string{"US-001"}, Status: StatusOpen, Line: 23,
			},
		},
	},
	"ralph-tui-test-prd.json": {
		Path: "ralph-tui-test-prd.json", Format: "prd.json",
		Name:        "Ralph-TUI Test Feature",
		Description: "Test PRD for manually testing Ralph-TUI end-to-end workflow",
		Branch:      "test/ralph-tui-e2e",
		Tasks: []Task{
			{
				ID: "TEST-001", Title: "Create test file A",
				Description: "Create a simple test file named 'output-a.txt' containing 'Task A completed'",
				Criteria:    []string{"File output-a.txt exists in the test-workspace directory", "File contains the text 'Task A completed'"},
				Priority:    1, Status: StatusOpen, Line: 6,
			},
			{
				ID: "TEST-002", Title: "Create test file B",
				Description: "Create a simple test file named 'output-b.txt' containing 'Task B completed'",
				Criteria:    []string{"File output-b.txt exists in the test-workspace directory", "File contains the text 'Task B completed'"},
				Priority:    1, Status: StatusOpen, Line: 22,
			},
			{
				ID: "TEST-003", Title: "Create test file C",
				Description: "Create a simple test file named 'output-c.txt' containing 'Task C completed'",
				Criteria:    []string{"File output-c.txt exists in the test-workspace directory", "File contains the text 'Task C completed'"},
				Priority:    2, Status: StatusOpen, Line: 38,
			},
			{
				ID: "TEST-004", Title: "Merge outputs A and B",
				Description: "Create merged-ab.txt that combines content from output-a.txt and output-b.txt",
				Criteria:    []string{"File merged-ab.txt exists", "File contains content from both output-a.txt and output-b.txt"},
				Priority:    2, DependsOn: []string{"TEST-001", "TEST-002"}, Status: StatusOpen, Line: 54,
			},
			{
				ID: "TEST-005", Title: "Create final summary",
				Description: "Create summary.txt that lists all completed tasks and their outputs",
				Criteria:    []string{"File summary.txt exists", "File lists all completed tasks", "File confirms merged-ab.txt and output-c.txt exist"},
				Priority:    3, DependsOn: []string{"TEST-003", "TEST-004"}, Status: StatusOpen, Line: 72,
			},
		},
	},
	"snarktank-prd.json.example": {
		Path: "snarktank-prd.json.example", Format: "prd.json",
		Name:        "MyApp",
		Description: "Task Priority System - Add priority levels to tasks",
		Branch:      "ralph/task-priority",
		Tasks: []Task{
			{
				ID: "US-001", Title: "Add priority field to database",
				Description: "As a developer, I need to store task priority so it persists across sessions.",
				Criteria:    []string{"Add priority column to tasks table: 'high' | 'medium' | 'low' (default 'medium')", "Generate and run migration successfully", "Typecheck passes"},
				Priority:    1, Status: StatusOpen, Line: 6,
			},
			{
				ID: "US-002", Title: "Display priority indicator on task cards",
				Description: "As a user, I want to see task priority at a glance.",
				Criteria:    []string{"Each task card shows colored priority badge (red=high, yellow=medium, gray=low)", "Priority visible without hovering or clicking", "Typecheck passes", "Verify in browser using dev-browser skill"},
				Priority:    2, Status: StatusOpen, Line: 19,
			},
			{
				ID: "US-003", Title: "Add priority selector to task edit",
				Description: "As a user, I want to change a task's priority when editing it.",
				Criteria:    []string{"Priority dropdown in task edit modal", "Shows current priority as selected", "Saves immediately on selection change", "Typecheck passes", "Verify in browser using dev-browser skill"},
				Priority:    3, Status: StatusOpen, Line: 33,
			},
			{
				ID: "US-004", Title: "Filter tasks by priority",
				Description: "As a user, I want to filter the task list to see only high-priority items.",
				Criteria:    []string{"Filter dropdown with options: All | High | Medium | Low", "Filter persists in URL params", "Empty state message when no tasks match filter", "Typecheck passes", "Verify in browser using dev-browser skill"},
				Priority:    4, Status: StatusOpen, Line: 48,
			},
		},
	},
}

func TestParsePRDFixtures(t *testing.T) {
	t.Parallel()
	for name, want := range fixturePlans {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := parsePlan(prdFormat{}, name, readFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePRDFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want *Plan
	}{
		{
			name: "project wins over name, nulls are absent, passes true is done",
			in: `{"project": "P", "name": "N", "branchName": null, "userStories": [
  {"id": "A", "title": null, "passes": true, "notes": "n", "priority": 2.0, "dependsOn": null},
  {"id": "B", "passes": null, "priority": -1, "acceptanceCriteria": [], "extra": {"x": [1, 2]}}
]}`,
			want: &Plan{Path: "p", Format: "prd.json", Name: "P", Tasks: []Task{
				{ID: "A", Priority: 2, Notes: "n", Status: StatusDone, Line: 2},
				{ID: "B", Priority: -1, Status: StatusOpen, Line: 3},
			}},
		},
		{
			name: "name when no project; empty story list",
			in:   "\ufeff{\"name\": \"N\", \"userStories\": []}",
			want: &Plan{Path: "p", Format: "prd.json", Name: "N"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parsePlan(prdFormat{}, "p", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// reindent rewrites the 2-space indentation of a fixture.
func reindent(data []byte, unit string) []byte {
	lead := regexp.MustCompile(`(?m)^( {2})+`)
	return lead.ReplaceAllFunc(data, func(m []byte) []byte {
		return []byte(strings.Repeat(unit, len(m)/2))
	})
}

// layouts are the same plan written the ways editors and tools write it.
var layouts = []struct {
	name string
	fn   func([]byte) []byte
}{
	{"2-space", func(b []byte) []byte { return b }},
	{"4-space", func(b []byte) []byte { return reindent(b, "    ") }},
	{"tab", func(b []byte) []byte { return reindent(b, "\t") }},
	{"CRLF", func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }},
	{"tab CRLF BOM", func(b []byte) []byte {
		return append([]byte("\ufeff"), bytes.ReplaceAll(reindent(b, "\t"), []byte("\n"), []byte("\r\n"))...)
	}},
}

// changedRange returns the differing middle of a and b after their common
// prefix and suffix.
func changedRange(a, b []byte) (start int, oldMid, newMid string) {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return p, string(a[p : len(a)-s]), string(b[p : len(b)-s])
}

func TestSetStatusSplicesOnlyThePassesValue(t *testing.T) {
	t.Parallel()
	for _, fixture := range []string{"snarktank-prd.json.example", "ralph-tui-test-prd.json"} {
		for _, layout := range layouts {
			t.Run(fixture+"/"+layout.name, func(t *testing.T) {
				t.Parallel()
				in := layout.fn(readFixture(t, fixture))
				before, err := parsePlan(prdFormat{}, fixture, in)
				if err != nil {
					t.Fatal(err)
				}
				for _, task := range before.Tasks {
					out, err := setStatusBytes(prdFormat{}, fixture, in, task.ID, StatusDone)
					if err != nil {
						t.Fatal(err)
					}
					start, oldMid, newMid := changedRange(in, out)
					// "false" → "true" share the trailing "e"; what differs
					// must be the rest of that one token.
					if oldMid != "fals" || newMid != "tru" {
						t.Fatalf("%s: changed %q to %q, want only the passes value", task.ID, oldMid, newMid)
					}
					if !bytes.HasSuffix(in[:start], []byte(`"passes": `)) {
						t.Errorf("%s: edit at %d is not a passes value: %q", task.ID, start, in[max(0, start-20):start+5])
					}
					after, err := parsePlan(prdFormat{}, fixture, out)
					if err != nil {
						t.Fatal(err)
					}
					want := clonePlan(before)
					setTask(want, task.ID, StatusDone)
					if diff := cmp.Diff(want, after); diff != "" {
						t.Errorf("%s: plan after (-want +got):\n%s", task.ID, diff)
					}
					// And back: reset restores the original bytes.
					back, err := setStatusBytes(prdFormat{}, fixture, out, task.ID, StatusOpen)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(back, in) {
						t.Errorf("%s: done then open is not the original file", task.ID)
					}
				}
			})
		}
	}
}

// A run of status changes, each from the parse the previous one returned
// (as File does), splices "passes" values without reading the file again,
// and every parse on the way is the one a full read gives.
func TestSetStatusChainsWithoutReading(t *testing.T) {
	t.Parallel()
	for _, fm := range []format{prdFormat{}, tasksJSONFormat{}} {
		t.Run(fm.name(), func(t *testing.T) {
			t.Parallel()
			data := planN(12)
			if fm.name() == FormatTasksJSON {
				// The same stories as a plain array, with CRLF line ends and
				// a null "passes".
				data = bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
				data = data[bytes.IndexByte(data, '[') : bytes.LastIndexByte(data, ']')+1]
				data = bytes.Replace(data, []byte(`"passes": false`), []byte(`"passes": null`), 1)
			}
			cur, err := fm.read("plan", data)
			if err != nil {
				t.Fatal(err)
			}
			// Done in an order that moves offsets both before and after
			// the last edit, then open again.
			order := []int{3, 0, 11, 7, 1, 2, 10, 4, 6, 5, 9, 8}
			for _, st := range []Status{StatusDone, StatusOpen} {
				for _, k := range order {
					id := cur.result().Tasks[k].ID
					next := checkParsedStatus(t, fm, cur, id, st)
					if d := next.(*jsonTasks); d.nodes != nil {
						t.Fatalf("%s %s: read the file again, want a spliced literal", id, st)
					}
					cur = next
				}
			}
			// Every story is open again: "false" everywhere, the null too.
			if want := bytes.Replace(data, []byte(`"passes": null`), []byte(`"passes": false`), 1); !bytes.Equal(cur.source(), want) {
				t.Errorf("after done and open again:\n%s\nwant:\n%s", cur.source(), want)
			}
		})
	}
}

// A failed story loses "failed" when it is reset: the general path, read
// in full; the edit after it is spliced again.
func TestSetStatusAfterFailedMember(t *testing.T) {
	t.Parallel()
	in := `{"userStories": [{"id": "A", "passes": false, "failed": true}, {"id": "B", "passes": false}]}`
	cur, err := prdFormat{}.read("p", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	next := checkParsedStatus(t, prdFormat{}, cur, "A", StatusOpen)
	if got, want := string(next.source()), `{"userStories": [{"id": "A", "passes": false}, {"id": "B", "passes": false}]}`; got != want {
		t.Fatalf("reset A:\n got %s\nwant %s", got, want)
	}
	next = checkParsedStatus(t, prdFormat{}, next, "B", StatusDone)
	if got, want := string(next.source()), `{"userStories": [{"id": "A", "passes": false}, {"id": "B", "passes": true}]}`; got != want {
		t.Fatalf("B done:\n got %s\nwant %s", got, want)
	}
}

func clonePlan(p *Plan) *Plan {
	c := *p
	c.Tasks = append([]Task(nil), p.Tasks...)
	return &c
}

func setTask(p *Plan, id string, st Status) {
	for i := range p.Tasks {
		if p.Tasks[i].ID == id {
			p.Tasks[i].Status = st
		}
	}
}

func TestSetStatusInsertsMissingPasses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, id, want string
	}{
		{
			name: "2-space",
			in:   "{\n  \"userStories\": [\n    {\n      \"id\": \"A\",\n      \"dependsOn\": []\n    }\n  ]\n}\n",
			id:   "A",
			want: "{\n  \"userStories\": [\n    {\n      \"id\": \"A\",\n      \"dependsOn\": [],\n      \"passes\": true\n    }\n  ]\n}\n",
		},
		{
			name: "4-space",
			in:   "{\n    \"userStories\": [\n        {\n            \"id\": \"A\"\n        }\n    ]\n}\n",
			id:   "A",
			want: "{\n    \"userStories\": [\n        {\n            \"id\": \"A\",\n            \"passes\": true\n        }\n    ]\n}\n",
		},
		{
			name: "tab CRLF",
			in:   "{\r\n\t\"userStories\": [\r\n\t\t{\r\n\t\t\t\"id\": \"A\",\r\n\r\n\t\t\t\"title\": \"t\"\r\n\t\t}\r\n\t]\r\n}\r\n",
			id:   "A",
			want: "{\r\n\t\"userStories\": [\r\n\t\t{\r\n\t\t\t\"id\": \"A\",\r\n\r\n\t\t\t\"title\": \"t\",\r\n\t\t\t\"passes\": true\r\n\t\t}\r\n\t]\r\n}\r\n",
		},
		{
			name: "compact, second story",
			in:   `{"userStories":[{"id":"A"},{"id":"B","x":{"passes":false}}]}`,
			id:   "B",
			want: `{"userStories":[{"id":"A"},{"id":"B","x":{"passes":false},"passes":true}]}`,
		},
		{
			name: "one line with spaces",
			in:   `{"userStories": [ {"id" : "A", "title" : "t"} ]}`,
			id:   "A",
			want: `{"userStories": [ {"id" : "A", "title" : "t", "passes" : true} ]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := setStatusBytes(prdFormat{}, "p", []byte(tt.in), tt.id, StatusDone)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("ralph-tui sample has no passes keys", func(t *testing.T) {
		t.Parallel()
		in := readFixture(t, "ralph-tui-sample-prd.json")
		got, err := setStatusBytes(prdFormat{}, "p", in, "US-001", StatusDone)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(string(in), `"dependsOn": []`, "\"dependsOn\": [],\n      \"passes\": true", 1)
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("file (-want +got):\n%s", diff)
		}
	})
}

func TestSetStatusNoChange(t *testing.T) {
	t.Parallel()
	const in = `{"userStories": [{"id": "A", "passes": true}, {"id": "B"}, {"id": "C", "passes": null}, {"id": "D", "passes": false}]}`
	tests := []struct {
		id string
		st Status
	}{
		{"A", StatusDone},
		{"B", StatusOpen},
		{"C", StatusOpen},
		{"D", StatusOpen},
	}
	for _, tt := range tests {
		t.Run(tt.id+"/"+string(tt.st), func(t *testing.T) {
			t.Parallel()
			got, err := setStatusBytes(prdFormat{}, "p", []byte(in), tt.id, tt.st)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(in, string(got)); diff != "" {
				t.Errorf("file changed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetStatusFailed(t *testing.T) {
	t.Parallel()
	// The runner's failure is not written (it lives in ralph's state); a
	// "failed" key another writer left is removed when the story is done or
	// open again.
	tests := []struct {
		name, in, id string
		st           Status
		want         string
	}{
		{
			name: "open to failed: nothing changes",
			in:   `{"userStories": [{"id": "A", "passes": false}]}`,
			id:   "A", st: StatusFailed,
			want: `{"userStories": [{"id": "A", "passes": false}]}`,
		},
		{
			name: "done to failed: nothing changes",
			in:   `{"userStories": [{"id": "A", "passes": true}]}`,
			id:   "A", st: StatusFailed,
			want: `{"userStories": [{"id": "A", "passes": true}]}`,
		},
		{
			name: "failed to open removes the key",
			in:   "{\"userStories\": [\n  {\n    \"id\": \"A\",\n    \"passes\": false,\n    \"failed\": true,\n    \"notes\": \"\"\n  }\n]}\n",
			id:   "A", st: StatusOpen,
			want: "{\"userStories\": [\n  {\n    \"id\": \"A\",\n    \"passes\": false,\n    \"notes\": \"\"\n  }\n]}\n",
		},
		{
			name: "failed first member to done",
			in:   `{"userStories": [{"failed": true, "id": "A", "passes": false}]}`,
			id:   "A", st: StatusDone,
			want: `{"userStories": [{"id": "A", "passes": true}]}`,
		},
		{
			name: "failed last member to done",
			in:   `{"userStories": [{"id": "A", "passes": false, "failed": true}]}`,
			id:   "A", st: StatusDone,
			want: `{"userStories": [{"id": "A", "passes": true}]}`,
		},
		{
			name: "failed only member to done",
			in:   `{"userStories": [{"id": "A"}, {"failed": true}]}`,
			id:   "2", st: StatusDone,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := setStatusBytes(prdFormat{}, "p", []byte(tt.in), tt.id, tt.st)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("got %s, want an error (a story without an id)", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
		})
	}
	// In a ral task list the key can be a task's only member.
	got, err := setStatusBytes(tasksJSONFormat{}, "t", []byte(`[{"description": "a"}, {"failed": true, "title": "b"}]`), "2", StatusOpen)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`[{"description": "a"}, {"title": "b"}]`, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSetStatusErrors(t *testing.T) {
	t.Parallel()
	const valid = `{"userStories": [{"id": "A"}]}`
	tests := []struct {
		name, in, id string
		st           Status
		is           error
		want         string
	}{
		{name: "unknown id", in: valid, id: "Z", st: StatusDone, is: ErrUnknownTask, want: `p: no such task "Z"`},
		{name: "unknown status", in: valid, id: "A", st: "finished", want: `unknown task status "finished"`},
		{name: "invalid file", in: `{"userStories": [{"id": "A", "passes": "false"}]}`, id: "A", st: StatusDone,
			want: `p:1: userStories[0].passes: want true or false, got "false" (a string) — remove the quotes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := setStatusBytes(prdFormat{}, "p", []byte(tt.in), tt.id, tt.st)
			if err == nil {
				t.Fatalf("got %q, want error", out)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
}

func TestPRDValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string // every *Error, formatted
	}{
		{
			name: "syntax error: trailing comma",
			in:   "{\n  \"userStories\": [\n    {\"id\": \"A\"},\n  ]\n}\n",
			want: []string{"prd.json:4: invalid JSON: invalid character ']' looking for beginning of value"},
		},
		{
			name: "syntax error: truncated",
			in:   "{\n  \"userStories\": [\n    {\"id\": \"A\"}\n\n",
			want: []string{"prd.json:3: invalid JSON: unexpected end of JSON input"},
		},
		{
			name: "syntax error: empty file",
			in:   "",
			want: []string{"prd.json:1: invalid JSON: unexpected end of JSON input"},
		},
		{
			name: "syntax error: trailing data",
			in:   "{\"userStories\": []}\n{}\n",
			want: []string{"prd.json:2: invalid JSON: invalid character '{' after top-level value"},
		},
		{
			name: "not an object",
			in:   "\n\"userStories\"\n",
			want: []string{`prd.json:2: want a JSON object with a "userStories" array, got a string`},
		},
		{
			name: "userStories missing",
			in:   "{\n  \"stories\": []\n}\n",
			want: []string{`prd.json:1: userStories: missing: a prd.json lists its tasks as "userStories": [{"id": "US-001", "title": "...", "passes": false}, ...] — rename "stories" to "userStories"`},
		},
		{
			name: "userStories missing, no list to rename",
			in:   "{\n  \"project\": \"x\"\n}\n",
			want: []string{`prd.json:1: userStories: missing: a prd.json lists its tasks as "userStories": [{"id": "US-001", "title": "...", "passes": false}, ...]`},
		},
		{
			name: "userStories not an array",
			in:   "{\n  \"userStories\": {\"id\": \"A\"}\n}\n",
			want: []string{`prd.json:2: userStories: want an array of stories, got an object — write "userStories": [{"id": "US-001", ...}, ...]`},
		},
		{
			name: "story not an object",
			in:   "{\"userStories\": [\n  \"US-001\"\n]}",
			want: []string{`prd.json:2: userStories[0]: want a story object, got "US-001" (a string)`},
		},
		{
			name: "id missing, empty, a number",
			in:   "{\"userStories\": [\n  {\"title\": \"x\"},\n  {\"id\": \" \"},\n  {\"id\": 3}\n]}",
			want: []string{
				`prd.json:2: userStories[0].id: missing: every story needs a unique "id", such as "US-001"`,
				`prd.json:3: userStories[1].id: empty: every story needs a unique "id", such as "US-001"`,
				`prd.json:4: userStories[2].id: want a string, got 3 — put it in quotes`,
			},
		},
		{
			name: "duplicate ids",
			in:   "{\"userStories\": [\n  {\"id\": \"A\"},\n  {\"id\": \"B\"},\n  {\n    \"id\": \"A\"\n  }\n]}",
			want: []string{`prd.json:5: userStories[2].id: duplicate id "A" (first on line 2)`},
		},
		{
			name: "dependsOn names an unknown id",
			in:   "{\"userStories\": [\n  {\"id\": \"A\", \"dependsOn\": [\n    \"B\",\n    \"C\"\n  ]},\n  {\"id\": \"B\"}\n]}",
			want: []string{`prd.json:4: userStories[0].dependsOn[1]: unknown id "C"`},
		},
		{
			name: "dependency cycles",
			in: `{"userStories": [
  {"id": "A", "dependsOn": ["C"]},
  {"id": "B", "dependsOn": ["A"]},
  {"id": "C", "dependsOn": ["B"]},
  {"id": "D", "dependsOn": ["D"]},
  {"id": "E", "dependsOn": ["A"]}
]}`,
			want: []string{
				`prd.json:2: userStories[0].dependsOn: dependency cycle: A → C → B → A`,
				`prd.json:5: userStories[3].dependsOn: dependency cycle: D → D`,
			},
		},
		{
			name: "passes as a string",
			in: `{"userStories": [
  {"id": "A", "passes": false},
  {"id": "B", "passes": false},
  {"id": "C",
   "passes": "true"},
  {"id": "D", "passes": "yes"},
  {"id": "E", "passes": 1}
]}`,
			want: []string{
				`prd.json:5: userStories[2].passes: want true or false, got "true" (a string) — remove the quotes`,
				`prd.json:6: userStories[3].passes: want true or false, got "yes" (a string)`,
				`prd.json:7: userStories[4].passes: want true or false, got 1`,
			},
		},
		{
			name: "priority as a string or fraction",
			in: `{"userStories": [
  {"id": "A", "priority": "1"},
  {"id": "B", "priority": "high"},
  {"id": "C", "priority": 1.5}
]}`,
			want: []string{
				`prd.json:2: userStories[0].priority: want a number, got "1" (a string) — remove the quotes`,
				`prd.json:3: userStories[1].priority: want a number, got "high" (a string) — use a number, 1 runs first`,
				`prd.json:4: userStories[2].priority: want a whole number, got 1.5`,
			},
		},
		{
			name: "wrong types of known fields",
			in: `{"project": 7, "userStories": [
  {"id": "A", "title": ["t"], "acceptanceCriteria": "do it", "dependsOn": [1]}
]}`,
			want: []string{
				`prd.json:1: project: want a string, got 7`,
				`prd.json:2: userStories[0].title: want a string, got an array`,
				`prd.json:2: userStories[0].acceptanceCriteria: want an array of strings, got "do it" (a string)`,
				`prd.json:2: userStories[0].dependsOn[0]: want a string, got 1`,
			},
		},
		{
			name: "duplicate keys ralph reads",
			in:   "{\"userStories\": [\n  {\"id\": \"A\", \"passes\": false,\n   \"passes\": true}\n]}",
			want: []string{`prd.json:3: userStories[0].passes: duplicate key (first on line 2)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parsePlan(prdFormat{}, "prd.json", []byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tt.want, errorLines(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// errorLines returns the *Error values in err, formatted, and checks that
// there is nothing else.
func errorLines(t *testing.T, err error) []string {
	t.Helper()
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []string
	for _, e := range errs {
		var te *Error
		if !errors.As(e, &te) {
			t.Errorf("%v is not a *task.Error", e)
		}
		out = append(out, e.Error())
	}
	if got := strings.Join(out, "\n"); got != err.Error() {
		t.Errorf("joined error %q, want %q", err.Error(), got)
	}
	return out
}

func TestErrorFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "prd.json", Line: 24, Field: "userStories[2].passes", Msg: "m"}, "prd.json:24: userStories[2].passes: m"},
		{Error{File: "prd.json", Line: 3, Msg: "m"}, "prd.json:3: m"},
		{Error{File: "prd.json", Msg: "m"}, "prd.json: m"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.err.Error()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}

// ignoreLine compares tasks without their lines, which an inserted member
// shifts.
var ignoreLine = cmpopts.IgnoreFields(Task{}, "Line", "AgentLine", "ModelLine")
