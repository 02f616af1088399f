package trust

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGatesInForce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := Store{Dir: filepath.Join(dir, "trust")}
	plan := filepath.Join(dir, "PLAN.md")
	now := time.Now()

	// First read: the file's, recorded.
	got, rec, err := s.GatesInForce(plan, []string{"go test ./..."}, now)
	if err != nil || rec == nil || rec.By != ByFirstRead {
		t.Fatalf("first read: %v %+v %v", got, rec, err)
	}
	if d := cmp.Diff([]string{"go test ./..."}, got); d != "" {
		t.Fatalf("first read (-want +got):\n%s", d)
	}
	// The file changed: the recorded ones stay in force.
	got, _, err = s.GatesInForce(plan, []string{"true"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"go test ./..."}, got); d != "" {
		t.Fatalf("after an edit (-want +got):\n%s", d)
	}
	// ralph trust puts the file's in force.
	if _, err := s.SetPlanGates(plan, []string{"true"}, ByTrust, now); err != nil {
		t.Fatal(err)
	}
	if got, _, _ = s.GatesInForce(plan, []string{"true"}, now); !cmp.Equal([]string{"true"}, got) {
		t.Fatalf("after trust: %v", got)
	}
	// ralph plan: none in force, whatever the file says.
	other := filepath.Join(dir, "prd.json")
	if _, err := s.SetPlanGates(other, nil, ByPlan, now); err != nil {
		t.Fatal(err)
	}
	if got, rec, _ = s.GatesInForce(other, []string{"make test"}, now); len(got) != 0 || rec.By != ByPlan {
		t.Fatalf("a plan ralph plan wrote: %v %+v", got, rec)
	}
	// The approvals of the same path are another record.
	if _, found, _ := s.Lookup(plan); found {
		t.Fatal("recording a plan's gates approved the file")
	}
	// No store: the file's, unrecorded.
	if got, rec, _ = (Store{}).GatesInForce(plan, []string{"x"}, now); rec != nil || !cmp.Equal([]string{"x"}, got) {
		t.Fatalf("no store: %v %+v", got, rec)
	}
}
