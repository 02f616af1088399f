package loop

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/task"
)

// artefactRepo is a memRepo that leaves untracked files out of commits:
// untracked are its untracked entries, and each commit leaves out what
// leaves says for it.
type artefactRepo struct {
	memRepo
	untracked []string
	leaves    []map[string]int
	// asked are the patterns and paths each commit was given.
	asked [][]string
}

func (r *artefactRepo) Untracked(context.Context) ([]string, error) {
	return slices.Clone(r.untracked), nil
}

func (r *artefactRepo) CommitLeaving(ctx context.Context, msg string, patterns, paths []string) (string, map[string]int, error) {
	r.asked = append(r.asked, slices.Concat(patterns, paths))
	hash, err := r.Commit(ctx, msg)
	return hash, r.leaves[len(r.asked)-1], err
}

// makingGate is a gate that passes and leaves a file behind.
type makingGate struct {
	repo *artefactRepo
	file string
}

func (g *makingGate) Check(context.Context, task.Task) (bool, string, error) {
	if !slices.Contains(g.repo.untracked, g.file) {
		g.repo.untracked = append(g.repo.untracked, g.file)
	}
	return true, "ok", nil
}

func TestCommitsLeaveArtefactsOutAndSaySoOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B", "C"}, done())
	f.opts.Artefacts = []string{"__pycache__/", "*.pyc"}
	repo := &artefactRepo{untracked: []string{"notes.txt"}, leaves: []map[string]int{
		{"__pycache__/": 3, "coverage.xml": 1},
		{"__pycache__/": 4, "coverage.xml": 1},
		{"__pycache__/": 4, "*.pyc": 1, "coverage.xml": 1},
	}}
	f.agent.before = func(int) { repo.tree++ }
	var told [][]LeftOut
	var messages []string
	deps := f.deps(func(e Event) {
		if e.Kind == EventLeftOut {
			told = append(told, e.LeftOut)
			messages = append(messages, e.Message)
		}
	})
	deps.Repo = repo
	deps.Gate = &makingGate{repo: repo, file: "coverage.xml"}
	if err := Run(t.Context(), f.opts, deps); err != nil {
		t.Fatal(err)
	}
	// The gate's file joins the patterns; what was untracked before it
	// ran (the agent's notes) does not.
	want := [][]string{
		{"__pycache__/", "*.pyc", "coverage.xml"},
		{"__pycache__/", "*.pyc", "coverage.xml"},
		{"__pycache__/", "*.pyc", "coverage.xml"},
	}
	if diff := cmp.Diff(want, repo.asked); diff != "" {
		t.Errorf("what the commits left out (-want +got):\n%s", diff)
	}
	// Each line is said once: the second commit says nothing, the third
	// only what is new.
	wantTold := [][]LeftOut{
		{{Line: "__pycache__/", Files: 3}, {Line: "coverage.xml", Files: 1}},
		{{Line: "*.pyc", Files: 1}},
	}
	if diff := cmp.Diff(wantTold, told); diff != "" {
		t.Errorf("left_out events (-want +got):\n%s", diff)
	}
	if len(messages) > 0 && messages[0] != "left out of commits: __pycache__/ (3 files), coverage.xml (1 file) — add to .gitignore:" {
		t.Errorf("message = %q", messages[0])
	}
}

func TestCommitsWithoutArtefactsCommitAsBefore(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	repo := &artefactRepo{}
	f.agent.before = func(int) { repo.tree++ }
	deps := f.deps(nil)
	deps.Repo = repo
	if err := Run(t.Context(), f.opts, deps); err != nil {
		t.Fatal(err)
	}
	if len(repo.asked) != 0 || len(repo.commits) != 1 {
		t.Errorf("CommitLeaving asked %v, commits %v; want a plain commit", repo.asked, repo.commits)
	}
}

func TestIgnoreLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ path, want string }{
		{"coverage.xml", "coverage.xml"},
		{"htmlcov/", "htmlcov/"},
		{"out/[1].txt", `out/\[1].txt`},
		{"#notes", `\#notes`},
		{"!important", `\!important`},
		{"a*b?.log", `a\*b\?.log`},
		{"trailing space ", `trailing space\ `}, // git drops an unescaped one
	} {
		if got := ignoreLine(tt.path); got != tt.want {
			t.Errorf("ignoreLine(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}
