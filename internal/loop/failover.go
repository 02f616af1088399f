package loop

import (
	"context"
	"fmt"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/route"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// Route says which agent and model run a task's next attempt, and keeps
// which agents are limited until when (route.Rule).
type Route interface {
	For(t task.Task, failed int, now time.Time) route.Choice
	Limit(agent string, until time.Time)
	Unavailable(agent, why string)
	HasFallback() bool
	Escalates() bool
	// Check says what is wrong with what t names in the plan at path;
	// CheckPlan the same of every open task of p.
	Check(path string, t task.Task) error
	CheckPlan(p *task.Plan) error
	Describe() string
}

// agentNow is the agent of the iteration under way, or about to start.
func (r *runner) agentNow() Agent {
	if r.cur != nil {
		return r.cur
	}
	return r.deps.Agent
}

// modelNow is the model asked of agentNow.
func (r *runner) modelNow() string {
	if r.cur != nil {
		return r.curModel
	}
	return r.opts.Model
}

// routeTask settles who runs t's next attempt (Deps.Route): a stand-in
// while the agent's usage limit lasts, a wait when every agent that could
// run it is limited. ok is false when t names what the config does not
// allow: the task is failed, and the loop picks again.
func (r *runner) routeTask(ctx context.Context, t task.Task) (ok bool, err error) {
	if r.deps.Route == nil {
		return true, nil
	}
	if err := r.deps.Route.Check(r.deps.Plan.Plan().Path, t); err != nil {
		return false, r.failTask(t, err.Error())
	}
	for {
		now := r.deps.Now()
		ch := r.deps.Route.For(r.routeInForce(t), r.st.Tasks[t.ID].Attempts, now)
		if ch.Blocked {
			if err := r.waitForAgents(ctx, t, ch); err != nil {
				return false, err
			}
			continue
		}
		a, known := r.deps.Agents[ch.Agent]
		if ch.StandIn() {
			if why := r.unavailable(ch.Agent, known); why != "" {
				r.deps.Route.Unavailable(ch.Agent, why)
				r.warn("%s cannot stand in for %s: %s", ch.Agent, ch.For, why)
				continue
			}
		} else if !known {
			return false, fmt.Errorf("loop: task %s is for agent %s, which the run did not set up", t.ID, ch.Agent)
		}
		r.switchTo(t, ch, a)
		return true, nil
	}
}

// unavailable says why agent cannot stand in; "" when it can. Each agent
// is asked about once a run.
func (r *runner) unavailable(name string, known bool) string {
	if !known {
		return "the run did not set it up"
	}
	if r.deps.Available == nil {
		return ""
	}
	why, asked := r.available[name]
	if !asked {
		if err := r.deps.Available(name); err != nil {
			why = err.Error()
		}
		r.available[name] = why
	}
	return why
}

// switchTo makes ch the iteration's agent and model, and says so when a
// stand-in takes over or gives back.
func (r *runner) switchTo(t task.Task, ch route.Choice, a Agent) {
	from := r.agentNow().Name()
	if ch.Agent != from && (ch.StandIn() || r.standIn != "") {
		why := ch.Why
		switch {
		case ch.StandIn():
		case ch.Agent == r.standIn:
			why = "back to " + ch.Agent + ": its usage limit has reset"
		default:
			why = ch.Agent + " runs the next task (" + ch.Why + ")"
		}
		e := Event{Kind: EventAgentSwitched, Iteration: r.st.Iteration, Task: &TaskRef{ID: t.ID, Title: t.Title},
			From: from, To: ch.Agent, Message: why}
		if !ch.Until.IsZero() {
			until := ch.Until
			e.Until = &until
		}
		r.emit(e)
	}
	r.cur, r.curModel, r.standIn = a, ch.Model, ""
	if ch.StandIn() {
		r.standIn = ch.For
	}
	r.onNote = ""
	if ch.Agent != r.deps.Agent.Name() || ch.Model != r.opts.Model {
		// Only what differs from the run's agent and model, as the
		// header names them.
		r.onNote = "on " + route.Pair{Agent: ch.Agent, Model: ch.Model}.String()
		if ch.StandIn() || ch.Rung > 0 {
			r.onNote += " (" + ch.Why + ")"
		}
	}
}

// waitForAgents waits for the first reset of the agents that could run
// t, all limited, as long as --max-wait allows.
func (r *runner) waitForAgents(ctx context.Context, t task.Task, ch route.Choice) error {
	now := r.deps.Now()
	until := ch.Until
	if !until.After(now) {
		until = now.Add(backoff(limitBase, limitCap, max(r.limitWaits, 1)))
	}
	if r.opts.MaxWait > 0 && until.Sub(now) > r.opts.MaxWait {
		return fmt.Errorf("%w: every agent that can run %s is limited; the first resets at %s, %s away, beyond --max-wait %s",
			ErrLimit, t.ID, until.Format(time.RFC3339), until.Sub(now).Round(time.Second), r.opts.MaxWait)
	}
	prev := r.st.CurrentTask
	if prev == "" {
		r.st.CurrentTask = t.ID // for the interrupt's history line
	}
	err := r.wait(ctx, until, "usage limit: "+ch.Why)
	r.st.CurrentTask = prev
	return err
}

// failover takes a usage limit of it's agent as the route's: the agent is
// limited until its reset (after waiting fallback-after for it), and the
// next iteration goes to a stand-in, or waits when none is left. It
// reports false when the run has no fallback, and the limit is waited
// out as without one.
func (r *runner) failover(ctx context.Context, it iteration) (bool, error) {
	if r.deps.Route == nil || !r.deps.Route.HasFallback() {
		return false, nil
	}
	now := r.deps.Now()
	until := it.result.ResetAt
	if !until.After(now) {
		until = now.Add(backoff(limitBase, limitCap, r.limitWaits+1))
	}
	if fa := r.opts.FallbackAfter; fa > 0 {
		if until.Sub(now) <= fa {
			return false, nil // it resets sooner than fallback-after: wait for it
		}
		if err := r.wait(ctx, now.Add(fa), fmt.Sprintf("usage limit of %s (fallback-after %s first): %s", it.agent, fa, it.errText)); err != nil {
			return true, err
		}
	}
	r.limitWaits++
	r.deps.Route.Limit(it.agent, until)
	return true, nil
}

// quotaFailover takes a protected window past its line as a usage limit
// of its agent, when the run has a fallback: true when the route knows,
// and the loop should ask it again.
func (r *runner) quotaFailover(agentName string, q state.QuotaWindow) bool {
	if r.deps.Route == nil || !r.deps.Route.HasFallback() || q.ResetsAt == nil {
		return false
	}
	r.deps.Route.Limit(agentName, *q.ResetsAt)
	return true
}

// failTask fails t without an agent run: what it names is not allowed.
func (r *runner) failTask(t task.Task, why string) error {
	ts := r.st.Tasks[t.ID]
	ts.Failed = true
	ts.LastError = why
	r.st.Tasks[t.ID] = ts
	r.st.Totals.TasksFailed++
	if err := r.deps.Plan.SetStatus(t.ID, task.StatusFailed); err != nil {
		r.warn("could not record %s as failed in the plan: %v", t.ID, err)
	}
	r.emit(Event{Kind: EventTaskFailed, Iteration: r.st.Iteration, Task: &TaskRef{ID: t.ID, Title: t.Title},
		Message: fmt.Sprintf("failed after %s: %s", words.Count(ts.Attempts, "attempt"), why)})
	return r.save()
}

// routeNote says in the run's header which agents and models run the
// tasks, when a route decides it.
func (r *runner) routeNote() string {
	if rt := r.deps.Route; rt == nil || !rt.HasFallback() && !rt.Escalates() {
		return "" // the run's agent runs every task its plan does not give another
	}
	return ", route " + r.deps.Route.Describe()
}

// reviewerNow is the reviewer of the claim under review, or about to be.
func (r *runner) reviewerNow() Agent {
	if r.revCur != nil {
		return r.revCur
	}
	return r.deps.Reviewer
}

// reviewModelNow is the model asked of reviewerNow.
func (r *runner) reviewModelNow() string {
	if r.revCur != nil {
		return r.revModel
	}
	return r.opts.Review.Model
}

// routeReviewer settles who reviews t's claim (Deps.ReviewRoute; an
// empty t: the end review's round): the
// reviewer, or a stand-in of review.fallback while its limit lasts. When
// every one is limited it leaves the reviewer as it is: the review waits
// for its reset (review).
func (r *runner) routeReviewer(t task.Task) {
	if r.deps.ReviewRoute == nil {
		return
	}
	for {
		ch := r.deps.ReviewRoute.For(t, 0, r.deps.Now())
		if ch.Blocked {
			return
		}
		a, known := r.deps.Reviewers[ch.Agent]
		if ch.StandIn() {
			if why := r.unavailable(ch.Agent, known); why != "" {
				r.deps.ReviewRoute.Unavailable(ch.Agent, why)
				r.warn("%s cannot stand in for the reviewer %s: %s", ch.Agent, ch.For, why)
				continue
			}
		} else if !known {
			return
		}
		from := r.reviewerNow().Name()
		if ch.Agent != from && (ch.StandIn() || r.revStandIn) {
			why := "reviewer: " + ch.Why
			if !ch.StandIn() {
				why = "reviewer back to " + ch.Agent + ": its usage limit has reset"
			}
			e := Event{Kind: EventAgentSwitched, Iteration: r.st.Iteration, From: from, To: ch.Agent, Message: why}
			if t.ID != "" { // "": the end review, of no one task
				e.Task = &TaskRef{ID: t.ID, Title: t.Title}
			}
			if !ch.Until.IsZero() {
				until := ch.Until
				e.Until = &until
			}
			r.emit(e)
		}
		r.revCur, r.revModel, r.revStandIn = a, ch.Model, ch.StandIn()
		return
	}
}

// reviewFailover takes a reviewer's usage limit as ReviewRoute's: true
// when a stand-in reviews now, false when the review is to wait for the
// reset as without a fallback.
func (r *runner) reviewFailover(t task.Task, res agent.Result) bool {
	if r.deps.ReviewRoute == nil || !r.deps.ReviewRoute.HasFallback() {
		return false
	}
	now := r.deps.Now()
	until := res.ResetAt
	if !until.After(now) {
		until = now.Add(backoff(limitBase, limitCap, r.limitWaits+1))
	}
	limited := r.reviewerNow().Name()
	r.deps.ReviewRoute.Limit(limited, until)
	r.routeReviewer(t)
	return r.reviewerNow().Name() != limited
}
