package state

// Outcome is how one iteration ended, exactly one each, recorded in
// history (Record.Outcome). The loop decides it; history, status, the
// renderers and the notifier read it.
type Outcome string

// The outcomes of an iteration, exactly one each, recorded in history.
const (
	OutcomeTaskDone       Outcome = "task_done"
	OutcomePlanDone       Outcome = "plan_done"
	OutcomeNoMarker       Outcome = "no_marker"
	OutcomeTaskFailed     Outcome = "task_failed"
	OutcomePrematureClaim Outcome = "premature_claim"
	OutcomeGateFailed     Outcome = "gate_failed"
	// OutcomeSandboxFailed: a quality gate failed while the sandbox
	// refused it something ralph saw itself (a host its proxy refused
	// during that gate run): the sandbox's failure, not the work's. Not
	// an attempt; the task stays open and the run stops, exit 1, naming
	// what was refused and the key that would allow it.
	OutcomeSandboxFailed Outcome = "sandbox_failed"
	// OutcomeGuardRejected: with guard = "strict", the tamper guard found
	// changes that weaken the checks in the task's diff.
	OutcomeGuardRejected Outcome = "guard_rejected"
	// OutcomeReviewRejected: the reviewer said REVISE.
	OutcomeReviewRejected Outcome = "review_rejected"
	// OutcomeReviewFailed: no reviewer gave a verdict within
	// review.max-attempts (no marker, timeout, crash).
	OutcomeReviewFailed Outcome = "review_failed"
	// OutcomeCommitRefused: the task passed its checks, but git refused
	// to commit files the agent left in the tree (a path git keeps for
	// itself, a .gitmodules link): the task is held, open and first in
	// line, its work uncommitted, and its next attempt is told what git
	// said. An attempt, which never fails the task (its files are still
	// in the tree); max-attempts of them in a run stop it.
	OutcomeCommitRefused Outcome = "commit_refused"
	// OutcomeEndReview: a review round at the end of the run, whose
	// findings become tasks. Not an agent's iteration on a task: it has
	// no task and is never an attempt.
	OutcomeEndReview      Outcome = "end_review"
	OutcomeTimeout        Outcome = "timeout"
	OutcomeIdleTimeout    Outcome = "idle_timeout"
	OutcomeRateLimited    Outcome = "rate_limited"
	OutcomeTransientError Outcome = "transient_error"
	OutcomeFatalError     Outcome = "fatal_error"
	OutcomeInterrupted    Outcome = "interrupted"
	// OutcomeNeedsAnswer: the agent ended with <promise>QUESTION</promise>
	// and a question; the task waits for a human's answer (not an
	// attempt: the agent did what it should).
	OutcomeNeedsAnswer Outcome = "needs_answer"
)

// CountsAsAttempt says whether the outcome uses up one of the task's
// attempts. Waiting out a limit or a transient error is not the task's
// fault, so those do not count.
func (o Outcome) CountsAsAttempt() bool {
	switch o {
	case OutcomeNoMarker, OutcomeTaskFailed, OutcomeGateFailed, OutcomeTimeout, OutcomeIdleTimeout,
		OutcomeGuardRejected, OutcomeReviewRejected, OutcomeReviewFailed, OutcomeCommitRefused:
		return true
	default:
		// The other values need nothing here.
	}
	return false
}
