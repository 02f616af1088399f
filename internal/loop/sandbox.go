package loop

import (
	"errors"

	"github.com/ralph-loop/ralph/internal/state"
)

// SandboxFailure is a gate error the sandbox caused, as ralph saw it
// itself (gate.SandboxError: a host the proxy refused during that gate
// run): never the work's failure. The iteration's outcome is
// sandbox_failed, which is not an attempt, and the run stops with it
// (exit 1) before the next agent call: the same refusal would meet every
// attempt, and only the user can allow what was refused. Before the first
// agent call the baseline stops the run with it the same way.
type SandboxFailure interface {
	error
	// Summary is one line: the gate, what was refused, the key that would
	// allow it.
	Summary() string
	// SandboxFailed marks the error as the sandbox's.
	SandboxFailed()
}

// asSandboxFailure is err's SandboxFailure, if it is one.
func asSandboxFailure(err error) (SandboxFailure, bool) {
	var sf SandboxFailure
	ok := errors.As(err, &sf)
	return sf, ok
}

// sandboxFailed fills c in as sandbox_failed for the gate error sf and
// stops the run after this iteration with it. Nothing of it goes to the
// agent: no attempt is counted, so no attempt's note is written.
func (r *runner) sandboxFailed(c *classified, sf SandboxFailure) {
	c.outcome, c.errText, c.output = state.OutcomeSandboxFailed, sf.Summary(), ""
	if r.stop == nil {
		r.stop = sf
	}
}
