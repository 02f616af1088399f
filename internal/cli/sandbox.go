package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/sandbox"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// runSandbox is the sandbox a run's agents, reviewers and gates work in;
// ralph's own git, plan and state work stays outside it.
type runSandbox struct {
	choice sandbox.Choice
}

// chooseSandbox probes the configured sandbox for the project in dir. An
// explicit one that cannot work here is an error, before any agent runs;
// auto without one that works is none, with the reason.
func chooseSandbox(ctx context.Context, f *Factory, cfg config.Config, dir string) (runSandbox, error) {
	c, err := sandbox.Choose(ctx, cfg.Sandbox.Mode, sandboxPolicy(cfg, dir, vcs.ConfigFiles(ctx, dir, f.Environ())), f.Environ())
	if err != nil {
		return runSandbox{}, fmt.Errorf("--sandbox %s: %w", cfg.Sandbox.Mode, err)
	}
	return runSandbox{choice: c}, nil
}

// sandboxPolicy is what a child of a run in dir may reach: the project
// (its state and gitFiles read-only: ralph reads the one, and its own git,
// outside the sandbox, obeys the git configuration and runs the hooks
// among the others: vcs.ConfigFiles), the git directory its commits and
// worktrees need, the [sandbox] paths and variables.
func sandboxPolicy(cfg config.Config, dir string, gitFiles []string) sandbox.Policy {
	gitDir := vcs.CommonDir(dir)
	readOnly := append([]string{filepath.Join(dir, state.Dir)}, gitFiles...)
	return sandbox.Policy{
		Project:   dir,
		Worktrees: filepath.Join(dir, state.Dir, state.WorktreesDir),
		GitDir:    gitDir,
		ReadOnly:  readOnly,
		Writable:  cfg.Sandbox.AllowWrite,
		Hidden:    slices.Concat(sandbox.DefaultHidden(), cfg.Sandbox.Deny),
		Env:       cfg.Sandbox.Env,
		Network:   cfg.Sandbox.Network,
	}
}

// agent is the sandbox of the named agent: the run's, with the agent's
// own configuration and session directories writable and its variables
// passed in; nil without a sandbox.
func (s runSandbox) agent(name string) *sandbox.Box {
	if s.choice.Box == nil {
		return nil
	}
	spec, _ := agent.Lookup(name)
	return s.choice.Box.With(spec.ConfigDirs, slices.Concat(spec.Credentials.EnvVars, spec.Env))
}

// gates is the sandbox of the quality gates; nil without one.
func (s runSandbox) gates() proc.Wrapper { return s.choice.Wrapper() }

// record is the sandbox as state.json and the run_started event say it.
func (s runSandbox) record() *state.Sandbox {
	return &state.Sandbox{Mode: s.choice.Mode, Kind: s.choice.Kind(), Warning: s.choice.Fallback}
}
