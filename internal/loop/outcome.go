package loop

import (
	"errors"
	"regexp"
	"strings"
)

// The outcomes of an iteration, exactly one each, recorded in history.
const (
	OutcomeTaskDone       = "task_done"
	OutcomePlanDone       = "plan_done"
	OutcomeNoMarker       = "no_marker"
	OutcomeTaskFailed     = "task_failed"
	OutcomePrematureClaim = "premature_claim"
	OutcomeGateFailed     = "gate_failed"
	// OutcomeGuardRejected: with guard = "strict", the tamper guard found
	// changes that weaken the checks in the task's diff.
	OutcomeGuardRejected = "guard_rejected"
	// OutcomeReviewRejected: the reviewer said REVISE.
	OutcomeReviewRejected = "review_rejected"
	// OutcomeReviewFailed: no reviewer gave a verdict within
	// review.max-attempts (no marker, timeout, crash).
	OutcomeReviewFailed = "review_failed"
	// OutcomeEndReview: a review round at the end of the run, whose
	// findings become tasks (endreview.go). Not an agent's iteration on
	// a task: it has no task and is never an attempt.
	OutcomeEndReview      = "end_review"
	OutcomeTimeout        = "timeout"
	OutcomeIdleTimeout    = "idle_timeout"
	OutcomeRateLimited    = "rate_limited"
	OutcomeTransientError = "transient_error"
	OutcomeFatalError     = "fatal_error"
	OutcomeInterrupted    = "interrupted"
)

// CountsAsAttempt says whether an outcome uses up one of the task's
// attempts. Waiting out a limit or a transient error is not the task's
// fault, so those do not count.
func CountsAsAttempt(outcome string) bool {
	switch outcome {
	case OutcomeNoMarker, OutcomeTaskFailed, OutcomeGateFailed, OutcomeTimeout, OutcomeIdleTimeout,
		OutcomeGuardRejected, OutcomeReviewRejected, OutcomeReviewFailed:
		return true
	}
	return false
}

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
