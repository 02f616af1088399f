package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newRootCmd builds the command tree explicitly: no package-level
// commands, no init().
func newRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "ralph",
		Short: "Run AI coding agents in a loop until a plan is done",
		Long: `ralph runs an AI coding agent (Claude Code, Codex, Gemini CLI, OpenCode, ...)
in a loop over a plan: one fresh agent process per task, output decoded and
recorded, each claim checked, each accepted task committed.`,
		Version:       f.Build.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("ralph {{.Version}}\n")
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(flagError(err)) })
	pf := root.PersistentFlags()
	pf.StringVarP(&f.Dir, "dir", "C", "", "act as if started in `DIR`")
	pf.StringVar(&f.ConfigFile, "config", "", "read settings from `FILE` instead of ./ralph.toml")
	pf.BoolVar(&f.Debug, "debug", false, "log debug detail to .ralph/ralph.log")
	pf.BoolVar(&f.Trust, "trust", false, "use ralph.toml (or --config FILE) as it is, unapproved, this once (CI); see ralph trust")

	root.AddCommand(
		newCmdRun(f, nil),
		newCmdReview(f, nil),
		newCmdInit(f, nil),
		newCmdStatus(f, nil),
		newCmdHistory(f, nil),
		newCmdReport(f, nil),
		newCmdTasks(f, nil),
		newCmdConvert(f, nil),
		newCmdPlan(f, nil),
		newCmdDoctor(f, nil),
		newCmdTrust(f, nil),
		newCmdConfig(f, nil),
		newCmdPR(f, nil),
		newCmdLogs(f, nil),
		newCmdServe(f, nil),
		newCmdAnswer(f, nil),
		newCmdDemo(f, nil),
		newCmdVersion(f),
		newCmdCompletion(f),
	)
	addCompletions(f, root)
	return root
}

// args wraps a cobra argument check so its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError(err)
		}
		return nil
	}
}

// flagError says what a flag's value should have been, in place of the
// parser's words (strconv.ParseInt: parsing "abc": invalid syntax).
func flagError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err
	}
	want := map[string]string{
		"int": "a whole number", "int64": "a whole number", "uint": "a whole number",
		"float64": "a number", "bool": "true or false", "duration": "a duration such as 90s, 30m or 2h",
	}[bad.GetFlag().Value.Type()]
	if want == "" {
		return err
	}
	return fmt.Errorf("--%s: want %s, got %q", bad.GetFlag().Name, want, bad.GetValue())
}
