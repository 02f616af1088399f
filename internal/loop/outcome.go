package loop

import (
	"errors"
	"regexp"
	"strings"
)

// Sentinel errors the CLI maps to exit codes.
var (
	// ErrLimit: a limit (iterations, budget, wait) stopped the run with
	// tasks still open. Exit 3.
	ErrLimit = errors.New("limit reached with tasks open")
	// ErrStuck: the run made no progress, or nothing is left but failed
	// tasks. Exit 4.
	ErrStuck = errors.New("stuck")
	// ErrInterrupted: Ctrl-C or SIGTERM. Exit 130.
	ErrInterrupted = errors.New("interrupted")
	// ErrFatal: the agent cannot run at all (missing, auth, bad flags). Exit 1.
	ErrFatal = errors.New("fatal agent error")
	// ErrNotCommitted: a task passed its checks but its commit failed (a
	// hook refused it, the disk is full, another git holds the lock): its
	// acceptance waits in state, and the next run commits it first. Exit 1.
	ErrNotCommitted = errors.New("accepted but not committed")
	// ErrCommitRefused: git refused to commit a task's work max-attempts
	// times in a row (held.go); the task stays open, its work in the
	// tree. Exit 1.
	ErrCommitRefused = errors.New("git refused the work")
)

var (
	reHex    = regexp.MustCompile(`\b[0-9a-fA-F]{8,}\b|\b[0-9a-f]{8}-[0-9a-f-]{27}\b`)
	reNumber = regexp.MustCompile(`\d+`)
	reSpace  = regexp.MustCompile(`\s+`)
)

// normalizeError reduces an error text to its shape, so that the same
// failure with other ids, times or counts is recognised as repeated.
func normalizeError(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) > 500 {
		s = s[:500]
	}
	s = reHex.ReplaceAllString(s, "#")
	s = reNumber.ReplaceAllString(s, "#")
	return reSpace.ReplaceAllString(s, " ")
}
