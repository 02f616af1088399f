package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ralph-loop/ralph/internal/completion"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// The review phase at the end of a run (review.when = "end" or "both"):
// once every task is done, reviewers, one per review.focus and all at
// once, read the whole run's diff: from the tree the run started at to
// the tree now. Their findings, de-duplicated by normalized text, become
// tasks of the plan through its own writer (byte-safe, like any other
// edit), each with the finding as its acceptance criterion, and the loop
// runs them. At most review.rounds rounds; a round that finds nothing new
// ends the phase; a finding that comes back after its task was done stops
// the run (ErrStuck) with a report instead of looping. `ralph review` is
// one round on its own (Review).

// TaskAdder is a plan that takes new tasks: the end review adds its
// findings through it. task.File is one.
type TaskAdder interface {
	Add(t task.Task) (task.Task, error)
}

// DefaultReviewRounds bounds the end review when ReviewOptions.Rounds is 0.
const DefaultReviewRounds = 2

// reviewsEnd reports whether the run ends with the review phase. A --once
// run does not: it must not start the tasks the review would add.
func (r *runner) reviewsEnd() bool {
	w := r.opts.Review.When
	return r.deps.Reviewer != nil && (w == ReviewEnd || w == ReviewBoth) && !r.opts.Once
}

// startEndReview carries what earlier review phases remember into the new
// state, and marks where this run's diff starts: the phase of a run that
// did not finish goes on from its base and rounds; otherwise the base is
// the working tree now.
func (r *runner) startEndReview(ctx context.Context, prev state.State) {
	r.st.Findings = prev.Findings
	if !r.reviewsEnd() {
		return
	}
	if prev.EndReview != nil && prev.Status != state.StatusDone {
		er := *prev.EndReview
		r.st.EndReview = &er
		return
	}
	r.st.EndReview = &state.EndReview{}
	if r.deps.Trees == nil {
		return
	}
	base, err := r.deps.Trees.Snapshot(ctx)
	if err != nil {
		r.warn("could not record the tree the run starts from (the end review gets no diff): %v", err)
		return
	}
	r.st.EndReview.Base = base
}

