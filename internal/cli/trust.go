package cli

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/words"
)

// Trust (DESIGN §9): ralph runs outside the sandbox what its
// configuration says (agent and notify commands, the sandbox itself, the
// GitHub API host it sends the token to), and the agent can write the
// project's ralph.toml. So a project's configuration file (ralph.toml, or
// the --config file) takes effect only at content the user approved,
// with `ralph trust`, as direnv obeys an .envrc only after `direnv
// allow`; `ralph init` approves what it writes. The user's own file
// (config.UserFile) is outside the project, out of the agent's reach
// (read-only in the sandbox): it needs no approval; neither does the
// environment, nor a missing ralph.toml (the defaults).
//
// Commands that obey the configuration (run, plan, review, pr) load it
// with Factory.Config, which stops on an unapproved file before anything
// runs; those that only read what a run left (status, tasks, logs) may
// read it unapproved (Factory.ConfigUnapproved); doctor reports it and
// checks the rest without it.

const trustLong = `Approve a configuration file at its current content.

ralph runs what its configuration says outside the sandbox: the agent's
command, notify commands and webhooks, the sandbox's own settings, the
GitHub API host it sends your token to. The agent it runs can write the
project, ralph.toml included. So ralph obeys a project's ralph.toml (or a
--config FILE) only at content you approved: after any change, a run
shows what changed and stops (exit 1) until you run ralph trust.

A plan is a configuration too: its Validation Commands run as gates. ralph
trust PLAN records the plan's Validation Commands as the ones in force: a
run uses those recorded (the file's when ralph first reads the plan, none
for one ralph plan's agent wrote), whatever the agent writes in the plan.

FILE defaults to the --config file, else ralph.toml in the project. The
approval is kept outside the project, in $XDG_STATE_HOME/ralph/trust/
(~/.local/state/ralph/trust/), with a copy of the content for the next
diff. ralph init approves the ralph.toml it writes. Your own
~/.config/ralph/config.toml and the environment need no approval.

Where nobody can answer (CI, --worker pods), --trust or RALPH_TRUST=1 use
the configuration as it is for that one invocation, unrecorded. Its risk:
a configuration an agent wrote into the checkout is then obeyed; use it
only on checkouts whose ralph.toml is reviewed like code.`

type trustOptions struct {
	f    *Factory
	File string
}

func newCmdTrust(f *Factory, runF func(*trustOptions) error) *cobra.Command {
	opts := &trustOptions{f: f}
	return &cobra.Command{
		Use:   "trust [FILE]",
		Short: "Approve ralph.toml (or FILE) at its current content",
		Long:  trustLong,
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 1 {
				opts.File = a[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return runTrust(opts)
		},
	}
}

func runTrust(opts *trustOptions) error {
	path := cmp.Or(opts.File, opts.f.ConfigFile)
	if path == "" {
		dir, err := opts.f.ProjectDir()
		if err != nil {
			return err
		}
		path = filepath.Join(dir, "ralph.toml")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	linked := false
	if dir, derr := opts.f.ProjectDir(); derr == nil {
		if target := session.PlanLinkOut(dir, path); target != "" {
			// A plan linked out of the project: what is approved is where
			// it leads (approvePlanLink).
			data, linked = session.LinkContent(target), true
		}
	}
	if !linked && filepath.Ext(path) == ".toml" {
		// Approving a file that does not parse would only defer its
		// error to the next run.
		if err := config.CheckFile(words.Path(path), data); err != nil {
			return fmt.Errorf("%w\nnot trusted: fix it, then run ralph trust again", err)
		}
	}
	if isPlan, err := opts.f.TrustPlan(path); err != nil || (isPlan && !linked) {
		return err
	}
	rec, err := opts.f.TrustStore().Approve(path, data, time.Now())
	if err != nil {
		return fmt.Errorf("trust %s: %w", path, err)
	}
	_, err = fmt.Fprintf(opts.f.IO.Out, "trusted %s (sha256 %s)\n", words.Path(path), rec.SHA256[:12])
	return err
}
