package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/completion"
	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// When reviewers run (review.when). ReviewAuto reviews each done claim
// of a run that has no gate able to reject one (autoReviews), so that
// something other than the agent checks every task.
const (
	ReviewAuto = "auto"
	ReviewOff  = "off"
	ReviewTask = "task"
	ReviewEnd  = "end"
	ReviewBoth = "both"
)

// ReviewOptions configure the reviewers: a fresh agent process that reads
// a done claim (the task, its diff, the gates' results and the guard's
// findings) and answers SHIP or REVISE, and the review phase at the end
// of a run (endreview.go).
type ReviewOptions struct {
	// When is ReviewOff (""), ReviewAuto, ReviewTask, ReviewEnd or
	// ReviewBoth.
	When string
	// Model is the reviewer's model; the reviewer agent is Deps.Reviewer.
	Model string
	// Prompt is the review template's text, PromptName its file name for
	// errors; "" is the embedded one.
	Prompt, PromptName string
	// MaxAttempts bounds the reviewer runs of one claim that give no
	// verdict (no marker, timeout, crash); 0 means 2.
	MaxAttempts int
	// Timeout bounds one reviewer run; 0 is the run's --timeout.
	Timeout time.Duration
	// MaxDiffBytes bounds the diff a reviewer is shown; 0 means
	// DefaultMaxDiffBytes.
	MaxDiffBytes int
	// Focus are the end-of-run reviewers' focuses, one reviewer each;
	// Rounds bounds the end review's rounds (endreview.go).
	Focus  []string
	Rounds int
}

// DefaultMaxDiffBytes bounds the diff in a review prompt.
const DefaultMaxDiffBytes = 96 << 10

// The verdicts recorded besides SHIP and REVISE.
const verdictFailed = "failed"

// reviewsTasks reports whether each done claim goes to a reviewer.
func (r *runner) reviewsTasks() bool {
	w := r.opts.Review.When
	return r.deps.Reviewer != nil && (w == ReviewTask || w == ReviewBoth || w == ReviewAuto && r.autoReview)
}

// decideReview settles review.when = "auto" for the run, once its
// baseline has made the failing gates advisory: each task is reviewed
// when no gate can reject one. The run's header says so, as the run's
// settings go (reviewNote).
func (r *runner) decideReview() {
	r.autoReview = r.opts.Review.When == ReviewAuto && !r.gateCanReject()
}

// gateCanReject reports whether a gate of the run can reject a task: a
// [gates] command the baseline did not make advisory, or one of the
// plan's Validation Commands (those of the next task: every task of a
// plan has the same). A gate that is no list of commands may reject
// anything.
func (r *runner) gateCanReject() bool {
	var cg CommandGate
	switch g := r.deps.Gate.(type) {
	case nil:
		return false
	case *checkedGate:
		cg = g.gates
	case CommandGate:
		cg = g
	default:
		return true
	}
	cmds := cg.ProjectCommands()
	if t, ok := r.next(); ok {
		cmds = append(slices.Clone(cmds), cg.TaskCommands(t)...)
	}
	return slices.ContainsFunc(cmds, func(c string) bool { return r.gates == nil || !r.gates.advisory[c] })
}

// reviewNote says in the run's header who reviews each task, and, when
// nothing but the agent checks one, that tasks are taken on its word.
func (r *runner) reviewNote() string {
	if r.reviewsTasks() {
		who := reviewerName(r.reviewerNow().Name(), r.reviewModelNow())
		if r.reviewModelNow() == "" {
			who += " (its default model)"
		}
		note := ", reviewer " + who + " on each task"
		if r.autoReview {
			note += " (review.when = auto: no gate can reject a task)"
		}
		return note
	}
	if r.gateCanReject() {
		return ""
	}
	return " · no gates and no reviewer: tasks are accepted on the agent's word"
}

