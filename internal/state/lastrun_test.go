package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSavePlanKeepsOnlyTheCurrentPlan(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	project := filepath.Dir(s.Dir())
	old := filepath.Join(project, "prd.json")
	cur := filepath.Join(project, "sub", "IMPLEMENTATION_PLAN.md")
	writeFileT(t, old, "{}")
	writeFileT(t, cur, "- [ ] a\n")
	if err := s.SavePlan(old); err != nil {
		t.Fatal(err)
	}
	if err := s.SavePlan(cur); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range s.lastPlans() {
		names = append(names, filepath.Base(p))
	}
	if diff := cmp.Diff([]string{"IMPLEMENTATION_PLAN.md"}, names); diff != "" {
		t.Errorf("last plans (-want +got):\n%s", diff)
	}
	if got := readFileT(t, filepath.Join(s.Dir(), LastPlanDir, "IMPLEMENTATION_PLAN.md")); got != "- [ ] a\n" {
		t.Errorf("saved plan %q", got)
	}
	if err := s.SavePlan(filepath.Join(project, "missing.json")); err == nil {
		t.Error("SavePlan of a missing plan succeeded")
	}
}

func TestLastBranch(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	if got, err := s.LastBranch(); got != "" || err != nil {
		t.Errorf("fresh project: LastBranch = %q, %v", got, err)
	}
	if err := s.SaveLastBranch("ralph/x"); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(s.Dir(), LastBranchFile)); got != "ralph/x\n" {
		t.Errorf("last-branch holds %q", got)
	}
	if got, err := s.LastBranch(); got != "ralph/x" || err != nil {
		t.Errorf("LastBranch = %q, %v", got, err)
	}
}

// snapshots is a Snapshotter that returns what it is set to.
type snapshots struct {
	snap string
	err  error
}

func (f *snapshots) Snapshot(context.Context) (string, error) { return f.snap, f.err }

func TestSaveTree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTemp(t)
	tree := &snapshots{snap: "abc"}
	if s.asLastRunLeftIt(ctx, tree) {
		t.Error("a fresh project claims a last tree")
	}
	if err := s.SaveTree(ctx, tree); err != nil {
		t.Fatal(err)
	}
	if got := readFileT(t, filepath.Join(s.Dir(), LastTreeFile)); got != "abc\n" {
		t.Errorf("last-tree holds %q", got)
	}
	if !s.asLastRunLeftIt(ctx, tree) {
		t.Error("the same snapshot is not as the last run left it")
	}
	tree.snap = "def"
	if s.asLastRunLeftIt(ctx, tree) {
		t.Error("another snapshot is as the last run left it")
	}
	// No snapshot: the old record goes, it would vouch for the changes.
	tree.err = errors.New("git broke")
	if err := s.SaveTree(ctx, tree); err == nil {
		t.Error("SaveTree without a snapshot succeeded")
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), LastTreeFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("last-tree kept without a snapshot: %v", err)
	}
}
