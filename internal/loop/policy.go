package loop

import (
	"context"
	"fmt"
	"time"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// Bounds of the waiting policies.
const (
	// maxTransientRetries consecutive transient errors are retried before
	// the next one counts as a failed attempt.
	maxTransientRetries = 5
	transientBase       = 2 * time.Second
	transientCap        = 2 * time.Minute
	// Without a reset time, usage limits back off from limitBase to limitCap.
	limitBase = time.Minute
	limitCap  = 30 * time.Minute
	// limitJitter spreads retries after a reset so that many runs sharing an
	// account do not all start in the same second.
	limitJitter = 30 * time.Second
)

// apply carries out the policy for one finished iteration: attempts,
// failed tasks, waits and the stuck breaker.
func (r *runner) apply(ctx context.Context, t task.Task, it iteration) error {
	r.noteQuota(it.agent, it.result.Quota)
	switch it.outcome {
	case state.OutcomeRateLimited:
		r.transient = 0
		if switched, err := r.failover(ctx, it); switched || err != nil {
			return err
		}
		return r.waitForLimit(ctx, it)
	case state.OutcomeTransientError:
		r.transient++
		if r.transient <= maxTransientRetries {
			d := backoff(transientBase, transientCap, r.transient) + r.deps.Jitter(transientBase)
			return r.wait(ctx, r.deps.Now().Add(d), fmt.Sprintf("transient error (%d/%d): %s", r.transient, maxTransientRetries, it.errText))
		}
		// Out of retries: from here on it is a failed attempt like any other.
		r.transient = 0
		if err := r.countAttempt(t, it); err != nil {
			return err
		}
		return r.checkStuck(it)
	case state.OutcomeCommitRefused:
		r.transient, r.limitWaits = 0, 0
		return r.refusedAttempt(t, it)
	case state.OutcomeNeedsAnswer:
		// Asking is progress of a kind: neither an attempt nor a step
		// towards the breaker.
		r.transient, r.limitWaits, r.noProgress = 0, 0, 0
		return r.ask(t, it)
	default:
		// The other values need nothing here.
	}
	r.transient = 0
	r.limitWaits = 0
	if it.outcome.CountsAsAttempt() {
		if err := r.countAttempt(t, it); err != nil {
			return err
		}
	}
	return r.checkStuck(it)
}

// countAttempt records a failed attempt of t and fails the task when it
// has used them all.
func (r *runner) countAttempt(t task.Task, it iteration) error {
	ts := r.st.Tasks[t.ID]
	ts.Attempts++
	ts.LastError = it.errText
	r.noteAttempt(t.ID, attemptNote{Iteration: r.st.Iteration, Outcome: string(it.outcome), Error: it.errText, Output: it.output})
	if ts.Attempts >= r.opts.MaxAttempts {
		ts.Failed = true
		r.releaseHeld([]string{t.ID}) // its work stays in the tree, as a failed task's does
		r.st.Totals.TasksFailed++
		// Formats without a failed state keep the file as it is; the state
		// remembers.
		if err := r.deps.Plan.SetStatus(t.ID, task.StatusFailed); err != nil {
			r.warn("could not record %s as failed in the plan: %v", t.ID, err)
		}
		r.emit(Event{Kind: EventTaskFailed, Iteration: r.st.Iteration, Task: &TaskRef{ID: t.ID, Title: t.Title},
			Message: fmt.Sprintf("failed after %s; last: %s", words.Count(ts.Attempts, "attempt"), it.errText)})
	}
	r.st.Tasks[t.ID] = ts
	return r.save()
}

// checkStuck trips the breaker after too many iterations without progress
// or with the same error.
func (r *runner) checkStuck(it iteration) error {
	if r.opts.StuckThreshold <= 0 {
		return nil
	}
	if it.progress {
		r.noProgress = 0
	} else if r.deps.Repo != nil {
		// Without version control, "no file changed" cannot be told.
		r.noProgress++
	}
	// Only real errors count as "the same error": an iteration that merely
	// ended without a marker, or ran out of time (perhaps while making
	// progress), is the no-progress rule's business.
	errText := it.errText
	switch it.outcome {
	case state.OutcomeNoMarker, state.OutcomePrematureClaim, state.OutcomeTimeout, state.OutcomeIdleTimeout:
		errText = ""
	default:
		// The other values need nothing here.
	}
	if norm := normalizeError(errText); norm != "" && norm == r.lastError {
		r.sameError++
	} else {
		r.lastError, r.sameError = norm, 1
		if norm == "" {
			r.sameError = 0
		}
	}
	switch {
	case r.sameError >= r.opts.StuckThreshold:
		return fmt.Errorf("%w: the same error %d times in a row (last at iteration %d): %s",
			ErrStuck, r.sameError, r.st.Iteration, it.errText)
	case r.noProgress >= r.opts.StuckThreshold:
		return fmt.Errorf("%w: %d iterations in a row (%d to %d) changed no file and finished no task; last outcome %s: %s",
			ErrStuck, r.noProgress, r.st.Iteration-r.noProgress+1, r.st.Iteration, it.outcome, it.errText)
	}
	return nil
}

// waitForLimit waits until a usage limit resets, or backs off when the
// agent did not say when.
func (r *runner) waitForLimit(ctx context.Context, it iteration) error {
	r.limitWaits++
	until, err := r.limitUntil(it.result.ResetAt, it.errText)
	if err != nil {
		return err
	}
	return r.wait(ctx, until, "usage limit: "+it.errText)
}

// wait sleeps until the given time, recording it in state.json.
func (r *runner) wait(ctx context.Context, until time.Time, why string) error {
	r.st.Status = state.StatusWaiting
	r.st.WaitingUntil = &until
	if err := r.save(); err != nil {
		return err
	}
	r.emit(Event{Kind: EventWaiting, Iteration: r.st.Iteration, Until: &until, Message: why})
	if err := r.deps.Sleep(ctx, until.Sub(r.deps.Now())); err != nil {
		return r.interruptedBetween(task.Task{ID: r.st.CurrentTask})
	}
	r.st.Status = state.StatusRunning
	r.st.WaitingUntil = nil
	r.treeSeen = false
	return r.save()
}

// backoff is base·2^(n-1), capped.
func backoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