// endReview runs the review phase once the plan is done: a round, the
// tasks it added, the next round, up to review.rounds.
func (r *runner) endReview(ctx context.Context, iterate func(context.Context) error) error {
	if !r.reviewsEnd() || r.st.EndReview == nil {
		return nil
	}
	rounds := r.opts.Review.Rounds
	if rounds < 1 {
		rounds = DefaultReviewRounds
	}
	for r.st.EndReview.Rounds < rounds {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		if err := r.checkBudget(); err != nil {
			return fmt.Errorf("%w (before the end review)", err)
		}
		added, _, err := r.reviewRound(ctx, rounds)
		if err != nil || added == 0 {
			return err
		}
		if err := iterate(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Review is `ralph review`: one review round on its own over the diff
// from base (a commit or tree) to the working tree, its findings added to
// the plan as tasks for the next `ralph run`. It records itself as a run
// (state.json, one history line) and returns nil when the reviewers
// answered, whatever they found; ErrStuck when a finding came back after
// its task was done, or no reviewer answered.
func Review(ctx context.Context, opts Options, deps Deps, base string) error {
	if deps.Agent == nil {
		deps.Agent = deps.Reviewer
	}
	if deps.Reviewer == nil {
		return errors.New("loop: review needs a reviewer")
	}
	r, err := newRunner(opts, deps)
	if err != nil {
		return err
	}
	prev, err := r.deps.Store.LoadState()
	if err != nil {
		return err
	}
	now := r.deps.Now()
	r.st = state.State{RunID: cmp.Or(r.opts.RunID, state.NewRunID(now)), Status: state.StatusRunning,
		Plan: r.deps.Plan.Plan().Path, Agent: r.reviewerNow().Name(), Model: r.reviewModelNow(),
		StartedAt: now, UpdatedAt: now, PID: r.opts.PID, Tasks: prev.Tasks, Findings: prev.Findings,
		EndReview: &state.EndReview{Base: base}, Quota: prev.Quota}
	if r.st.Tasks == nil {
		r.st.Tasks = map[string]state.TaskState{}
	}
	if err := r.save(); err != nil {
		return err
	}
	r.emit(Event{Kind: EventRunStarted, Plan: r.progress(),
		Message: "review by " + reviewerName(r.reviewerNow().Name(), r.reviewModelNow()) + " of the diff since " + short(base)})
	added, reviewed, err := r.reviewRound(ctx, 0)
	if err == nil {
		r.doneMsg = "the review found nothing new"
		switch {
		case !reviewed:
			r.doneMsg = "nothing to review: no change since " + short(base)
		case added > 0:
			r.doneMsg = fmt.Sprintf("the review added %s to the plan: `ralph run` does them", words.Count(added, "task"))
		}
	}
	return r.finish(err)
}

// reviewRound runs one review round (of rounds; 0: on its own) and adds
// its new findings to the plan. It returns how many tasks it added, and
// false when there was nothing to review (no change since the base).
func (r *runner) reviewRound(ctx context.Context, rounds int) (added int, reviewed bool, err error) {
	round := r.st.EndReview.Rounds + 1
	base := r.st.EndReview.Base
	what := fmt.Sprintf("end review round %d/%d", round, rounds)
	if rounds == 0 {
		what = "review"
	}
	cl := r.runDiff(ctx, base)
	if cl.err == nil && len(cl.diff) == 0 {
		r.emit(Event{Kind: EventReview, Iteration: r.st.Iteration, Message: what + ": no change since " + short(base) + "; nothing to review"})
		return 0, false, nil
	}
	reviewers, err := r.endReviewers(cl)
	if err != nil {
		return 0, true, err
	}
	r.st.Iteration++
	r.st.CurrentTask = ""
	focuses := make([]string, len(reviewers))
	for i, rv := range reviewers {
		focuses[i] = rv.focus
	}
	scope := fmt.Sprintf("the diff since %s (%s)", short(base), words.Count(len(diffPaths(cl.diff)), "file"))
	if cl.err != nil {
		scope = "the working tree (no diff: " + cl.err.Error() + ")"
	}
	who := fmt.Sprintf("%d reviewers", len(reviewers))
	if len(reviewers) == 1 {
		who = "1 reviewer"
	}
	r.emit(Event{Kind: EventReview, Iteration: r.st.Iteration, Message: fmt.Sprintf("%s: %s by %s (%s) read %s",
		what, who, reviewerName(r.reviewerNow().Name(), r.reviewModelNow()), strings.Join(focuses, ", "), scope)})

	started := r.deps.Now()
	stop := r.askReviewers(ctx, reviewers, cl.to)
	ended := r.deps.Now()
	r.priceWarnings()
	ev := &state.RoundEvidence{Round: round, Base: base}
	rec := state.Record{RunID: r.st.RunID, Iteration: r.st.Iteration, Agent: r.reviewerNow().Name(), Model: r.reviewModelNow(),
		StartedAt: started, EndedAt: ended, DurationMS: ended.Sub(started).Milliseconds(), Outcome: state.OutcomeEndReview, EndReview: ev}
	answered, lastErr := 0, ""
	for _, rv := range reviewers {
		ev.Reviewers = append(ev.Reviewers, *rv.ev)
		rec.InputTokens += rv.ev.InputTokens
		rec.OutputTokens += rv.ev.OutputTokens
		rec.CacheReadTokens += rv.ev.CacheReadTokens
		rec.CacheWriteTokens += rv.ev.CacheWriteTokens
		rec.CostUSD += rv.ev.CostUSD
		rec.CostSource = state.CombineCostSource(rec.CostSource, rv.ev.CostSource)
		for _, w := range rv.warnings {
			r.warn("%s", w)
		}
		switch rv.verdict.Marker {
		case completion.Ship, completion.Revise:
			answered++
			r.emit(Event{Kind: EventReview, Iteration: r.st.Iteration, Message: reviewerLine(rv)})
		default:
			if rv.ev.Error != "" {
				lastErr = rv.ev.Error
			}
		}
	}
	var runErr error
	switch {
	case stop != nil:
		rec.Outcome, rec.Error = stop.outcome, stop.errText
		runErr = stop.err
	case answered == 0:
		rec.Error = fmt.Sprintf("no verdict from any of the %d end reviewers; last: %s", len(reviewers), lastErr)
		runErr = fmt.Errorf("%w: the end review got no verdict from any of its %d reviewers (last: %s); check review.agent and review.timeout, and run again",
			ErrStuck, len(reviewers), lastErr)
	}
	if runErr == nil {
		added, err = r.takeFindings(ev, round, reviewers)
		switch {
		case err != nil:
			rec.Error, runErr = err.Error(), err
		case len(ev.Recurring) > 0:
			rec.Error = recurringReport(ev.Recurring)
			runErr = fmt.Errorf("%w: %s; fix it by hand, or reword the task, and run again", ErrStuck, rec.Error)
		}
		er := *r.st.EndReview
		er.Rounds = round
		r.st.EndReview = &er
	}
	// The reviewers ran in the tree, and the plan may have new tasks: the
	// next iteration looks afresh.
	r.treeSeen = false
	r.st.Totals.AddRecord(rec, 0)
	if err := r.deps.Store.AppendHistory(rec); err != nil {
		return 0, true, err
	}
	if err := r.save(); err != nil {
		return 0, true, err
	}
	r.emit(Event{Kind: EventReview, Iteration: r.st.Iteration, Record: &rec, Plan: r.progress(), Totals: &r.st.Totals,
		Message: what + ": " + roundSummary(ev, rec)})
	return added, true, runErr
}

// endReviewers are a round's reviewers, one per focus, each with its
// prompt: the run's done tasks and its diff.
func (r *runner) endReviewers(cl *claim) ([]*endReviewer, error) {
	data := prompt.ReviewData{Scope: prompt.ReviewScopeRun, Plan: r.promptPlan()}
	for _, t := range r.deps.Plan.Plan().Tasks {
		if t.Status == task.StatusDone {
			data.Tasks = append(data.Tasks, promptTask(t))
		}
	}
	data.Diff, data.DiffNote = r.boundDiff(cl)
	focuses := r.opts.Review.Focus
	if len(focuses) == 0 {
		focuses = config.DefaultReviewFocus()
	}
	reviewers := make([]*endReviewer, len(focuses))
	for i, f := range focuses {
		d := data
		d.Focus = f
		text, err := prompt.RenderReview(r.opts.Review.PromptName, r.opts.Review.Prompt, d)
		if err != nil {
			return nil, fmt.Errorf("the review prompt: %w", err)
		}
		reviewers[i] = &endReviewer{focus: f, text: text,
			ev: &state.ReviewEvidence{Agent: r.reviewerNow().Name(), Model: r.reviewModelNow(), Focus: f}}
	}
	return reviewers, nil
}

// runDiff is the whole run's work: the diff from base to the tree now,
// the plan left out (its changes are the marks, not the work).
func (r *runner) runDiff(ctx context.Context, base string) *claim {
	cl := &claim{from: base}
	if r.deps.Trees == nil {
		cl.err = errors.New("no repository")
		return cl
	}
	to, err := r.deps.Trees.Snapshot(ctx)
	if err != nil {
		cl.err = err
		return cl
	}
	cl.to = to
	if base == "" {
		cl.err = errors.New("the tree the run started from is unknown")
		return cl
	}
	cl.diff, cl.err = r.deps.Trees.Diff(ctx, base, to, []string{r.deps.Plan.Plan().Path})
	return cl
}

// reviewerLine says what one end reviewer answered.
func reviewerLine(rv *endReviewer) string {
	if rv.verdict.Marker == completion.Ship {
		return fmt.Sprintf("%s: SHIP by %s", rv.focus, rv.ev.By())
	}
	return fmt.Sprintf("%s: REVISE by %s, %s", rv.focus, rv.ev.By(), words.Count(len(rv.verdict.Findings), "finding"))
}

// roundSummary says what became of a round.
func roundSummary(ev *state.RoundEvidence, rec state.Record) string {
	if rec.Error != "" {
		return rec.Error
	}
	var ids []string
	for _, t := range ev.Tasks {
		ids = append(ids, t.Task)
	}
	s := "nothing new"
	if len(ids) > 0 {
		s = fmt.Sprintf("%s became %s %s", words.Count(len(ids), "new finding"), words.Noun(len(ids), "task"), strings.Join(ids, ", "))
	}
	if len(ev.Known) > 0 {
		s += fmt.Sprintf("; %d already open as %s", len(ev.Known), words.Noun(len(ev.Known), "a task", "tasks"))
	}
	return s
}

// recurringReport says which findings came back after their tasks were
// done.
func recurringReport(rec []state.FindingTask) string {
	parts := make([]string, len(rec))
	for i, ft := range rec {
		parts[i] = fmt.Sprintf("%q (task %s, done) came back", oneLine(ft.Finding, 120), ft.Task)
	}
	return fmt.Sprintf("%s came back after their task was done: %s", words.Count(len(rec), "end review finding"), strings.Join(parts, "; "))
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if rs := []rune(s); len(rs) > n {
		return string(rs[:n-1]) + "…"
	}
	return s
}

// short is a tree or commit id as people read it.
func short(id string) string {
	if id == "" {
		return "(unknown)"
	}
	return id[:min(len(id), 12)]
}
