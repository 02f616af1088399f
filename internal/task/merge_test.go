package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// edits summarises Edits as ids, for comparing.
type edits struct {
	Added, Edited, Restored []string
	Reverted                []string // "ID:edited status"
	Reordered, Other        bool
	Moved                   map[string]string
	Discarded               bool
}

func summary(e Edits) edits {
	var s edits
	for _, t := range e.Added {
		s.Added = append(s.Added, t.ID)
	}
	for _, t := range e.Edited {
		s.Edited = append(s.Edited, t.ID)
	}
	for _, t := range e.Restored {
		s.Restored = append(s.Restored, t.ID)
	}
	for _, r := range e.Reverted {
		s.Reverted = append(s.Reverted, r.Task.ID+":"+string(r.Edited))
	}
	s.Reordered, s.Other, s.Moved, s.Discarded = e.Reordered, e.Other, e.Moved, e.Discarded != nil
	return s
}

// TestMergeEdits: in every writable format an edit made while the runner
// owns the plan keeps what it added, edited and moved, loses its status
// changes, and gets its deleted tasks back, written by the format's own
// writers (the rest of the file byte for byte).
func TestMergeEdits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, base, edited, want string
		edits                          edits
	}{{
		name: "prd.json: mark reverted, rename kept, deletion restored with its unknown keys, addition kept",
		file: "prd.json",
		base: `{"userStories": [
  {"id": "US-001", "title": "First", "passes": false},
  {"id": "US-002", "title": "Second", "passes": false, "x": 1},
  {"id": "US-003", "title": "Third", "passes": false, "custom": {"a": 1}}
]}
`,
		edited: `{"userStories": [
  {"id": "US-001", "title": "First", "passes": true},
  {"id": "US-002", "title": "Second, renamed", "passes": false, "x": 1},
  {"id": "US-004", "title": "Added", "passes": false}
]}
`,
		want: `{"userStories": [
  {"id": "US-001", "title": "First", "passes": false},
  {"id": "US-002", "title": "Second, renamed", "passes": false, "x": 1},
  {"id": "US-004", "title": "Added", "passes": false},
  {"id": "US-003", "title": "Third", "passes": false, "custom": {"a": 1}}
]}
`,
		edits: edits{Added: []string{"US-004"}, Edited: []string{"US-002"}, Restored: []string{"US-003"}, Reverted: []string{"US-001:done"}},
	}, {
		name: "prd.json: notes and reordering kept",
		file: "prd.json",
		base: `{"project": "p", "userStories": [
  {"id": "US-001", "title": "First", "passes": true},
  {"id": "US-002", "title": "Second", "passes": false}
]}
`,
		edited: `{"project": "p", "userStories": [
  {"id": "US-002", "title": "Second", "passes": false, "notes": "use the v2 API"},
  {"id": "US-001", "title": "First", "passes": true}
]}
`,
		want: `{"project": "p", "userStories": [
  {"id": "US-002", "title": "Second", "passes": false, "notes": "use the v2 API"},
  {"id": "US-001", "title": "First", "passes": true}
]}
`,
		edits: edits{Edited: []string{"US-002"}, Reordered: true},
	}, {
		name: "prd.json: a done task unticked is done again",
		file: "prd.json",
		base: `{"userStories": [{"id": "A", "title": "A", "passes": true}, {"id": "B", "title": "B", "passes": false}]}
`,
		edited: `{"userStories": [{"id": "A", "title": "A", "passes": false}, {"id": "B", "title": "B", "passes": false}]}
`,
		want: `{"userStories": [{"id": "A", "title": "A", "passes": true}, {"id": "B", "title": "B", "passes": false}]}
`,
		edits: edits{Reverted: []string{"A:open"}},
	}, {
		name: "tasks.json: a task inserted first moves the others; their marks follow their titles",
		file: "tasks.json",
		base: `[
  {"category": "a", "description": "One", "steps": [], "passes": false},
  {"category": "a", "description": "Two", "steps": ["s"], "passes": false},
  {"category": "a", "description": "Three", "steps": [], "passes": false}
]
`,
		edited: `[
  {"category": "a", "description": "Zero", "steps": [], "passes": false},
  {"category": "a", "description": "One", "steps": [], "passes": true},
  {"category": "a", "description": "Three", "steps": [], "passes": false}
]
`,
		want: `[
  {"category": "a", "description": "Zero", "steps": [], "passes": false},
  {"category": "a", "description": "One", "steps": [], "passes": false},
  {"category": "a", "description": "Three", "steps": [], "passes": false},
  {"category": "a", "description": "Two", "steps": ["s"], "passes": false}
]
`,
		edits: edits{Added: []string{"1"}, Restored: []string{"4"}, Reverted: []string{"2:done"}, Moved: map[string]string{"1": "2", "2": "4"}},
	}, {
		name:   "checklist: a note added, a box ticked, an item deleted, one added",
		file:   "IMPLEMENTATION_PLAN.md",
		base:   "# Plan\n\n- [ ] One\n- [ ] Two\n  - crit\n- [ ] Three\n",
		edited: "# Plan\n\nA note.\n\n- [x] One\n- [ ] Three\n- [ ] Four\n",
		want:   "# Plan\n\nA note.\n\n- [ ] One\n- [ ] Three\n- [ ] Four\n- [ ] Two\n  - crit\n",
		edits:  edits{Added: []string{"3"}, Restored: []string{"4"}, Reverted: []string{"1:done"}, Other: true, Moved: map[string]string{"2": "4", "3": "2"}},
	}, {
		name:   "checklist: text only",
		file:   "fix_plan.md",
		base:   "# Fix\n\n- [ ] One\n",
		edited: "# Fix plan\n\n- [ ] One\n",
		want:   "# Fix plan\n\n- [ ] One\n",
		edits:  edits{Other: true},
	}, {
		name:   "progress.md: reordered and ticked, RALPH_DONE follows the boxes",
		file:   "progress.md",
		base:   "# Progress: p\n\n## Status\n\nIN_PROGRESS\n\n## Tasks\n\n### Phase 1\n\n- [ ] One\n- [ ] Two\n\n## Iteration Log\n",
		edited: "# Progress: p\n\n## Status\n\nRALPH_DONE\n\n## Tasks\n\n### Phase 1\n\n- [x] Two\n- [x] One\n- [ ] New\n\n## Iteration Log\n",
		want:   "# Progress: p\n\n## Status\n\nIN_PROGRESS\n\n## Tasks\n\n### Phase 1\n\n- [ ] Two\n- [ ] One\n- [ ] New\n\n## Iteration Log\n",
		edits:  edits{Added: []string{"3"}, Reverted: []string{"1:done", "2:done"}, Reordered: true, Moved: map[string]string{"1": "2", "2": "1"}},
	}, {
		name:   "heading plan: boxes unticked, a section deleted and restored, one added",
		file:   "PLAN.md",
		base:   "# P\n\n### Task 1: One\n\n- [ ] a\n\n### Task 2: Two\n\n- [ ] b\n",
		edited: "# P\n\n### Task 1: One\n\n- [x] a\n\n### Task 3: Three\n\n- [ ] c\n",
		want:   "# P\n\n### Task 1: One\n\n- [ ] a\n\n### Task 3: Three\n\n- [ ] c\n\n### Task 2: Two\n\n- [ ] b\n",
		edits:  edits{Added: []string{"3"}, Restored: []string{"2"}, Reverted: []string{"1:done"}},
	}, {
		name:   "markdown + JSON: the prose kept, a mark reverted",
		file:   "plan.md",
		base:   "# Plan\n\nProse.\n\n```json\n[\n  {\"description\": \"One\", \"passes\": false}\n]\n```\n",
		edited: "# Plan\n\nMore prose.\n\n```json\n[\n  {\"description\": \"One\", \"passes\": true}\n]\n```\n",
		want:   "# Plan\n\nMore prose.\n\n```json\n[\n  {\"description\": \"One\", \"passes\": false}\n]\n```\n",
		edits:  edits{Reverted: []string{"1:done"}, Other: true},
	}, {
		name: "a deleted task comes back after the deleted task it depends on",
		file: "prd.json",
		base: `{"userStories": [
  {"id": "A", "title": "A", "passes": false, "dependsOn": ["B"]},
  {"id": "B", "title": "B", "passes": false},
  {"id": "C", "title": "C", "passes": false}
]}
`,
		edited: `{"userStories": [
  {"id": "C", "title": "C", "passes": false}
]}
`,
		want: `{"userStories": [
  {"id": "C", "title": "C", "passes": false},
  {"id": "B", "title": "B", "passes": false},
  {"id": "A", "title": "A", "passes": false, "dependsOn": ["B"]}
]}
`,
		edits: edits{Restored: []string{"B", "A"}},
	}, {
		name:   "an invalid plan is put back whole",
		file:   "prd.json",
		base:   `{"userStories": [{"id": "A", "title": "A", "passes": false}]}` + "\n",
		edited: `{"userStories": [{"id": "A", "title": "A", "passes": fals`,
		want:   `{"userStories": [{"id": "A", "title": "A", "passes": false}]}` + "\n",
		edits:  edits{Discarded: true},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), tc.file)
			writeTestFile(t, path, tc.base)
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			writeTestFile(t, path, tc.edited)
			e, err := f.MergeEdits()
			if err != nil {
				t.Fatalf("MergeEdits: %v", err)
			}
			if diff := cmp.Diff(tc.edits, summary(e)); diff != "" {
				t.Errorf("edits (-want +got):\n%s", diff)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, string(f.Bytes())); diff != "" {
				t.Errorf("baseline (-want +got):\n%s", diff)
			}
			if again, err := f.MergeEdits(); err != nil || again.Changed() {
				t.Errorf("second MergeEdits = %+v, %v; want nothing", again, err)
			}
		})
	}
}

