package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/demo"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/task"
)

type demoOptions struct {
	f     *Factory
	Speed float64
	NoTUI bool
	JSON  bool
	Keep  bool
}

const demoLong = `Run the whole loop on a throwaway project with a built-in simulated agent:
no API key, no network, about twenty seconds.

The project (a four-task prd.json, its ralph.toml, a git repository) is
made in a new temporary directory, or in -C DIR (which must be new or
empty). The real loop works through the plan: the simulated agent streams
text and tool calls, writes real files, hits a usage limit and waits for
it to reset, and each check of a done claim catches a bad one: the gate
(go test, simulated) a broken change, the tamper guard a weakened test,
the reviewer (review.when = "task", played by the simulated agent) a
claim that does half the task. Every accepted task is committed. The
temporary directory is removed when the demo ends; with --keep (or -C
DIR) it stays, to look around with ralph history, ralph logs and git log.

On a terminal the run is shown in the TUI (p pause, s skip, q stop,
l transcript); --no-tui and pipes get plain lines.`

func newCmdDemo(f *Factory, runF func(*demoOptions) error) *cobra.Command {
	opts := &demoOptions{f: f}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch the whole loop on a throwaway project, with a simulated agent",
		Long:  demoLong,
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runDemo(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&opts.Speed, "speed", 1, "pace of the simulated agent: 2 is twice as fast, 0 without pauses")
	fl.BoolVar(&opts.NoTUI, "no-tui", false, "plain line output even on a terminal")
	fl.BoolVar(&opts.JSON, "json", false, "one JSON event per line on stdout")
	fl.BoolVar(&opts.Keep, "keep", false, "keep the temporary project when the demo ends, and say where it is")
	return cmd
}

func runDemo(ctx context.Context, opts *demoOptions) error {
	if opts.Speed < 0 {
		return usageError(errors.New("--speed: want 0 or more"))
	}
	dir, err := demoDir(opts.f.Dir)
	if err != nil {
		return err
	}
	keep := opts.Keep || opts.f.Dir != ""
	if !keep {
		defer os.RemoveAll(dir)
	}
	planPath, err := demo.Create(dir)
	if err != nil {
		return err
	}
	w := opts.f.IO.Out
	if !opts.JSON {
		fmt.Fprintf(w, "ralph demo: a throwaway project in %s\n", dir)
	}
	plan, err := task.Load(planPath)
	if err != nil {
		return err
	}

	err = session.Demo(ctx, opts.f.Host, dir, plan.Plan(), session.DemoOptions{Speed: opts.Speed, NoTUI: opts.NoTUI, JSON: opts.JSON})
	switch {
	case opts.JSON:
	case keep:
		fmt.Fprintf(w, "\nThe demo project is in %s. Look around:\n  cd %s\n  git log --oneline\n  ralph history\n  ralph logs 2\n",
			dir, session.ShellQuote(dir))
	default:
		fmt.Fprintln(w, "\nThe demo project is removed; ralph demo --keep keeps it to look around.")
	}
	if err != nil && (errors.Is(err, loop.ErrLimit) || errors.Is(err, loop.ErrStuck)) {
		return &ExitError{Code: exitCode(err), Err: fmt.Errorf("%w: %w", errSilent, err)}
	}
	return err
}

// demoDir is -C DIR (created when missing), or a new temporary directory.
func demoDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "ralph-demo-")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", usageError(err)
	}
	return abs, nil
}
