package loop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
)

// BenchmarkIteration is the engine's own cost per iteration: selection,
// prompt rendering, classification, history and state, with an agent, a
// plan and a store in memory (no processes, no disk but the prompt and
// transcript files).
func BenchmarkIteration(b *testing.B) {
	const tasks = 50
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = fmt.Sprintf("T-%03d", i+1)
	}
	for b.Loop() {
		b.StopTimer()
		f := &fixture{
			plan:  newPlan(ids...),
			store: &memStore{dir: b.TempDir()},
			agent: &scripted{results: []agent.Result{{FinalText: "done <promise>TASK_DONE</promise>"}}},
			clock: &fakeClock{now: time.Now()},
			opts:  Options{Dir: b.TempDir(), MaxIterations: tasks + 1, MaxAttempts: 3, StuckThreshold: 5},
		}
		b.StartTimer()
		err := Run(context.Background(), f.opts, Deps{Agent: f.agent, Plan: f.plan, Store: f.store,
			Now: f.clock.Now, Sleep: f.clock.Sleep})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tasks)/1e3, "µs/iteration")
}
