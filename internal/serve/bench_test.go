package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// chattyAgent answers at once after streaming events: text and tool
// calls, as a real agent's iteration does, each one a loop event.
type chattyAgent struct{ events int }

func (chattyAgent) Name() string { return "bench" }
func (chattyAgent) Invocation(agent.Request) (agent.Invocation, error) {
	return agent.Invocation{Argv: []string{"bench"}}, nil
}
func (a chattyAgent) Run(_ context.Context, _ agent.Request, sink agent.Sink) (agent.Result, error) {
	for i := range a.events {
		if i%3 == 0 {
			sink.Emit(agent.Event{Kind: agent.EventToolCall, Tool: "Bash", ToolInput: "go test ./..."})
		} else {
			sink.Emit(agent.Event{Kind: agent.EventText, Text: "Looking at the parser; the tests need a fixture for the empty case."})
		}
	}
	return agent.Result{FinalText: "done <promise>TASK_DONE</promise>"}, nil
}

// BenchmarkLoopWithClients is a run's cost per iteration (a real plan file
// and store on tmpfs, an agent that streams 30 events and answers at
// once) with its control channel serving 0 or 20 clients that read every
// event: what watching a run from browsers costs the loop.
func BenchmarkLoopWithClients(b *testing.B) {
	for _, clients := range []int{0, 20} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { benchClients(b, clients) })
	}
}

func benchClients(b *testing.B, clients int) {
	b.Helper()
	const iterations = 50
	var stories []string
	for i := 1; i <= iterations; i++ {
		stories = append(stories, fmt.Sprintf(`{"id": "T-%03d", "title": "Task %d", "passes": false}`, i, i))
	}
	prd := []byte(`{"userStories": [` + strings.Join(stories, ",\n") + "]}\n")
	for b.Loop() {
		b.StopTimer()
		dir := benchDir(b)
		if err := os.WriteFile(filepath.Join(dir, "prd.json"), prd, 0o644); err != nil {
			b.Fatal(err)
		}
		plan, err := task.Load(filepath.Join(dir, "prd.json"))
		if err != nil {
			b.Fatal(err)
		}
		store, err := state.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		ch, err := Listen(dir, Info{RunID: "bench"}, Steer{Steering: loop.NewSteering(), Stop: func() {}})
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		for range clients {
			ready := make(chan struct{})
			wg.Go(func() { readAll(ch.Path(), ready) })
			<-ready
		}
		b.StartTimer()
		err = loop.Run(b.Context(), loop.Options{Dir: dir, MaxIterations: iterations, MaxAttempts: 3},
			loop.Deps{Agent: chattyAgent{events: 30}, Plan: plan, Store: store, Emit: ch.Handle})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		ch.Close(nil) // the clients' streams end
		wg.Wait()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*iterations)/1e3, "µs/iteration")
}

// readAll reads a run's event stream until it ends.
func readAll(socket string, ready chan<- struct{}) {
	cl := Dial(socket)
	defer cl.CloseIdleConnections()
	resp, err := cl.Get("http://run/v1/events")
	if err != nil {
		close(ready)
		return
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	_, _ = br.ReadString('\n') // retry: the stream is up
	close(ready)
	_, _ = io.Copy(io.Discard, br)
}

func benchDir(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ralph-bench-") //nolint:usetesting // tmpfs on purpose; b.TempDir is on disk
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
