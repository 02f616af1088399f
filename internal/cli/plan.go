package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/session"
)

type planOptions struct {
	f *Factory
	session.PlanOptions
	flags *pflag.FlagSet
}

const planLong = `Write a plan with the agent: ralph runs the configured agent with a
planning prompt (study the code, plan only what is missing, small tasks in
dependency order, acceptance criteria that include the project's checks,
implement nothing), then reads the plan the agent wrote. When the plan is
invalid, or a task lacks acceptance criteria or is marked done, ralph runs
the agent again with the problems, up to --max-rounds times. ralph itself
never marks a task done.

The argument is a specification file (spec.md, a PRD) or the idea in
quotes: ralph plan "add dark mode to the settings page". Without one,
ralph plans from spec.md, SPEC.md, PRD.md or prd.md if the project has one.

The plan goes to --out, else the usual file of --format (prd.json,
tasks.json, progress.md, IMPLEMENTATION_PLAN.md, PLAN.md, plan.md). An
existing plan is revised: its done tasks stay done.`

func newCmdPlan(f *Factory, runF func(*planOptions) error) *cobra.Command {
	opts := &planOptions{f: f}
	cmd := &cobra.Command{
		Use:   `plan [SPEC_FILE | "idea"]`,
		Short: "Write a plan with the agent from a spec or an idea",
		Long:  planLong,
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 1 {
				opts.Input = a[0]
			}
			opts.flags = cmd.Flags()
			if runF != nil {
				return runF(opts)
			}
			opts.Config = func(dir string) (config.Config, error) {
				cfg, err := opts.f.Config(dir)
				if err != nil {
					return cfg, err
				}
				return cfg, applyKeyFlags(&cfg, opts.flags, "plan")
			}
			return session.Plan(cmd.Context(), opts.f.Host, opts.PlanOptions)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Format, "format", "", "the plan's `FORMAT`: prd, tasks, progress, checklist, headings or mdjson (default: from --out, else prd)")
	fl.StringVarP(&opts.Out, "out", "o", "", "write the plan to `FILE` (default: the format's usual file)")
	fl.IntVar(&opts.MaxRounds, "max-rounds", 3, "agent runs at most, the first included, to get a valid plan")
	addKeyFlags(fl, "plan")
	return cmd
}
