package demo

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// Options configure a demo run.
type Options struct {
	// Speed scales the simulated agent's pauses and the usage-limit wait:
	// 1 is a watchable pace, 0 no pauses.
	Speed float64
	// Emit receives the loop's events; Control, when set, steers the run.
	Emit    func(loop.Event)
	Control loop.Control
	// Environ is the environment git runs with (os.Environ()).
	Environ []string
	// NoGit runs without a repository (no commits).
	NoGit bool
}

// Run runs the real loop (the real plan file, state store and git
// repository) over the demo project in dir, made by Create, with the
// simulated agent. It returns what loop.Run returns.
func Run(ctx context.Context, dir string, opts Options) error {
	plan, err := task.Load(filepath.Join(dir, PlanFile))
	if err != nil {
		return err
	}
	store, release, err := state.OpenLocked(dir)
	if err != nil {
		return err
	}
	defer func() { _ = release() }()
	// The plan's fsyncs join the store's: the loop's barrier covers both.
	if _, err := state.EnsureGitignore(dir); err != nil {
		return err
	}
	deps := loop.Deps{
		Agent: NewAgent(opts.Speed), Plan: plan, Store: store, Emit: opts.Emit, Control: opts.Control,
		// A simulated limit resets in seconds: no jitter on top, and no
		// wait at all when the demo runs without pauses.
		Jitter: func(time.Duration) time.Duration { return 0 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			if opts.Speed <= 0 {
				return ctx.Err()
			}
			return loop.Sleep(ctx, d)
		},
	}
	if !opts.NoGit {
		env := GitEnv(opts.Environ)
		if err := InitRepo(ctx, dir, env); err != nil {
			return err
		}
		g, err := vcs.Open(ctx, dir, env)
		if err != nil {
			return err
		}
		if _, err := g.Commit(ctx, "demo: the plan"); err != nil {
			return err
		}
		deps.Repo = g
		// The guard and the reviewer read each claim's diff.
		deps.Trees = g
	}
	// ralph.toml's settings (config): the gate, the strict guard, a
	// reviewer on each task, played by the simulated agent.
	deps.Gate = Gate{Dir: dir}
	deps.Reviewer = deps.Agent
	lopts := loop.Options{
		Dir: dir, MaxIterations: 20, MaxAttempts: 3, Timeout: 5 * time.Minute, MaxWait: time.Hour,
		Grace: time.Second, StuckThreshold: 5, Commit: true, Env: opts.Environ, PID: os.Getpid(),
		Guard: loop.GuardStrict, Review: loop.ReviewOptions{When: loop.ReviewTask, Model: "simulated"},
	}
	return loop.Run(ctx, lopts, deps)
}
