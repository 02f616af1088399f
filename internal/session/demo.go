package session

import (
	"context"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/demo"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/task"
)

// DemoOptions are what ralph demo asks.
type DemoOptions struct {
	// Speed paces the simulated agent (0: no pauses).
	Speed       float64
	NoTUI, JSON bool
}

// Demo runs the simulated agent on the demo project in dir, shown as a
// run is shown: the same renderers, steering and transcripts.
func Demo(ctx context.Context, f *Host, dir string, plan *task.Plan, opts DemoOptions) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	steer := loop.NewSteering()
	render, err := newRenderer(f, opts.NoTUI, opts.JSON, runView{
		dir: dir, plan: plan, agent: "demo", model: "simulated", stop: stop, steer: steer,
		newDecoder: demoDecoder,
	})
	if err != nil {
		return err
	}
	err = demo.Run(ctx, dir, demo.Options{Speed: opts.Speed, Emit: render.Handle, Control: steer, Environ: f.Environ()})
	render.Close(err)
	return err
}

// demoDecoder reads the simulated agent's output: Claude Code's
// stream-json, through the real decoder (agent.TranscriptDecoder reads
// JSON lines of an agent it does not know as stream-json).
func demoDecoder() agent.Decoder { return agent.TranscriptDecoder("demo", "", []byte("{")) }
