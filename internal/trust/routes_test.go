package trust

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRoutesInForce: the file's agents and models are recorded at the
// first read; a later edit of the file is not in force until SetPlanRoutes
// (ralph trust PLAN) records it; recording the Validation Commands keeps
// them.
func TestRoutesInForce(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	plan := filepath.Join(t.TempDir(), "PLAN.md")
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	first := map[string]Route{"1": {Model: "sonnet"}}
	got, rec, err := s.RoutesInForce(plan, first, now)
	if err != nil || rec == nil || rec.By != ByFirstRead {
		t.Fatalf("first read: %v, %+v, %v", got, rec, err)
	}
	edited := map[string]Route{"1": {Model: "opus"}, "2": {Agent: "codex"}}
	if got, _, err = s.RoutesInForce(plan, edited, now); err != nil || !cmp.Equal(got, first) {
		t.Errorf("after an edit: %v, %v; want the first read's %v", got, err, first)
	}
	if _, err := s.SetPlanGates(plan, []string{"make test"}, ByTrust, now); err != nil {
		t.Fatal(err)
	}
	if got, _, _ = s.RoutesInForce(plan, edited, now); !cmp.Equal(got, first) {
		t.Errorf("recording the gates changed the routes in force: %v", got)
	}
	if _, err := s.SetPlanRoutes(plan, edited, ByTrust, now); err != nil {
		t.Fatal(err)
	}
	if got, _, _ = s.RoutesInForce(plan, nil, now); !cmp.Equal(got, edited) {
		t.Errorf("after ralph trust: %v, want %v", got, edited)
	}
	if g, _, _ := s.PlanGates(plan); !cmp.Equal(g.Commands, []string{"make test"}) {
		t.Errorf("recording the routes changed the gates in force: %v", g.Commands)
	}
}
