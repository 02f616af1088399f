package loop

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
)

// syncingStore is a memStore with the barrier of background fsyncs
// (state.Store's Sync); log records the writes, the barriers and the
// sleeps in order.
type syncingStore struct {
	memStore
	log     *[]string
	syncErr error
}

func (s *syncingStore) SaveState(st state.State) error {
	*s.log = append(*s.log, "save "+st.Status)
	return s.memStore.SaveState(st)
}

func (s *syncingStore) AppendHistory(r state.Record) error {
	*s.log = append(*s.log, "history")
	return s.memStore.AppendHistory(r)
}

func (s *syncingStore) Sync() error {
	*s.log = append(*s.log, "sync")
	return s.syncErr
}

// TestBarrierBeforeWaitsAndAtTheEnd pins where the loop waits for the
// store's fsyncs: before it sleeps out a usage limit, and after the last
// save of the run; not on an iteration's path.
func TestBarrierBeforeWaitsAndAtTheEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"})
	reset := time.Date(2026, 11, 21, 19, 0, 0, 0, time.UTC)
	f.agent.results = []agent.Result{
		{IsError: true, ErrorKind: agent.ErrorUsageLimit, ErrorText: "You've hit your limit · resets 7pm", ResetAt: reset},
		done(),
	}
	f.opts.MaxWait = 8 * time.Hour
	var log []string
	store := &syncingStore{memStore: memStore{dir: t.TempDir()}, log: &log}
	deps := f.deps(nil)
	deps.Store = store
	deps.Sleep = func(ctx context.Context, d time.Duration) error {
		log = append(log, "sleep")
		return f.clock.Sleep(ctx, d)
	}
	if err := Run(t.Context(), f.opts, deps); err != nil {
		t.Fatal(err)
	}
	i := slices.Index(log, "sleep")
	if i < 2 || log[i-1] != "sync" || log[i-2] != "save waiting" {
		t.Errorf("before the wait: %q, want the waiting state saved, then the barrier", log)
	}
	if diff := cmp.Diff([]string{"save done", "sync"}, log[len(log)-2:]); diff != "" {
		t.Errorf("the run's end (-want +got):\n%s\nlog: %q", diff, log)
	}
	if n := strings.Count(strings.Join(log, ","), "sync"); n != 2 {
		t.Errorf("%d barriers, want 2 (the wait, the end): %q", n, log)
	}
}

// TestBarrierErrorFailsTheRun: an fsync that failed in the background is
// the run's error when nothing else is.
func TestBarrierErrorFailsTheRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	var log []string
	store := &syncingStore{memStore: memStore{dir: t.TempDir()}, log: &log, syncErr: syscall.EIO}
	deps := f.deps(nil)
	deps.Store = store
	if err := Run(t.Context(), f.opts, deps); !errors.Is(err, syscall.EIO) {
		t.Fatalf("err = %v, want the barrier's EIO", err)
	}
}
