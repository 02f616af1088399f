package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/ui"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// ReviewOptions are what ralph review asks beyond its configuration.
type ReviewOptions struct {
	// Config loads the configuration for a project directory, the
	// command's flags over the files and environment.
	Config func(dir string) (config.Config, error)
	// Since is where the reviewed work starts ("" for the merge-base with
	// the default branch).
	Since string
	JSON  bool
}

// Review runs the end-of-run reviewers on the branch's work, on their own.
func Review(ctx context.Context, f *Host, opts ReviewOptions) error {
	dir, err := f.ProjectDir()
	if err != nil {
		return err
	}
	cfg, err := opts.Config(dir)
	if err != nil {
		return err
	}
	plan, err := OpenPlan(dir, cfg.Tasks)
	if err != nil {
		return err
	}
	if err := f.approvePlanLink(dir, plan.Path()); err != nil {
		return err
	}
	ctx = f.withPrograms(ctx, cfg, dir)
	// The reviewers work in the run's sandbox, as in `ralph run`.
	sb, err := chooseSandbox(ctx, f, cfg, dir)
	if err != nil {
		return err
	}
	defer sb.close()
	defer sb.closeHomes()
	reviewer, err := reviewerAgent(f, cfg, sb)
	if err != nil {
		return err
	}
	lopts, err := loopOptions(f, dir, cfg)
	if err != nil {
		return err
	}
	if err := verifyOptions(f, dir, cfg, &lopts); err != nil {
		return err
	}
	repo, err := vcs.Open(ctx, dir, nil)
	if err != nil {
		return fmt.Errorf("%s; run `git init` and commit the work first "+
			"(--allow-no-repo lets `ralph run` work without a repository, not a review)",
			noRepoMessage(err, "ralph review reads the branch's diff from git"))
	}
	base, err := reviewBase(ctx, repo, opts.Since)
	if err != nil {
		return err
	}

	store, release, err := state.OpenLocked(dir)
	if err != nil {
		return err
	}
	defer func() { _ = release() }()
	// The plan's fsyncs join the store's: the loop's barrier covers both.
	if _, err := stopCrashed(f, store); err != nil {
		return err
	}
	lopts.RunID = state.NewRunID(time.Now())
	ctx, life := family(ctx, f, lopts.RunID)
	defer life.Close()
	logger, closeLog, err := openLog(store.Dir(), f.Debug)
	if err != nil {
		return err
	}
	defer closeLog()
	// The review's events take the run's pipeline (events.go), with no
	// tracker, notification or page.
	ev := &events{log: ui.NewLog(logger), screen: screenRenderer(f, true, opts.JSON, runView{dir: dir, plan: plan.Plan()})}
	life.attach(ev.post)
	sb.warnWith(ev.warn)
	deps := loop.Deps{Plan: plan, Store: store, Trees: repo, Reviewer: reviewer, Emit: ev.emit}
	err = loop.Review(ctx, lopts, deps, base)
	sb.closeHomes()
	life.detach()
	ev.close(err)
	if errors.Is(err, loop.ErrLimit) || errors.Is(err, loop.ErrStuck) || errors.Is(err, loop.ErrInterrupted) {
		return fmt.Errorf("%w: %w", ErrReported, err)
	}
	return err
}

// reviewBase is the commit the review's diff starts from: since, when
// given, else where HEAD left the default branch.
func reviewBase(ctx context.Context, repo *vcs.Git, since string) (string, error) {
	if since != "" {
		c, err := repo.ResolveCommit(ctx, since)
		if err != nil {
			return "", usageError(fmt.Errorf("--since: %w", err))
		}
		return c, nil
	}
	def, err := repo.DefaultBranch(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: say where the work starts with --since REV", err)
	}
	if _, err := repo.Head(ctx); err != nil {
		return "", err
	}
	return repo.MergeBase(ctx, "HEAD", def)
}
