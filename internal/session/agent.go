package session

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
	f *Host
	// box is the sandbox the agent runs in; nil for none.
	box *sandbox.Box
	// homes, with bubblewrap, has the per-run copy of the agent's own
	// configuration that the box mounts in its place.
	homes *agentHomes
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
		box := a.box
		if a.homes != nil {
			copies, err := a.homes.enter(a.Name(), req.Dir)
			if err != nil {
				return agent.Result{}, fmt.Errorf("sandbox: the %s agent's configuration: %w", a.Name(), err)
			}
			// Synced once the agent is gone: the changes it may keep
			// are written back, the rest reported.
			defer a.homes.leave(a.Name())
			box = box.WithCopies(copies)
		}
		// The directories the agent would create on first use: the
		// sandbox shows it a read-only home.
		if err := box.MakeDirs(); err != nil {
			return agent.Result{}, fmt.Errorf("sandbox: the %s agent's directories: %w", a.Name(), err)
		}
		req.Sandbox = box
	}
	return agent.Run(ctx, a.Adapter, req, sink)
}

// newAgent builds the configured agent's adapter, in the run's sandbox.
func newAgent(f *Host, cfg config.Config, sb runSandbox) (runAgent, error) {
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
	return runAgent{Adapter: ad, f: f, box: sb.agent(cfg.Agent), homes: sb.homes}, nil
}
