package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/session"
)

type runOptions struct {
	f *Factory
	session.Options
	// flags holds the command's flags; the changed ones that are config
	// keys override the config.
	flags *pflag.FlagSet
}

const runLong = `Run the agent in a loop until every task of the plan is done.

Each iteration starts a fresh agent process on the next open task (priority,
then file order, dependencies first), reads what it streams, decides what
happened and records it in .ralph/history.jsonl.

PLAN defaults to the tasks key of ralph.toml, then the first of prd.json,
tasks.json, progress.md, IMPLEMENTATION_PLAN.md, fix_plan.md.

Before anything changes (a branch, .ralph/, an agent call) the run checks
that it can work, as ralph doctor does: the agent is installed, the plan
is writable, the working tree has no changes but ralph's own, HEAD is on
a branch, the plan's branchName is one git can make. --dry-run prints the
preview, then exits 1 with what would stop the run.

Before the first agent call the [gates] commands run once on the starting
tree: one that already fails stops the run (exit 1), unless
--allow-failing-gates makes it advisory for the run.

--task ID runs that task alone, to its end: exit 0 when it is done, 4 when
it failed (or waits on tasks not done), 3 when a limit stopped it.
--worker is one of many workers on one plan: it claims the next ready task
on the remote (--remote, through refs/ralph/claims/), works it in a fresh
worktree, lands it on the run branch, and repeats until nothing is left to
claim: exit 0 when the plan is done, 4 when only failed tasks are left, 3
when a limit stopped it. ralph status --remote shows who works on what.

PLAN may be github:OWNER/REPO: the repository's open issues labelled ralph
(--label, --milestone, --assignee) are the plan, written back to as the
run goes; --pr ends the run at a pull request.

Every flag but --once, --task, --worker, --dry-run, --no-tui, --json,
--pr-feedback and --serve is also a key of ralph.toml and an environment variable
RALPH_<KEY> (RALPH_MAX_ITERATIONS; [worker] keys: RALPH_WORKER_REMOTE, ...).

While it runs, .ralph/run.sock is its control channel (ralph serve and
ralph answer use it), and --serve shows it on a page (see ralph serve).

Exit codes:
  0    all tasks done
  1    error: bad input or config, agent missing, fatal agent error, lock held
  2    usage: bad flags or arguments
  3    a limit stopped the run with tasks open (iterations, budget, wait)
  4    stuck: no progress or the same error too often, or only failed tasks left
  130  interrupted: Ctrl-C, SIGTERM, SIGHUP (the terminal closed), SIGQUIT`

