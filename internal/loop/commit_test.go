package loop

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/task"
)

// listRepo reports, after the baseline, the next list of changed files
// for each look; it is never dirty.
type listRepo struct {
	looks   [][]string
	n       int
	commits int
}

func (r *listRepo) Changes(context.Context) ([]string, error) {
	r.n++
	if r.n == 1 || r.n-2 >= len(r.looks) {
		return nil, nil
	}
	return r.looks[r.n-2], nil
}
func (r *listRepo) Dirty(context.Context) (bool, error) { return false, nil }
func (r *listRepo) Commit(context.Context, string) (string, error) {
	r.commits++
	return "c", nil
}

// TestFilesChangedAreTheAgents: files_changed counts the agent's files,
// and the plan only when the agent edited it: the runner's own marks and
// logs in it are not the agent's work, its putting back an edit is.
func TestFilesChangedAreTheAgents(t *testing.T) {
	t.Parallel()
	const plan = "/p/prd.json"
	tests := []struct {
		name      string
		ownership task.Ownership
		result    agent.Result
		agentDoes func(f *fixture)
		look      []string
		want      int
	}{
		{name: "runner marks the plan", ownership: task.OwnerRunner, result: done(),
			look: []string{"/p/a.go", plan}, want: 1},
		{name: "agent edits the plan, runner puts it back", ownership: task.OwnerRunner,
			result: agent.Result{FinalText: "not yet"}, agentDoes: func(f *fixture) { f.plan.modified = true }, want: 1},
		{name: "nothing", ownership: task.OwnerRunner, result: agent.Result{FinalText: "not yet"}, want: 0},
		{name: "agent ticks the plan", ownership: task.OwnerAgent, result: agent.Result{FinalText: "done"},
			agentDoes: func(f *fixture) { f.plan.modified = true; f.plan.p.Tasks[0].Status = task.StatusDone },
			look:      []string{"/p/b.go", plan}, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []string{"A", "B"}, tc.result)
			f.opts.Ownership, f.opts.MaxIterations = tc.ownership, 1
			repo := &listRepo{looks: [][]string{tc.look}}
			f.agent.before = func(int) {
				if tc.agentDoes != nil {
					tc.agentDoes(f)
				}
			}
			_ = Run(t.Context(), f.opts, Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Repo: repo,
				Now: f.clock.Now, Sleep: f.clock.Sleep})
			var got []int
			for _, r := range f.store.history {
				got = append(got, r.FilesChanged)
			}
			if diff := cmp.Diff([]int{tc.want}, got); diff != "" {
				t.Errorf("files_changed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOpenEmpty: a transcript file is written from its start, whatever a
// file of that name held, and one made empty ahead of time is used as is.
func TestOpenEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, []byte("a longer content left over"), 0o644); err != nil {
		t.Fatal(err)
	}
	ahead := filepath.Join(dir, "ahead")
	if err := os.WriteFile(ahead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(ahead)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{old, ahead, filepath.Join(dir, "new")} {
		if err := writeEmpty(p, []byte("prompt")); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "prompt" {
			t.Errorf("%s: %q, %v; want %q", filepath.Base(p), b, err, "prompt")
		}
	}
	if after, err := os.Stat(ahead); err != nil || !os.SameFile(before, after) {
		t.Errorf("the file made ahead was replaced (%v)", err)
	}
}
