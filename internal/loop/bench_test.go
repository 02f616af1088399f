package loop

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/task"
)

// BenchmarkIteration is the engine's own cost per iteration: selection,
// prompt rendering, classification, history and state, with an agent, a
// plan and a store in memory (no processes, no disk but the prompt and
// transcript files, which go to tmpfs where there is one so that the
// figure does not depend on the disk). Each run does the same 50 iterations, marking the
// first 50 tasks done, whatever the plan's size, so that the figure is
// the cost of one iteration with a plan of that size: it should not grow
// with the plan.
func BenchmarkIteration(b *testing.B) {
	for _, tasks := range []int{50, 500, 5000} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) { benchIteration(b, tasks) })
	}
}

func benchIteration(b *testing.B, tasks int) {
	b.Helper()
	const iterations = 50
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = fmt.Sprintf("T-%03d", i+1)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		f := &fixture{
			plan:  newPlan(ids...),
			store: &memStore{dir: benchDir(b)},
			agent: &scripted{results: []agent.Result{{FinalText: "done <promise>TASK_DONE</promise>"}}},
			clock: &fakeClock{now: time.Now()},
			opts:  Options{Dir: benchDir(b), MaxIterations: iterations, MaxAttempts: 3, StuckThreshold: 5},
		}
		b.StartTimer()
		err := Run(b.Context(), f.opts, Deps{Agent: f.agent, Plan: f.plan, Store: f.store,
			Now: f.clock.Now, Sleep: f.clock.Sleep})
		if err != nil && (tasks == iterations || !errors.Is(err, ErrLimit)) {
			b.Fatal(err)
		}
		if f.agent.calls != iterations {
			b.Fatalf("%d iterations, want %d", f.agent.calls, iterations)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*iterations)/1e3, "µs/iteration")
}

// BenchmarkIterationFile is BenchmarkIteration with the real plan file
// behind the loop, a prd.json on tmpfs: each iteration also checks the
// file for changes (twice: the reload before selection and the runner-mode
// check after the agent) and marks the task done in it, which rewrites the
// whole file. That write grows with the file; the rest should not.
func BenchmarkIterationFile(b *testing.B) {
	for _, tasks := range []int{50, 500, 5000} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) { benchIterationFile(b, tasks) })
	}
}

func benchIterationFile(b *testing.B, tasks int) {
	b.Helper()
	const iterations = 50
	var stories []string
	for i := 1; i <= tasks; i++ {
		stories = append(stories, fmt.Sprintf(`    {"id": "T-%03d", "title": "Task %d", "description": "Do thing %d.", "acceptanceCriteria": ["it works", "tests pass"], "priority": %d, "passes": false}`, i, i, i, i))
	}
	data := []byte("{\n  \"project\": \"bench\",\n  \"userStories\": [\n" + strings.Join(stories, ",\n") + "\n  ]\n}\n")
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		dir := benchDir(b)
		path := filepath.Join(dir, "prd.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
		plan, err := task.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		f := &fixture{
			store: &memStore{dir: benchDir(b)},
			agent: &scripted{results: []agent.Result{{FinalText: "done <promise>TASK_DONE</promise>"}}},
			clock: &fakeClock{now: time.Now()},
			opts:  Options{Dir: dir, MaxIterations: iterations, MaxAttempts: 3, StuckThreshold: 5},
		}
		b.StartTimer()
		err = Run(b.Context(), f.opts, Deps{Agent: f.agent, Plan: plan, Store: f.store,
			Now: f.clock.Now, Sleep: f.clock.Sleep})
		if err != nil && (tasks == iterations || !errors.Is(err, ErrLimit)) {
			b.Fatal(err)
		}
		if f.agent.calls != iterations {
			b.Fatalf("%d iterations, want %d", f.agent.calls, iterations)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*iterations)/1e3, "µs/iteration")
}

// benchDir is a fresh directory on tmpfs, or on the test's disk where
// there is no tmpfs: creating files on a busy disk costs milliseconds,
// which would hide the engine's own cost.
func benchDir(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ralph-bench-") //nolint:usetesting // tmpfs on purpose; b.TempDir is on disk
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
