// Package cli is ralph's command line: one file per command, the wiring of
// config, plan, agent, store and renderers, and the one place where errors
// become exit codes.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/redact"
	"github.com/ralph-loop/ralph/internal/sandbox"
	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/termtext"
)

// Exit codes of DESIGN.md §2.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitLimit       = 3
	ExitStuck       = 4
	ExitInterrupted = 130
)

// ExitError carries an exit code through cobra.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usageError marks bad command-line usage (exit 2).
func usageError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// Main runs ralph and returns its exit code. build is what the linker
// flags of a release or `make build` said about this binary.
func Main(build BuildInfo) int {
	if len(os.Args) == 3 && os.Args[1] == session.GuardianCommand {
		return guardian(os.Args[2])
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.BridgeCommand {
		return bridge(os.Args[2:], os.Stderr)
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.LayersCommand {
		return sandbox.LayersMain(os.Args[2:], os.Stderr)
	}
	f := defaultFactory()
	f.Build = build.complete(debug.ReadBuildInfo)
	err := newRootCmd(f).ExecuteContext(signalContext(f))
	code := exitCode(err)
	if u, ok := session.IsUntrusted(err); ok {
		f.ShowUntrusted(context.Background(), u)
	}
	if err != nil && !errors.Is(err, errSilent) {
		msg := redact.String(err.Error())
		if hint := loop.ResourceHint(err); hint != "" && !strings.Contains(msg, hint) {
			msg += "; " + hint
		}
		// An error may quote what the agent wrote (a plan's line, a
		// file's name): text, never commands.
		fmt.Fprintln(f.IO.ErrOut, "ralph:", termtext.Text(msg))
	}
	return code
}

// stopSignals are the signals that stop ralph, all alike: Ctrl-C, kill,
// the terminal closing (SIGHUP, sent to the whole foreground group, which
// ralph is in and the agent, in its own group, is not) and Ctrl-\.
func stopSignals() []os.Signal {
	return []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT}
}

// forceWait is how long a forced stop leaves the run, once the agents are
// killed, to save its state before ralph exits regardless.
const forceWait = 3 * time.Second

// signalContext cancels the context on the first stop signal, which stops
// the agent's process group gracefully (SIGTERM, the grace, SIGKILL),
// records the iteration as interrupted and saves state; the run then exits
// 130. The second kills the agents' groups at once and gives the run a
// moment to save its state; the third exits at once. A terminal that closes
// may send SIGHUP twice (the kernel, then the shell): that is a quicker
// stop, still recorded.
func signalContext(f *Factory) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, stopSignals()...)
	go func() {
		<-sigs
		note := "ralph: stopping (the agent gets SIGTERM, state is saved); press Ctrl-C again to force"
		if n := f.StopNote(); n != nil {
			note = *n
		}
		fmt.Fprintln(f.IO.ErrOut, "\n"+note)
		cancel()
		<-sigs
		fmt.Fprintln(f.IO.ErrOut, "ralph: forced exit: the agent is killed; saving state (Ctrl-C again to exit at once)")
		f.ForceKill()
		time.AfterFunc(forceWait, func() { os.Exit(ExitInterrupted) })
		<-sigs
		os.Exit(ExitInterrupted)
	}()
	return ctx
}

// guardian is the guardian process of a run (proc.Guardian): it outlives
// ralph only to stop what ralph's run left, then exits. The signals that
// stop ralph are not for it (closing the terminal must not take it along
// before it has done its work), and nobody reads what it would print.
func guardian(id string) int {
	signal.Ignore(append(stopSignals(), syscall.SIGPIPE)...)
	proc.Guardian(id, os.Stdin)
	return ExitOK
}

// errSilent wraps errors that were already shown to the user.
var errSilent = session.ErrReported

// exitCode is the only place errors become numbers.
func exitCode(err error) int {
	var ee *ExitError
	var ue *session.UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, loop.ErrInterrupted), errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, loop.ErrLimit):
		return ExitLimit
	case errors.Is(err, loop.ErrStuck):
		return ExitStuck
	default:
		return ExitFailure
	}
}
