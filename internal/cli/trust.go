package cli

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/serve"
	"github.com/ralph-loop/ralph/internal/trust"
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
		if target := planLinkOut(dir, path); target != "" {
			// A plan linked out of the project: what is approved is where
			// it leads (approvePlanLink).
			data, linked = linkContent(target), true
		}
	}
	if !linked && filepath.Ext(path) == ".toml" {
		// Approving a file that does not parse would only defer its
		// error to the next run.
		if err := config.CheckFile(displayPath(path), data); err != nil {
			return fmt.Errorf("%w\nnot trusted: fix it, then run ralph trust again", err)
		}
	}
	rec, err := opts.f.trustStore().Approve(path, data, time.Now())
	if err != nil {
		return fmt.Errorf("trust %s: %w", path, err)
	}
	_, err = fmt.Fprintf(opts.f.IO.Out, "trusted %s (sha256 %s)\n", displayPath(path), rec.SHA256[:12])
	return err
}

// trustStore is the user's store of approvals:
// $XDG_STATE_HOME/ralph/trust, or ~/.local/state/ralph/trust.
func (f *Factory) trustStore() trust.Store {
	d := serve.StateDir(f.Environ())
	if d == "" {
		return trust.Store{}
	}
	return trust.Store{Dir: filepath.Join(d, "trust")}
}

// vouched reports whether this invocation uses the configuration as it
// is: --trust, or RALPH_TRUST set to a true value.
func (f *Factory) vouched() bool {
	if f.Trust {
		return true
	}
	v, err := strconv.ParseBool(getenv(f.Environ(), "RALPH_TRUST"))
	return err == nil && v
}

// approvals are the contents of configuration files this invocation
// obeys, by digest: a --worker's task runs read the ralph.toml of their
// worktrees, which must be what the worker itself approved.
type approvals struct {
	mu   sync.Mutex
	sums map[string]bool
}

func (a *approvals) has(sum string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sums[sum]
}

func (a *approvals) add(sum string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sums == nil {
		a.sums = map[string]bool{}
	}
	a.sums[sum] = true
}

// approve is config.LoadOptions.Approve for the commands that obey the
// configuration: the project file's content must be approved (or
// vouched for), else the error says what changed and how to approve it.
func (f *Factory) approve(path string, data []byte) error {
	sum := trust.Sum(data)
	if f.approved.has(sum) {
		return nil
	}
	if f.vouched() {
		f.approved.add(sum)
		return nil
	}
	ok, last, err := f.trustStore().Trusted(path, data)
	if err != nil {
		return fmt.Errorf("reading the trust store: %w", err)
	}
	if ok {
		f.approved.add(sum)
		return nil
	}
	return &untrustedError{problem: untrustedProblem(path), shown: untrustedChange(path, data, last)}
}

// untrustedError is a project configuration file the user has not
// approved at its content: what changed, then the problem.
type untrustedError struct {
	problem problem
	shown   string
}

func (e *untrustedError) Error() string {
	return e.shown + e.problem.detail + "; " + e.problem.fix
}

// untrustedProblem is the problem of path not approved at its content,
// as a run's refusal and doctor's FAIL line say it.
func untrustedProblem(path string) problem {
	name := displayPath(path)
	return problem{section: "config", name: "trusted",
		detail: fmt.Sprintf("%s is not trusted at this content, and ralph obeys it outside the sandbox "+
			"(agent, gate and notify commands, the sandbox's settings, where the GitHub token goes)", name),
		fix: fmt.Sprintf("read it, then run 'ralph trust %s' to approve it (or --trust, RALPH_TRUST=1: use it once, unrecorded)", name)}
}

// maxShownLines bounds the lines of a file, or of its diff, a refusal
// shows.
const maxShownLines = 200

// untrustedChange shows what the user has not approved: the diff since
// the last approval, or the whole file.
func untrustedChange(path string, data []byte, last *trust.Record) string {
	name := displayPath(path)
	var head, body string
	if last != nil {
		head = fmt.Sprintf("%s changed since you trusted it (%s):\n", name, last.TrustedAt.Local().Format("2006-01-02 15:04"))
		body = trust.Diff(last.Content, string(data))
	} else {
		head = fmt.Sprintf("%s was never trusted; it says:\n", name)
		body = trust.Diff("", string(data))
	}
	lines := strings.SplitAfter(body, "\n")
	if len(lines) > maxShownLines {
		lines = append(lines[:maxShownLines], fmt.Sprintf("... (%d more lines)\n", len(lines)-maxShownLines))
	}
	return head + strings.Join(lines, "")
}

// displayPath is path as the user would type it here: relative to the
// working directory when it is below it.
func displayPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return abs
}

// isUntrusted reports whether err is an unapproved configuration file.
func isUntrusted(err error) (*untrustedError, bool) {
	var u *untrustedError
	ok := errors.As(err, &u)
	return u, ok
}

// loadConfig loads the layered configuration for the project in dir;
// approve, when set, is asked about the project file, and the files the
// project file names for ralph to read must be in the project.
func (f *Factory) loadConfig(dir string, approve func(string, []byte) error) (config.Config, error) {
	env := f.Environ()
	opts := config.LoadOptions{
		UserFile:    config.UserFile(env),
		ProjectFile: filepath.Join(dir, "ralph.toml"),
		Environ:     env,
		Approve:     approve,
	}
	if approve != nil {
		opts.ProjectDir = dir
	}
	if f.ConfigFile != "" {
		opts.ProjectFile = f.ConfigFile
		opts.ProjectFileRequired = true
	}
	return config.Load(opts)
}
