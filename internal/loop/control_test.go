package loop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
)

// runSteered runs the fixture with a Steering; each agent invocation first
// calls during(n, s), as a user pressing keys while the agent works.
func (f *fixture) runSteered(ctx context.Context, s *Steering, during func(n int, s *Steering)) ([]EventKind, error) {
	return f.runSteeredWatching(ctx, s, during, func(Event) {})
}

// runSteeredWatching is runSteered with every event also given to watch,
// for a test that acts when the loop reaches a point (not after a time).
func (f *fixture) runSteeredWatching(ctx context.Context, s *Steering, during func(n int, s *Steering), watch func(Event)) ([]EventKind, error) {
	var kinds []EventKind
	f.agent.before = func(n int) { during(n, s) }
	deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Now: f.clock.Now, Sleep: f.clock.Sleep,
		Jitter:  func(time.Duration) time.Duration { return 0 },
		Control: s,
		Emit: func(e Event) {
			watch(e)
			switch e.Kind {
			case EventPaused, EventResumed, EventTaskSkipped:
				kinds = append(kinds, e.Kind)
			default:
				// The other values need nothing here.
			}
		}}
	return kinds, Run(ctx, f.opts, deps)
}

func TestSkipSetsTheTaskAsideAfterItsIteration(t *testing.T) {
	t.Parallel()
	noMarker := agent.Result{FinalText: "still working"}
	f := newFixture(t, []string{"A", "B"}, noMarker, done())
	kinds, err := f.runSteered(t.Context(), NewSteering(), func(n int, s *Steering) {
		if n == 1 {
			s.Skip("A")
		}
	})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v, want ErrLimit (a skipped task is left open)", err)
	}
	if diff := cmp.Diff([]string{"A:no_marker", "B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]EventKind{EventTaskSkipped}, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestSkipOfADoneTaskIsIgnored(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	kinds, err := f.runSteered(t.Context(), NewSteering(), func(n int, s *Steering) {
		if n == 1 {
			s.Skip("A")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 0 {
		t.Errorf("events = %v, want none", kinds)
	}
}

func TestPauseHoldsTheLoopUntilResumed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	s := NewSteering()
	resumed := make(chan struct{})
	paused := make(chan struct{}) // closed when the loop reports it holds
	watch := func(e Event) {
		if e.Kind == EventPaused {
			close(paused)
		}
	}
	kinds, err := f.runSteeredWatching(t.Context(), s, func(n int, s *Steering) {
		switch n {
		case 1:
			if !s.TogglePause() {
				t.Error("TogglePause() = false, want paused")
			}
			// The user resumes once the loop says it waits.
			go func() {
				<-paused
				close(resumed)
				s.TogglePause()
			}()
		case 2:
			select {
			case <-resumed:
			default:
				t.Error("the second iteration started while paused")
			}
		}
	}, watch)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]EventKind{EventPaused, EventResumed}, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"A:task_done", "B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

func TestInterruptWhilePausedEndsTheRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, done())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watch := func(e Event) {
		if e.Kind == EventPaused {
			cancel() // Ctrl-C while the loop holds
		}
	}
	_, err := f.runSteeredWatching(ctx, NewSteering(), func(n int, s *Steering) {
		s.TogglePause()
	}, watch)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if f.agent.calls != 1 {
		t.Errorf("agent ran %d times, want 1", f.agent.calls)
	}
}
