package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCompleteValues: the shell completes agents, plan formats, sandbox
// modes, review settings, the plan's task ids and plan files.
func TestCompleteValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := `{"userStories": [
  {"id": "US-001", "title": "Say hello", "passes": true},
  {"id": "US-002", "title": "Say goodbye", "passes": false}
]}`
	if err := os.WriteFile(filepath.Join(dir, "prd.json"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	ids := []string{"US-001\tdone: Say hello", "US-002\topen: Say goodbye", ":4"}
	planFiles := []string{"json", "md", ":8"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--agent", ""}, []string{"claude", "codex", "gemini", "opencode", "droid", "copilot", "qwen", "amp", "cursor", "kiro", "command", ":4"}},
		{[]string{"init", "--format", ""}, []string{"prd", "tasks", "progress", "checklist", "headings", "mdjson", ":4"}},
		{[]string{"convert", "prd.json", "out.md", "--format", ""}, []string{"prd", "tasks", "progress", "checklist", "headings", "mdjson", ":4"}},
		{[]string{"run", "--sandbox", ""}, []string{"auto", "bwrap", "sandbox-exec", "none", ":4"}},
		{[]string{"run", "--guard", ""}, []string{"warn", "strict", "off", ":4"}},
		{[]string{"run", "--review", ""}, []string{"auto", "off", "task", "end", "both", ":4"}},
		{[]string{"run", "--ownership", ""}, []string{"runner", "agent", ":4"}},
		{[]string{"run", "--quota-action", ""}, []string{"wait", "stop", ":4"}},
		{[]string{"run", "--completion", ""}, []string{"promise-tag", "relaxed-tag", "heuristic", ":6"}},
		{[]string{"run", "--completion", "heuristic,"}, []string{"heuristic,promise-tag", "heuristic,relaxed-tag", ":6"}},
		{[]string{"review", "--agent", ""}, []string{"claude", "codex", "gemini", "opencode", "droid", "copilot", "qwen", "amp", "cursor", "kiro", "command", ":4"}},
		{[]string{"tasks", "done", ""}, ids},
		{[]string{"tasks", "reset", "--plan", "prd.json", ""}, ids},
		{[]string{"run", "--task", ""}, ids},
		{[]string{"tasks", "done", "US-002", ""}, planFiles},
		{[]string{"run", ""}, planFiles},
		{[]string{"convert", ""}, planFiles},
	} {
		f, out, _ := testFactory(t, dir)
		root := newRootCmd(f)
		root.SetArgs(append([]string{"__complete", "-C", dir}, tc.args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		got := strings.Split(strings.TrimSpace(out.String()), "\n")
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ralph %s<TAB> (-want +got):\n%s", strings.Join(tc.args, " "), diff)
		}
	}
}
