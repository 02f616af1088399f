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
	"syscall"

	"github.com/ralph-loop/ralph/internal/loop"
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

// Main runs ralph and returns its exit code.
func Main() int {
	f := defaultFactory()
	err := newRootCmd(f).ExecuteContext(signalContext(f))
	code := exitCode(err)
	if err != nil && !errors.Is(err, errSilent) {
		fmt.Fprintln(f.IO.ErrOut, "ralph:", err)
	}
	return code
}

// signalContext cancels the context on the first SIGINT/SIGTERM, which
// stops the agent's process group gracefully and saves state; the second
// forces an immediate exit.
func signalContext(f *Factory) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(f.IO.ErrOut, "\nralph: stopping (the agent gets SIGTERM, state is saved); press Ctrl-C again to force")
		cancel()
		<-sigs
		fmt.Fprintln(f.IO.ErrOut, "ralph: forced exit")
		f.forceKill()
		os.Exit(ExitInterrupted)
	}()
	return ctx
}

// errSilent wraps errors that were already shown to the user.
var errSilent = errors.New("already reported")

// exitCode is the only place errors become numbers.
func exitCode(err error) int {
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
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
