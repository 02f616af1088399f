package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/ui"
	"github.com/ralph-loop/ralph/internal/words"
)

type doctorOptions struct {
	f    *Factory
	JSON bool
	session.DoctorOptions
}

const doctorLong = `Check that a run can start: the configured agent is installed, answers
--version and looks logged in; git is there and the project is a repository;
ralph.toml is valid; the plan is found and parses. Then what ralph run
checks before anything changes: the plan is writable, the working tree
has no changes but ralph's own, HEAD is on a branch and the plan's
branchName is one git can make. It also lists the quality gates and the
project's own checks (go test, npm test, pytest, make test, ...), each
with whether ralph.toml enables it, and runs the gates once in the sandbox,
as a run's gates get it, through ralph's proxy too (only from a ralph.toml
you approved; each within --gates-timeout; --no-gates skips them): a
failing gate is a problem, one the proxy refused a host names it and the
key, the files a gate left in the tree are listed. Nothing is sent to a
model.

Each problem comes with its fix. The exit code is 1 when something the run
needs is missing or broken (the agent's executable, the config, the plan,
any of the run's checks): exactly when ralph run would refuse to start;
warnings (credentials not found, no git repository) leave it 0.

Credentials are looked for, never used: each agent's API key variables
(ANTHROPIC_API_KEY for claude, OPENAI_API_KEY for codex, GEMINI_API_KEY for
gemini, ...) and its login files under HOME (~/.claude/.credentials.json,
~/.codex/auth.json, ~/.gemini/oauth_creds.json, ...). A CLI that keeps its
login in the system keyring may be logged in even when none is found.`

func newCmdDoctor(f *Factory, runF func(*doctorOptions) error) *cobra.Command {
	opts := &doctorOptions{f: f, DoctorOptions: session.DoctorOptions{VersionTimeout: 10 * time.Second, GatesTimeout: time.Minute}}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the agent, git, config and plan before a run",
		Long:  doctorLong,
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runDoctor(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "check every known agent, not only the configured one")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the checks as one JSON object")
	cmd.Flags().DurationVar(&opts.GatesTimeout, "gates-timeout", opts.GatesTimeout, "time limit of each gate command doctor runs (not gates.timeout)")
	cmd.Flags().BoolVar(&opts.NoGates, "no-gates", false, "do not run the gates")
	return cmd
}

func runDoctor(ctx context.Context, opts *doctorOptions) error {
	r, err := session.Doctor(ctx, opts.f.Host, opts.DoctorOptions)
	if err != nil {
		return err
	}
	w := opts.f.IO.Out
	if opts.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := printDoctor(ui.TextWriter{W: w}, r); err != nil { // a check quotes the plan, an agent's --version
		return err
	}
	if !r.OK {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%w: doctor found problems", errSilent)}
	}
	return nil
}

func printDoctor(w io.Writer, r session.DoctorReport) error {
	section := ""
	fails, warns := 0, 0
	for _, c := range r.Checks {
		if c.Section != section {
			section = c.Section
			fmt.Fprintln(w, section)
		}
		mark := map[string]string{session.CheckOK: "ok  ", session.CheckWarn: "warn", session.CheckFail: "FAIL"}[c.Status]
		// A detail of many lines keeps its column.
		detail := strings.ReplaceAll(c.Detail, "\n", "\n"+strings.Repeat(" ", 21))
		fmt.Fprintf(w, "  %s  %-12s %s\n", mark, c.Name, detail)
		if c.Fix != "" && c.Status != session.CheckOK {
			fmt.Fprintf(w, "        %-12s fix: %s\n", "", c.Fix)
		}
		switch c.Status {
		case session.CheckFail:
			fails++
		case session.CheckWarn:
			warns++
		}
	}
	var err error
	switch {
	case !r.OK:
		// A failure and a warning are told apart: "2 problems" over one
		// FAIL line sent users looking for a second.
		summary := words.Count(fails, "failure")
		if warns > 0 {
			summary += " and " + words.Count(warns, "warning")
		}
		_, err = fmt.Fprintf(w, "\n%s; a run cannot start until the FAIL lines are fixed\n", summary)
	case warns > 0:
		_, err = fmt.Fprintf(w, "\n%s; a run can start\n", words.Count(warns, "warning"))
	default:
		_, err = fmt.Fprintln(w, "\nall checks passed")
	}
	return err
}