// reviewClaim asks the reviewer about a claim that passed the gates and
// the guard. It returns true on SHIP; otherwise c says why not:
// review_rejected with the findings for the next prompt, review_failed
// when no reviewer answered within review.max-attempts, or what stopped
// the review (interrupted, a usage limit beyond --max-wait).
func (r *runner) reviewClaim(ctx context.Context, c *classified, tasks []task.Task, cl *claim, guardReport string) bool {
	data := prompt.ReviewData{Scope: prompt.ReviewScopeTask, Plan: r.promptPlan(), Gates: gatesText(c.ev.gates), Guard: guardReport}
	for _, t := range tasks {
		data.Tasks = append(data.Tasks, promptTask(t))
	}
	data.Diff, data.DiffNote = r.boundDiff(cl)
	text, err := prompt.RenderReview(r.opts.Review.PromptName, r.opts.Review.Prompt, data)
	if err != nil {
		c.outcome, c.errText = state.OutcomeReviewFailed, "the review prompt: "+err.Error()
		c.ev.review = &state.ReviewEvidence{Verdict: verdictFailed, Agent: r.reviewerNow().Name(), Model: r.reviewModelNow(), Error: c.errText}
		return false
	}
	r.routeReviewer(tasks[0])
	r.emit(Event{Kind: EventReview, Iteration: r.st.Iteration, Task: &TaskRef{ID: tasks[0].ID, Title: tasks[0].Title},
		Message: "reviewing with " + reviewerName(r.reviewerNow().Name(), r.reviewModelNow())})
	v, ev, stop := r.review(ctx, tasks[0], text, r.toTree(ctx, cl))
	c.ev.review = ev
	switch {
	case stop != nil:
		c.outcome, c.errText = stop.outcome, stop.errText
		c.result.ResetAt = stop.resetAt
		return false
	case v.Marker == completion.Ship:
		return true
	case v.Marker == completion.Revise:
		c.outcome = state.OutcomeReviewRejected
		c.errText = "the reviewer asked for changes"
		if len(v.Findings) > 0 {
			c.errText += ": " + v.Findings[0]
		}
		c.output = "The reviewer (" + ev.By() + ") asked for these changes:\n" + numbered(v.Findings)
		if guardReport != "" {
			c.output += "\nThe tamper guard reported:\n" + guardReport
		}
		return false
	}
	c.outcome = state.OutcomeReviewFailed
	c.errText = fmt.Sprintf("no verdict from the reviewer in %s; last: %s", words.Count(ev.Attempts, "attempt"), ev.Error)
	return false
}

// reviewStop is what ended a review before a verdict: an interrupt, or a
// usage limit the run cannot wait for.
type reviewStop struct {
	outcome state.Outcome
	errText string
	resetAt time.Time
}

// review runs the reviewer on text until it gives a verdict or has used
// its attempts, and puts back what it changed in the working tree (tree:
// the tree before it ran; "" when there is none to go back to). Usage
// limits are waited out and transient errors retried as for the worker;
// neither uses up an attempt.
func (r *runner) review(ctx context.Context, t task.Task, text, tree string) (completion.Verdict, *state.ReviewEvidence, *reviewStop) {
	ev := &state.ReviewEvidence{Agent: r.reviewerNow().Name(), Model: r.reviewModelNow()}
	maxAttempts := r.opts.Review.MaxAttempts
	if maxAttempts < 1 {
		maxAttempts = 2
	}
	transient := 0
	for {
		started := r.deps.Now()
		res, err := r.runReviewer(ctx, text)
		ev.DurationMS += r.deps.Now().Sub(started).Milliseconds()
		ev.InputTokens += res.Usage.InputTokens
		ev.OutputTokens += res.Usage.OutputTokens
		ev.CacheReadTokens += res.Usage.CacheReadTokens
		ev.CacheWriteTokens += res.Usage.CacheWriteTokens
		ev.CostUSD += res.CostUSD
		ev.CostSource = state.CombineCostSource(ev.CostSource, costSource(res))
		r.noteQuota(r.reviewerNow().Name(), res.Quota) // the reviewer may share the worker's account
		r.putBack(ctx, tree)
		if res.Interrupted || ctx.Err() != nil {
			ev.Verdict, ev.Error = verdictFailed, "interrupted"
			return completion.Verdict{}, ev, &reviewStop{outcome: state.OutcomeInterrupted, errText: "interrupted during the review"}
		}
		if err == nil && res.IsError {
			switch res.ErrorKind {
			case agent.ErrorUsageLimit, agent.ErrorRateLimit:
				if r.reviewFailover(t, res) {
					ev.Agent, ev.Model = r.reviewerNow().Name(), r.reviewModelNow()
					continue
				}
				r.limitWaits++
				until, lerr := r.limitUntil(res.ResetAt, res.ErrorText)
				if lerr != nil {
					ev.Verdict, ev.Error = verdictFailed, "usage limit: "+res.ErrorText
					return completion.Verdict{}, ev, &reviewStop{outcome: state.OutcomeRateLimited, errText: "reviewer: " + res.ErrorText, resetAt: res.ResetAt}
				}
				if werr := r.waitInIteration(ctx, until, "reviewer usage limit: "+res.ErrorText); werr != nil {
					ev.Verdict, ev.Error = verdictFailed, "interrupted"
					return completion.Verdict{}, ev, &reviewStop{outcome: state.OutcomeInterrupted, errText: "interrupted while waiting for the reviewer's usage limit"}
				}
				continue
			case agent.ErrorTransient:
				if transient < maxTransientRetries {
					transient++
					d := backoff(transientBase, transientCap, transient) + r.deps.Jitter(transientBase)
					if werr := r.waitInIteration(ctx, r.deps.Now().Add(d), fmt.Sprintf("reviewer transient error (%d/%d): %s", transient, maxTransientRetries, res.ErrorText)); werr != nil {
						ev.Verdict, ev.Error = verdictFailed, "interrupted"
						return completion.Verdict{}, ev, &reviewStop{outcome: state.OutcomeInterrupted, errText: "interrupted while backing off after a reviewer error"}
					}
					continue
				}
			default:
				// The other values need nothing here.
			}
		}
		transient = 0
		ev.Attempts++
		v := r.verdict(text, res, err)
		if v.Marker != completion.None {
			ev.Verdict, ev.Findings, ev.Error = string(v.Marker), v.Findings, ""
			return v, ev, nil
		}
		ev.Error = reviewFailure(res, err)
		if ev.Attempts >= maxAttempts {
			ev.Verdict = verdictFailed
			return completion.Verdict{}, ev, nil
		}
		r.warn("the reviewer gave no verdict (attempt %d/%d): %s; asking again", ev.Attempts, maxAttempts, ev.Error)
	}
}

