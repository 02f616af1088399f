package session

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/task"
)

// TestPlanRoutesInForce: the agents and models a plan's tasks name are
// recorded at the first run; an edit of the file (the agent's) is not in
// force at the next run, which warns, until ralph trust PLAN records it.
func TestPlanRoutesInForce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := t.TempDir()
	var out bytes.Buffer
	f := &Host{IO: &IO{In: strings.NewReader(""), Out: &out, ErrOut: &out},
		Environ: func() []string { return []string{"HOME=" + home} }}
	plan := filepath.Join(dir, "PLAN.md")
	write := func(model string) *task.Plan {
		t.Helper()
		if err := os.WriteFile(plan, []byte("# Plan\n\n- [ ] Add the flag\n  Model: "+model+"\n- [ ] Document it\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		pf, err := task.Load(plan)
		if err != nil {
			t.Fatal(err)
		}
		return pf.Plan()
	}
	p := write("sonnet")
	id := p.Tasks[0].ID
	in, note, err := f.planRoutes(p)
	if err != nil || in[id].Model != "sonnet" || note != "" {
		t.Fatalf("first run: %v, %q, %v; want sonnet in force, no warning", in, note, err)
	}
	p = write("opus")
	in, note, err = f.planRoutes(p)
	if err != nil || in[id].Model != "sonnet" || !strings.Contains(note, "ralph trust") {
		t.Errorf("after an edit: %v, %q, %v; want sonnet still in force and a warning naming ralph trust", in, note, err)
	}
	if ok, err := f.TrustPlan(plan); !ok || err != nil {
		t.Fatalf("ralph trust PLAN: %v, %v", ok, err)
	}
	if in, note, _ = f.planRoutes(p); in[id].Model != "opus" || note != "" {
		t.Errorf("after ralph trust: %v, %q; want opus in force", in, note)
	}
}
