package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/session"
)

type reviewOptions struct {
	f    *Factory
	Plan string
	session.ReviewOptions
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
			opts.Config = func(dir string) (config.Config, error) { return reviewConfig(opts, dir) }
			return session.Review(cmd.Context(), opts.f.Host, opts.ReviewOptions)
		},
	}
	fl := cmd.Flags()
	addKeyFlags(fl, "review")
	fl.StringVar(&opts.Since, "since", "", "review the work since `REV` (default: the merge-base with the default branch)")
	fl.BoolVar(&opts.JSON, "json", false, "one JSON event per line on stdout")
	return cmd
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