// verdict reads the reviewer's verdict, with the run's completion
// strategies, from its own final message.
func (r *runner) verdict(text string, res agent.Result, err error) completion.Verdict {
	if err != nil || res.TimedOut || res.IdleTimedOut {
		return completion.Verdict{}
	}
	in := completion.Input{Final: res.FinalText, Messages: res.Messages, ExitCode: res.ExitCode}
	if res.RawText {
		in.Prompt = text
	}
	return completion.DetectVerdict(in, r.opts.Strategies)
}

// reviewFailure says why a reviewer run gave no verdict.
func reviewFailure(res agent.Result, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case res.TimedOut:
		return "the reviewer ran past its timeout"
	case res.IdleTimedOut:
		return "the reviewer was silent past --idle-timeout"
	case res.IsError:
		return firstNonEmpty(res.ErrorText, "the reviewer ended in an error")
	case res.ExitCode != 0:
		return fmt.Sprintf("the reviewer exited %d without a verdict", res.ExitCode)
	}
	return "the reviewer ended without <promise>SHIP</promise> or <promise>REVISE</promise>"
}

// runReviewer runs one reviewer process, its prompt and output kept beside
// the iteration's (iter-NNN.review-K.prompt.md, .out).
func (r *runner) runReviewer(ctx context.Context, text string) (agent.Result, error) {
	if r.reviewIter != r.st.Iteration {
		r.reviewIter, r.reviews = r.st.Iteration, 0
	}
	r.reviews++
	_, outPath, err := r.deps.Store.IterationFiles(r.st.RunID, r.st.Iteration)
	if err != nil {
		return agent.Result{}, err
	}
	return r.runReviewerAt(ctx, text, strings.TrimSuffix(outPath, ".out")+fmt.Sprintf(".review-%d", r.reviews))
}

// runReviewerAt runs one reviewer process, its prompt and output in
// base.prompt.md and base.out. It reads only the run's options: the end
// review runs several at once (endreviewers.go).
func (r *runner) runReviewerAt(ctx context.Context, text, base string) (agent.Result, error) {
	if err := os.WriteFile(base+".prompt.md", []byte(text), 0o644); err != nil {
		return agent.Result{}, fmt.Errorf("write review prompt: %w", err)
	}
	out, err := os.Create(base + ".out")
	if err != nil {
		return agent.Result{}, fmt.Errorf("create review transcript: %w", err)
	}
	timeout := r.opts.Review.Timeout
	if timeout == 0 {
		timeout = r.opts.Timeout
	}
	req := agent.Request{Prompt: text, PromptFile: base + ".prompt.md", Dir: r.opts.Dir, Model: r.reviewModelNow(),
		Env: r.opts.Env, Timeout: timeout, IdleTimeout: r.opts.IdleTimeout, Grace: r.opts.Grace}
	endWatch := r.watchNetwork(nil)
	res, runErr := r.reviewerNow().Run(ctx, req, agent.Sink{Transcript: out, Emit: func(agent.Event) {}})
	// The hosts the reviewer reached, after its output as an agent's.
	for _, line := range endWatch() {
		_, _ = io.WriteString(out, line+"\n")
	}
	if cerr := out.Close(); cerr != nil && runErr == nil {
		runErr = fmt.Errorf("write review transcript: %w", cerr)
	}
	return res, runErr
}