func newCmdRun(f *Factory, runF func(*runOptions) error) *cobra.Command {
	opts := &runOptions{f: f}
	cmd := &cobra.Command{
		Use:   "run [PLAN]",
		Short: "Run the agent in a loop until the plan is done",
		Long:  runLong,
		Args: func(cmd *cobra.Command, a []string) error {
			_, rest := serveArg(cmd, opts, a)
			return args(cobra.MaximumNArgs(1))(cmd, rest)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			if addr, rest := serveArg(cmd, opts, a); addr != "" {
				opts.Serve, a = addr, rest
			}
			if len(a) == 1 {
				opts.Plan = a[0]
			}
			opts.flags = cmd.Flags()
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	addKeyFlags(fl, "run")
	fl.BoolVar(&opts.Once, "once", false, "run one iteration and stop")
	fl.StringVar(&opts.Task, "task", "", "run only task `ID`, to its end (done, failed or a limit)")
	fl.BoolVar(&opts.Worker, "worker", false, "claim ready tasks on the remote, one after another, until none is left (many workers share one plan)")
	fl.BoolVar(&opts.Dry, "dry-run", false, "print the agent command, environment changes and prompt; run nothing")
	fl.BoolVar(&opts.NoTUI, "no-tui", false, "plain line output even on a terminal")
	fl.BoolVar(&opts.JSON, "json", false, "one JSON event per line on stdout")
	fl.IntVar(&opts.PRFeedback, "pr-feedback", 0, "make pull request `N`'s failing checks and review comments the plan; fix, push, answer, until green")
	fl.StringVar(&opts.Serve, "serve", "", "show the run on a page at `ADDR` (alone: "+DefaultServeAddr+"); see ralph serve")
	fl.Lookup("serve").NoOptDefVal = DefaultServeAddr
	return cmd
}

// addKeyFlags registers the flags of command that are config keys, as
// the key table declares them.
func addKeyFlags(fl *pflag.FlagSet, command string) {
	for _, k := range config.Flags(command) {
		switch def := k.Default.(type) {
		case string:
			fl.StringP(k.Name, k.Shorthand, def, k.Usage)
		case int:
			fl.IntP(k.Name, k.Shorthand, def, k.Usage)
		case float64:
			fl.Float64P(k.Name, k.Shorthand, def, k.Usage)
		case bool:
			fl.BoolP(k.Name, k.Shorthand, def, k.Usage)
		case time.Duration:
			fl.DurationP(k.Name, k.Shorthand, def, k.Usage)
		case []string:
			// One comma-separated value, as in the environment.
			fl.StringP(k.Name, k.Shorthand, strings.Join(def, ","), k.Usage)
		default:
			panic(fmt.Sprintf("cli: no flag type for key %s (%T)", k.Key, def))
		}
	}
}

// applyKeyFlags sets the keys whose flags of command were given on the
// command line, over the config files and environment.
func applyKeyFlags(cfg *config.Config, fl *pflag.FlagSet, command string) error {
	for _, k := range config.Flags(command) {
		f := fl.Lookup(k.Name)
		if f == nil || !f.Changed {
			continue
		}
		if err := cfg.Set(k.Key, f.Value.String()); err != nil {
			// The config error names the key; on the command line it is a flag.
			msg := err.Error()
			if rest, ok := strings.CutPrefix(msg, k.Key+": "); ok {
				msg = rest
			}
			return usageError(fmt.Errorf("--%s: %s", k.Name, msg))
		}
	}
	return nil
}

// runConfig layers the changed flags over the config files and environment.
func runConfig(opts *runOptions, dir string) (config.Config, error) {
	cfg, err := opts.f.Config(dir)
	if err != nil {
		return cfg, err
	}
	if err := applyKeyFlags(&cfg, opts.flags, "run"); err != nil {
		return cfg, err
	}
	if opts.Plan != "" {
		cfg.Tasks = opts.Plan
	}
	return cfg, cfg.Validate()
}

// serveArg takes the address of a bare --serve from the arguments:
// --serve takes its value optionally, so `--serve 127.0.0.1:9000` parses
// as --serve and an argument; an argument that is a host:port and names
// no file is the address.
func serveArg(cmd *cobra.Command, opts *runOptions, a []string) (addr string, rest []string) {
	fl := cmd.Flags().Lookup("serve")
	if fl == nil || !fl.Changed || opts.Serve != DefaultServeAddr || len(a) == 0 {
		return "", a
	}
	host, port, err := net.SplitHostPort(a[0])
	if err != nil || strings.ContainsAny(host, "/") {
		return "", a
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", a
	}
	if _, err := os.Stat(a[0]); err == nil {
		return "", a
	}
	return a[0], a[1:]
}

// runRun runs the plan as the options say, or prints its dry run, and
// says where its pull request is.
func runRun(ctx context.Context, opts *runOptions) error {
	opts.Config = func(dir string) (config.Config, error) { return runConfig(opts, dir) }
	// The command line's --agent and --model outrank a task's own.
	if fl := opts.flags.Lookup("agent"); fl != nil && fl.Changed {
		opts.CLIAgent = fl.Value.String()
	}
	if fl := opts.flags.Lookup("model"); fl != nil && fl.Changed {
		opts.CLIModel = fl.Value.String()
	}
	switch {
	case opts.Worker:
		return session.Worker(ctx, opts.f.Host, opts.Options)
	case opts.PRFeedback != 0:
		return session.PRFeedback(ctx, opts.f.Host, opts.Options)
	}
	run, err := session.Open(ctx, opts.f.Host, opts.Options)
	if err != nil {
		return err
	}
	defer run.Close()
	if opts.Dry {
		return run.DryRun(opts.f.IO.Out)
	}
	pr, err := run.Run(ctx)
	if pr != nil {
		printPR(opts.f, *pr)
	}
	return err
}
