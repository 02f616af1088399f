package cli

import (
	"context"
	"os"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
)

// runAgent adapts an agent.Adapter to the loop's Agent interface.
type runAgent struct {
	agent.Adapter
	f *Factory
	// box is the sandbox the agent runs in; nil for none.
	box agent.Sandbox
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
	req.Sandbox = a.box
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
	box, err := sb.agent(cfg.Agent)
	if err != nil {
		return runAgent{}, err
	}
	return runAgent{Adapter: ad, f: f, box: box}, nil
}