// putBack restores the working tree a reviewer changed: it was told not
// to edit files, and what it changed is not the task's work.
func (r *runner) putBack(ctx context.Context, tree string) {
	if tree == "" || r.deps.Trees == nil {
		return
	}
	files, err := r.deps.Trees.RestoreTree(context.WithoutCancel(ctx), tree)
	switch {
	case err != nil:
		r.warn("could not put back what the reviewer changed: %v", err)
	case len(files) > 0:
		r.warn("the reviewer changed %s; put back (reviewers must not edit files)", strings.Join(files, ", "))
	}
}

// boundDiff is the claim's diff as a reviewer sees it: at most
// review's MaxDiffBytes, cut at a line, with a note of what was left out.
func (r *runner) boundDiff(cl *claim) (diff, note string) {
	if cl.err != nil {
		return "", cl.err.Error()
	}
	if len(cl.diff) == 0 {
		return "", "the working tree is the same as when the task started"
	}
	limit := r.opts.Review.MaxDiffBytes
	if limit <= 0 {
		limit = DefaultMaxDiffBytes
	}
	if len(cl.diff) <= limit {
		return string(cl.diff), ""
	}
	cut := string(cl.diff[:limit])
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i+1]
	}
	return cut, fmt.Sprintf("[the diff goes on for %d more bytes: read the changed files themselves; `git diff` shows the uncommitted part]", len(cl.diff)-len(cut))
}

// limitUntil is when to retry after a usage limit: the reset the agent
// reported, else a backoff, plus jitter; an error wrapping ErrLimit when
// that is beyond --max-wait.
func (r *runner) limitUntil(resetAt time.Time, why string) (time.Time, error) {
	now := r.deps.Now()
	until := resetAt
	if until.IsZero() || !until.After(now) {
		until = now.Add(backoff(limitBase, limitCap, r.limitWaits))
	}
	// Jitter in proportion to the wait: seconds after a long wait, a
	// fraction of a second after a short one.
	until = until.Add(r.deps.Jitter(min(limitJitter, until.Sub(now)/10)))
	if r.opts.MaxWait > 0 && until.Sub(now) > r.opts.MaxWait {
		return until, fmt.Errorf("%w: usage limit resets at %s, %s away, beyond --max-wait %s (%s)",
			ErrLimit, until.Format(time.RFC3339), until.Sub(now).Round(time.Second), r.opts.MaxWait, why)
	}
	return until, nil
}

// waitInIteration waits inside an iteration (for a reviewer), as wait does
// between iterations: state.json says so and the renderers show it. An
// interrupt is returned, for the iteration to record.
func (r *runner) waitInIteration(ctx context.Context, until time.Time, why string) error {
	r.st.Status = state.StatusWaiting
	r.st.WaitingUntil = &until
	if err := r.save(); err != nil {
		return err
	}
	r.emit(Event{Kind: EventWaiting, Iteration: r.st.Iteration, Until: &until, Message: why})
	err := r.deps.Sleep(ctx, until.Sub(r.deps.Now()))
	r.st.Status = state.StatusRunning
	r.st.WaitingUntil = nil
	if serr := r.save(); err == nil {
		err = serr
	}
	if err != nil && ctx.Err() != nil {
		return errors.Join(ErrInterrupted, err)
	}
	return err
}

// gatesText is the gates' results for a reviewer, one line each.
func gatesText(runs []state.GateRun) string {
	var b strings.Builder
	for _, g := range runs {
		d := time.Duration(g.DurationMS) * time.Millisecond
		fmt.Fprintf(&b, "%s: %s (exit %d, %s)\n", g.Command, g.Result, g.ExitCode, d.Round(time.Millisecond))
	}
	return b.String()
}

// numbered writes findings as a numbered list.
func numbered(findings []string) string {
	var b strings.Builder
	for i, f := range findings {
		fmt.Fprintf(&b, "%d. %s\n", i+1, f)
	}
	return b.String()
}

func reviewerName(agentName, model string) string {
	return (&state.ReviewEvidence{Agent: agentName, Model: model}).By()
}

// promptTask is a task as templates see it.
func promptTask(t task.Task) prompt.Task {
	return prompt.Task{ID: t.ID, Title: t.Title, Description: t.Description, Criteria: t.Criteria,
		Notes: t.Notes, Priority: t.Priority, DependsOn: t.DependsOn}
}

// promptPlan is the plan as templates see it.
func (r *runner) promptPlan() prompt.Plan {
	p := r.deps.Plan.Plan()
	pp := r.progress()
	return prompt.Plan{Path: relPath(r.opts.Dir, p.Path), Name: p.Name, Description: p.Description, Branch: p.Branch,
		Total: pp.Total, Done: pp.Done, Open: p.Open()}
}
