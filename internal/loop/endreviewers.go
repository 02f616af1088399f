package loop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/completion"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// The end review's reviewers run at once, each on a goroutine of its own
// that touches only its endReviewer and the run's options; the round's
// coordinator (endreview.go) shows what they did, waits out their usage
// limits and puts back what they changed.

// endReviewer is one reviewer of a round, with its focus.
type endReviewer struct {
	focus, text string
	ev          *state.ReviewEvidence
	verdict     completion.Verdict
	// done: a verdict, or no attempts left.
	done bool
	// limit is the usage limit that stopped its last run, when one did.
	limit *agent.Result
	// warnings say what went wrong on the way, for the coordinator to
	// show (reviewers run on goroutines of their own, events do not).
	warnings []string
}

// roundStop is what ended a round before every reviewer answered.
type roundStop struct {
	outcome state.Outcome
	errText string
	err     error
}

// askReviewers runs the round's reviewers at once until each has a
// verdict or has used its attempts, and puts back what they changed in
// the working tree (tree: before they ran). Usage limits are waited out
// together, then the limited reviewers run again; transient errors are
// retried by each.
func (r *runner) askReviewers(ctx context.Context, reviewers []*endReviewer, tree string) *roundStop {
	_, outPath, err := r.deps.Store.IterationFiles(r.st.RunID, r.st.Iteration)
	if err != nil {
		return &roundStop{outcome: state.OutcomeEndReview, errText: err.Error(), err: err}
	}
	prefix := strings.TrimSuffix(outPath, ".out") + ".review-"
	var files atomic.Int64
	for {
		var wg sync.WaitGroup
		for _, rv := range reviewers {
			if rv.done {
				continue
			}
			rv.limit = nil
			wg.Go(func() { r.askReviewer(ctx, rv, prefix, &files) })
		}
		wg.Wait()
		r.putBack(ctx, tree)
		if ctx.Err() != nil {
			return &roundStop{outcome: state.OutcomeInterrupted, errText: "interrupted during the end review", err: ErrInterrupted}
		}
		var limited *agent.Result
		for _, rv := range reviewers {
			if rv.limit != nil && (limited == nil || rv.limit.ResetAt.After(limited.ResetAt)) {
				limited = rv.limit
			}
		}
		if limited == nil {
			return nil
		}
		// Between rounds no reviewer runs: the reviewer may change.
		if r.reviewFailover(task.Task{}, *limited) {
			for _, rv := range reviewers {
				if rv.limit != nil {
					rv.ev.Agent, rv.ev.Model = r.reviewerNow().Name(), r.reviewModelNow()
				}
			}
			continue
		}
		r.limitWaits++
		until, err := r.limitUntil(limited.ResetAt, limited.ErrorText)
		if err != nil {
			return &roundStop{outcome: state.OutcomeRateLimited, errText: "end reviewer: " + limited.ErrorText, err: err}
		}
		if err := r.waitInIteration(ctx, until, "end reviewer usage limit: "+limited.ErrorText); err != nil {
			return &roundStop{outcome: state.OutcomeInterrupted, errText: "interrupted while waiting for the end reviewers' usage limit", err: ErrInterrupted}
		}
	}
}

// askReviewer runs one reviewer, on a goroutine of its own: until a
// verdict, its attempts are used, a usage limit (left to the
// coordinator), or an interrupt. Transient errors are retried after a
// backoff and use up no attempt. It touches only rv and the run's
// options.
func (r *runner) askReviewer(ctx context.Context, rv *endReviewer, prefix string, files *atomic.Int64) {
	maxAttempts := r.opts.Review.MaxAttempts
	if maxAttempts < 1 {
		maxAttempts = 2
	}
	transient := 0
	for {
		started := time.Now()
		res, err := r.runReviewerAt(ctx, rv.text, fmt.Sprintf("%s%d", prefix, files.Add(1)))
		ev := rv.ev
		ev.DurationMS += time.Since(started).Milliseconds()
		ev.InputTokens += res.Usage.InputTokens
		ev.OutputTokens += res.Usage.OutputTokens
		ev.CacheReadTokens += res.Usage.CacheReadTokens
		ev.CacheWriteTokens += res.Usage.CacheWriteTokens
		ev.CostUSD += res.CostUSD
		ev.CostSource = state.CombineCostSource(ev.CostSource, costSource(res))
		if res.Interrupted || ctx.Err() != nil {
			ev.Verdict, ev.Error = verdictFailed, "interrupted"
			return
		}
		if err == nil && res.IsError {
			switch res.ErrorKind {
			case agent.ErrorUsageLimit, agent.ErrorRateLimit:
				rv.limit = &res
				return
			case agent.ErrorTransient:
				if transient < maxTransientRetries {
					transient++
					d := backoff(transientBase, transientCap, transient) + r.deps.Jitter(transientBase)
					rv.warnings = append(rv.warnings, fmt.Sprintf("end reviewer (%s): transient error (%d/%d), retried after %s: %s",
						rv.focus, transient, maxTransientRetries, d.Round(time.Second), res.ErrorText))
					if r.deps.Sleep(ctx, d) != nil {
						ev.Verdict, ev.Error = verdictFailed, "interrupted"
						return
					}
					continue
				}
			default:
				// The other values need nothing here.
			}
		}
		transient = 0
		ev.Attempts++
		v := r.verdict(rv.text, res, err)
		if v.Marker != completion.None {
			rv.verdict, rv.done = v, true
			ev.Verdict, ev.Findings, ev.Error = string(v.Marker), v.Findings, ""
			return
		}
		ev.Error = reviewFailure(res, err)
		if ev.Attempts >= maxAttempts {
			ev.Verdict, rv.done = verdictFailed, true
			rv.warnings = append(rv.warnings, fmt.Sprintf("end reviewer (%s): no verdict in %s; last: %s", rv.focus, words.Count(ev.Attempts, "attempt"), ev.Error))
			return
		}
		rv.warnings = append(rv.warnings, fmt.Sprintf("end reviewer (%s): no verdict (attempt %d/%d): %s; asking again",
			rv.focus, ev.Attempts, maxAttempts, ev.Error))
	}
}
