package loop

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/task"
)

// Options.Only (--task) works one task to its end, whatever else is open.
func TestOnlyRunsOneTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B", "C"}, done())
	f.opts.Only = "B"
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if a, _ := f.plan.Plan().Task("A"); a.Status != task.StatusOpen {
		t.Errorf("A is %s, want open", a.Status)
	}
	if msg := f.store.st.Message; msg != "task B done" {
		t.Errorf("state message %q", msg)
	}
}

func TestOnlyFailedOrWaitingIsStuck(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, agent.Result{FinalText: "<promise>TASK_FAILED</promise> no"})
	f.opts.Only, f.opts.MaxAttempts = "B", 1
	if err := f.run(t); !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "task B failed") {
		t.Fatalf("a failed task: %v, want ErrStuck naming it", err)
	}

	w := newFixture(t, []string{"A", "B"}, done())
	w.plan.p.Tasks[1].DependsOn = []string{"A"}
	w.opts.Only = "B"
	if err := w.run(t); !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "task B waits on A") {
		t.Fatalf("a task waiting on another: %v, want ErrStuck naming what it waits on", err)
	}
	if len(w.outcomes()) != 0 {
		t.Errorf("an agent ran: %v", w.outcomes())
	}
}
