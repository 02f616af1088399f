// Package gate runs the quality checks a task must pass before ralph
// accepts it: the project's `[gates] commands` and a task's own validation
// commands, each through the shell in the project directory. It also finds
// the checks a project already has (detect.go), for `ralph init` to write
// as gates and for `ralph doctor` and `ralph run` to point out.
//
// It owns nothing but running commands (through proc, like every child
// ralph starts), keeping a bounded tail of what they printed, and reading
// project files to find checks; deciding what a failure means (when a
// gate is advisory, when a result can be reused) is the loop's business.
package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/sandbox"
)

// maxOutput bounds what is kept of a command's output: the tail, where
// test runners print their verdict.
const maxOutput = 8 << 10

// Runner runs gate commands in a directory.
type Runner struct {
	Dir string
	// Commands run for every task, in order; the first failure stops.
	Commands []string
	// TaskCommands returns a task's own validation commands, if its plan
	// format has them.
	TaskCommands func(taskID string) []string
	Timeout      time.Duration
	Env          []string
	// Sandbox, when set, confines each command: gates run in the agent's
	// sandbox (internal/sandbox). One that is a Watcher says what it
	// refused each command, and a command that fails after a refusal is
	// a SandboxError.
	Sandbox proc.Wrapper
	// Fresh, when set, gives each command variables of its own, undone
	// after it: empty caches where the sandbox cannot lay a throwaway
	// layer over the user's (sandbox.ColdCaches).
	Fresh func(env []string) (vars []string, done func(), err error)
}

// Result is what one command did.
type Result struct {
	Command string
	// ExitCode is -1 when the command was killed (a timeout, a signal).
	ExitCode int
	Output   string
	Duration time.Duration
	// TimedOut: the gate's timeout killed it.
	TimedOut bool
}

// Run runs the gate commands for a task. ok is false when a command failed;
// the returned output names the failing command and holds the tail of its
// output. err is for commands that could not be run at all.
func (r *Runner) Run(ctx context.Context, taskID string) (ok bool, output string, err error) {
	cmds := append([]string(nil), r.Commands...)
	if r.TaskCommands != nil {
		cmds = append(cmds, r.TaskCommands(taskID)...)
	}
	var passed []string
	for _, c := range cmds {
		res, err := r.RunCommand(ctx, c)
		if err != nil {
			return false, "", err
		}
		if res.ExitCode != 0 {
			return false, fmt.Sprintf("gate failed: `%s` exited %d after %s\n%s", c, res.ExitCode,
				res.Duration.Round(time.Millisecond), res.Output), nil
		}
		passed = append(passed, c)
	}
	return true, "gates passed: " + strings.Join(passed, "; "), nil
}

// RunCommand runs one command in the runner's directory, with its
// environment and timeout. err is for a command that could not be run at
// all; a failing or timed-out one is a Result with its exit code.
func (r *Runner) RunCommand(ctx context.Context, command string) (Result, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	env := r.Env
	if r.Fresh != nil {
		if env == nil {
			env = os.Environ()
		}
		vars, done, err := r.Fresh(env)
		if err != nil {
			return Result{Command: command}, fmt.Errorf("gate %q: its caches: %w", command, err)
		}
		defer done()
		env = append(slices.Clone(env), vars...)
	}
	box, watched := r.Sandbox, func() sandbox.Seen { return sandbox.Seen{} }
	if w, ok := r.Sandbox.(Watcher); ok {
		var err error
		if box, watched, err = w.Watch(); err != nil {
			return Result{Command: command}, fmt.Errorf("gate %q: %w", command, err)
		}
	}
	out := proc.NewTail(maxOutput)
	// Its own group, so a timeout takes the test runner's children too;
	// no grace: SIGKILL at once.
	pr, err := proc.Run(ctx, proc.Cmd{
		Argv: []string{"sh", "-c", command}, Dir: r.Dir, Env: env, Sandbox: box,
		Stdout: out, Stderr: out,
	})
	seen := watched()
	res := Result{Command: command, Output: tailText(out), Duration: pr.Duration}
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.ExitCode, res.TimedOut = -1, true
		res.Output += fmt.Sprintf("\n(timed out after %s)", r.Timeout)
	case err != nil:
		return res, fmt.Errorf("gate %q: %w", command, err)
	case pr.Signal != 0:
		res.ExitCode = -1 // the shell itself was killed
	default:
		res.ExitCode = pr.ExitCode
	}
	// A run the user interrupted failed for that, whatever it was refused.
	failed := res.TimedOut || res.ExitCode != 0 && ctx.Err() == nil
	if failed {
		res.Output += seenNote(seen)
	}
	if failed && len(seen.Refused) > 0 {
		return res, &SandboxError{Result: res, Refused: seen.Refused}
	}
	return res, nil
}

// tailText is what a gate's output shows: its tail, saying how much was
// cut.
func tailText(t *proc.Tail) string {
	if n := t.Dropped(); n > 0 {
		return fmt.Sprintf("…[%d bytes elided]…\n%s", n, t.String())
	}
	return t.String()
}
