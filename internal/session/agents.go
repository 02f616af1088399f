package session

import (
	"fmt"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/route"
)

// agents are the agents a run may start and the rules that pick them:
// the run's agent, each agent the route may name (a task's own,
// escalate's, fallback's), and the reviewers' with review.fallback's.
type agents struct {
	rule      *route.Rule
	byName    map[string]loop.Agent
	review    *route.Rule // nil: no reviewer
	reviewers map[string]loop.Agent
}

// openRoutes builds the route of the run and of its reviewer, and every
// agent they may name, each in the run's sandbox with its own home.
func (r *Run) openRoutes() error {
	cfg := r.cfg
	a := agents{rule: route.New(route.FromConfig(cfg, r.opts.CLIAgent, r.opts.CLIModel)),
		byName: map[string]loop.Agent{r.ag.Name(): r.ag}}
	for _, name := range a.rule.Agents() {
		if _, ok := a.byName[name]; ok {
			continue
		}
		ag, err := r.agentNamed(name)
		if err != nil {
			return err
		}
		a.byName[name] = ag
	}
	if r.reviewer != nil {
		a.review = route.New(route.ForReview(cfg))
		a.reviewers = map[string]loop.Agent{r.reviewer.Name(): r.reviewer}
		for _, name := range a.review.Agents() {
			if _, ok := a.reviewers[name]; ok {
				continue
			}
			ag, err := r.agentNamed(name)
			if err != nil {
				return fmt.Errorf("review.fallback: %w", err)
			}
			a.reviewers[name] = ag
		}
	}
	r.agents = a
	r.lopts.FallbackAfter = cfg.FallbackAfter.D()
	return nil
}

// agentNamed is the agent name as the run's configuration has it
// ([agents.NAME]), in the run's sandbox.
func (r *Run) agentNamed(name string) (runAgent, error) {
	c := r.cfg
	c.Agent = name
	ag, err := newAgent(r.f, c, r.sb)
	if err != nil {
		return runAgent{}, fmt.Errorf("agent %s: %w", name, err)
	}
	return ag, nil
}

// deps gives the loop the routes and their agents.
func (a agents) deps(d *loop.Deps, available func(string) error) {
	d.Route = a.rule
	d.Agents = a.byName
	if a.review != nil {
		d.ReviewRoute = a.review
		d.Reviewers = a.reviewers
	}
	d.Available = available
}

// available says whether the agent name can stand in: its executable is
// found, and, where its adapter can tell, it looks logged in.
func (r *Run) available(name string) error {
	c := r.cfg
	c.Agent = name
	ac := c.Agents[name]
	ad, err := agent.New(name, agent.Options{Command: ac.Command, Args: ac.Args, ExtraArgs: ac.ExtraArgs, Env: ac.Env, Output: ac.Output})
	if err != nil {
		return err
	}
	env := agentEnv(ad, r.f.Environ())
	if _, p := findAgent(ad, c, r.dir, env); p != nil {
		return fmt.Errorf("%s: %s", p.detail, p.fix)
	}
	// Where it can tell: a known CLI as ralph starts it, whose login
	// ralph knows the places of. Arguments, variables or a command of the
	// user's may log it in some other way (a provider of their own).
	canTell := ac.Command == "" && len(ac.Args)+len(ac.ExtraArgs)+len(ac.Env) == 0
	if spec, _ := agent.Lookup(name); canTell && !spec.Custom && !spec.Credentials.Keyring &&
		len(spec.Credentials.EnvVars)+len(spec.Credentials.Files) > 0 && spec.Credentials.Find(env) == "" {
		return fmt.Errorf("%s does not look logged in (no %s)", name, spec.Credentials.Login)
	}
	return nil
}
