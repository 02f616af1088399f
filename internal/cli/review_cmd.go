package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/ui"
	"github.com/ralph-loop/ralph/internal/vcs"
)

type reviewOptions struct {
	f     *Factory
	Plan  string
	Since string
	JSON  bool
	// flags holds the command's flags; the changed ones that are config
	// keys override the config.
	flags *pflag.FlagSet
}

const reviewLong = `Review the branch's work with the end-of-run reviewers, on their own.

Reviewers, one per focus (review.focus: correctness against the plan,
tests, simplicity, security, documentation), read at once the diff from
where the branch left the default branch (the merge-base of HEAD with
origin/HEAD, main or master; --since REV to choose) to the working tree,
uncommitted changes included. Each ends with <promise>SHIP</promise>, or
<promise>REVISE</promise> and numbered findings. The findings, without
duplicates, become tasks at the end of the plan, in its own format, each
with the finding as its acceptance criterion: ` + "`ralph run`" + ` does them.
A finding that is already an open task is not added again; one whose task
is done stops with exit 4.

The reviewers are review.agent (else the run's agent) with review.model;
--agent, --model, --focus and --timeout override them for this review.`

func newCmdReview(f *Factory, runF func(*reviewOptions) error) *cobra.Command {
	opts := &reviewOptions{f: f}
	cmd := &cobra.Command{
		Use:   "review [PLAN]",
		Short: "Review the branch's work; findings become tasks of the plan",
		Long:  reviewLong,
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 1 {
				opts.Plan = a[0]
			}
			opts.flags = cmd.Flags()
			if runF != nil {
				return runF(opts)
			}
			return runReview(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	addKeyFlags(fl, "review")
	fl.StringVar(&opts.Since, "since", "", "review the work since `REV` (default: the merge-base with the default branch)")
	fl.BoolVar(&opts.JSON, "json", false, "one JSON event per line on stdout")
	return cmd
}

func runReview(ctx context.Context, opts *reviewOptions) error {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	cfg, err := reviewConfig(opts, dir)
	if err != nil {
		return err
	}
	plan, err := openPlan(dir, cfg.Tasks)
	if err != nil {
		return err
	}
	if err := opts.f.approvePlanLink(dir, plan.Path()); err != nil {
		return err
	}
	ctx = opts.f.withPrograms(ctx, cfg, dir)
	// The reviewers work in the run's sandbox, as in `ralph run`.
	sb, err := chooseSandbox(ctx, opts.f, cfg, dir)
	if err != nil {
		return err
	}
	defer sb.close()
	defer sb.closeHomes()
	reviewer, err := reviewerAgent(opts.f, cfg, sb)
	if err != nil {
		return err
	}
	lopts, err := loopOptions(opts.f, dir, cfg)
	if err != nil {
		return err
	}
	if err := verifyOptions(opts.f, dir, cfg, &lopts); err != nil {
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
	if _, err := stopCrashed(opts.f, store); err != nil {
		return err
	}
	lopts.RunID = state.NewRunID(time.Now())
	ctx, life := family(ctx, opts.f, lopts.RunID)
	defer life.Close()
	logger, closeLog, err := openLog(store.Dir(), opts.f.Debug)
	if err != nil {
		return err
	}
	defer closeLog()
	render := ui.Tee{screenRenderer(opts.f, true, opts.JSON, runView{dir: dir, plan: plan.Plan()}), ui.NewLog(logger)}
	deps := loop.Deps{Plan: plan, Store: store, Trees: repo, Reviewer: reviewer, Emit: life.attach(render.Handle)}
	sb.warnWith(func(msg string) { deps.Emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: msg}) })
	err = loop.Review(ctx, lopts, deps, base)
	sb.closeHomes()
	life.detach()
	render.Close(err)
	if errors.Is(err, loop.ErrLimit) || errors.Is(err, loop.ErrStuck) || errors.Is(err, loop.ErrInterrupted) {
		return fmt.Errorf("%w: %w", errSilent, err)
	}
	return err
}

// reviewConfig layers the changed flags over the config files and
// environment: --agent, --model, --focus and --timeout are the review's
// keys, not the run's.
func reviewConfig(opts *reviewOptions, dir string) (config.Config, error) {
	cfg, err := opts.f.Config(dir)
	if err != nil {
		return cfg, err
	}
	if err := applyKeyFlags(&cfg, opts.flags, "review"); err != nil {
		return cfg, err
	}
	if opts.Plan != "" {
		cfg.Tasks = opts.Plan
	}
	return cfg, cfg.Validate()
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