// TestMergeEditsRemoved: a removed plan is written back.
func TestMergeEditsRemoved(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "prd.json")
	const base = `{"userStories": [{"id": "A", "title": "A", "passes": false}]}` + "\n"
	writeTestFile(t, path, base)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	e, err := f.MergeEdits()
	if err != nil || e.Discarded == nil || !strings.Contains(e.Discarded.Error(), "removed") {
		t.Fatalf("MergeEdits = %+v, %v; want Discarded: removed", e, err)
	}
	if got, _ := os.ReadFile(path); string(got) != base {
		t.Errorf("file = %q, want %q", got, base)
	}
}

// TestMergeEditsUnchanged: nothing to merge, nothing written.
func TestMergeEditsUnchanged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "prd.json")
	writeTestFile(t, path, `{"userStories": [{"id": "A", "title": "A", "passes": false}]}`)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := f.MergeEdits(); err != nil || e.Changed() {
		t.Errorf("MergeEdits = %+v, %v; want nothing", e, err)
	}
}

// TestMergeEditsThenSetStatus: the merged file is the baseline the next
// status change edits.
func TestMergeEditsThenSetStatus(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "IMPLEMENTATION_PLAN.md")
	writeTestFile(t, path, "- [ ] One\n- [ ] Two\n")
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, path, "- [ ] Zero\n- [ ] One\n- [x] Two\n")
	e, err := f.MergeEdits()
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Moved["1"]; got != "2" {
		t.Fatalf("Moved[1] = %q, want 2", got)
	}
	if err := f.SetStatus(e.Moved["1"], StatusDone); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "- [ ] Zero\n- [x] One\n- [ ] Two\n" {
		t.Errorf("file = %q", got)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	// A new file renamed into place, as editors save.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
