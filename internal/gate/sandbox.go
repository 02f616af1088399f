package gate

import (
	"fmt"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/sandbox"
)

// Watcher is a sandbox that says what it saw of one command
// (sandbox.Box): Watch returns the wrapper the command runs in and a
// function that, once it has ended, returns what was refused to it and
// what it wrote that was discarded.
type Watcher interface {
	Watch() (proc.Wrapper, func() sandbox.Seen, error)
}

// maxReadOnly bounds the places a note names as found read-only (on a
// kernel that lays no overlay, every one of them).
const maxReadOnly = 5

// seenNote is what a failed gate's output gets added about what its
// sandbox discarded or could not give it: not a refusal (the writes
// succeeded), but what a reader of the failure should know.
func seenNote(s sandbox.Seen) string {
	var b strings.Builder
	if len(s.Discarded) > 0 {
		b.WriteString("\nralph: the gate wrote outside the places a gate keeps, into throwaway layers, discarded after it: " +
			strings.Join(s.Discarded, ", "))
		if s.More > 0 {
			fmt.Fprintf(&b, " and %d more", s.More)
		}
	}
	if n := len(s.ReadOnly); n > 0 {
		b.WriteString("\nralph: the gate found these read-only (no throwaway layer could be laid over them): " +
			strings.Join(s.ReadOnly[:min(n, maxReadOnly)], "; "))
		if n > maxReadOnly {
			fmt.Fprintf(&b, " and %d more", n-maxReadOnly)
		}
	}
	return b.String()
}

// SandboxError is a gate command that failed while the sandbox refused
// it something ralph saw itself (a host the proxy denied during that
// run): the sandbox's failure, perhaps, and never the work's to be
// blamed for. Result is what the command did.
type SandboxError struct {
	Result  Result
	Refused []sandbox.Refusal
}

// sandboxTail is how many lines of the gate's output the error shows.
const sandboxTail = 20

// Summary is the error's first line: the gate, what the sandbox refused
// it with the keys that would allow it, and what to do.
func (e *SandboxError) Summary() string {
	what := make([]string, len(e.Refused))
	for i, r := range e.Refused {
		what[i] = r.String()
	}
	return fmt.Sprintf("the gate `%s` %s while the sandbox refused it: %s; that is the sandbox's failure, not the work's: "+
		"allow what the gate needs with the key named, or change the gate, and run again",
		e.Result.Command, howFailed(e.Result), strings.Join(what, "; "))
}

func (e *SandboxError) Error() string {
	var b strings.Builder
	b.WriteString(e.Summary())
	lines := strings.Split(strings.TrimRight(e.Result.Output, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return b.String()
	}
	b.WriteString("\nthe gate's output ended:")
	for _, l := range lines[max(0, len(lines)-sandboxTail):] {
		b.WriteString("\n    " + l)
	}
	return b.String()
}

// SandboxFailed marks the error as the sandbox's for the loop, which
// does not import this package.
func (e *SandboxError) SandboxFailed() {}

func howFailed(res Result) string {
	if res.TimedOut {
		return "timed out after " + res.Duration.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("exited %d after %s", res.ExitCode, res.Duration.Round(time.Millisecond))
}
