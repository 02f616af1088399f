package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/sandbox"
)

// runAgent adapts an agent.Adapter to the loop's Agent interface.
type runAgent struct {
	agent.Adapter
	f *Factory
	// box is the sandbox the agent runs in; nil for none.
	box *sandbox.Box
}

func (a runAgent) Run(ctx context.Context, req agent.Request, sink agent.Sink) (agent.Result, error) {
	started := 0
	req.OnStart = func(pgid int) {
		started = pgid
		a.f.agents.add(pgid)
	}
	defer func() {
		if started > 0 {
			a.f.agents.remove(started)
		}
	}()
	if a.box != nil {
		// The directories the agent would create on first use: the
		// sandbox shows it a read-only home.
		if err := a.box.MakeDirs(); err != nil {
			return agent.Result{}, fmt.Errorf("sandbox: the %s agent's directories: %w", a.Name(), err)
		}
		req.Sandbox = a.box
	}
	return agent.Run(ctx, a.Adapter, req, sink)
}

// newAgent builds the configured agent's adapter, in the run's sandbox.
func newAgent(f *Factory, cfg config.Config, sb runSandbox) (runAgent, error) {
	ac := cfg.Agents[cfg.Agent]
	ad, err := agent.New(cfg.Agent, agent.Options{
		Command:       ac.Command,
		Args:          ac.Args,
		ExtraArgs:     ac.ExtraArgs,
		Env:           ac.Env,
		Output:        ac.Output,
		Root:          os.Geteuid() == 0,
		ErrorPatterns: ac.ErrorPatterns,
	})
	if err != nil {
		return runAgent{}, err
	}
	return runAgent{Adapter: ad, f: f, box: sb.agent(cfg.Agent)}, nil
}
