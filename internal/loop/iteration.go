package loop

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/completion"
	"github.com/ralph-loop/ralph/internal/projectfs"
	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// iteration is what one agent run came to.
type iteration struct {
	outcome state.Outcome
	result  agent.Result
	errText string
	// output is a gate's output tail, for the next prompt.
	output string
	// progress: files changed or a task was done.
	progress bool
	// agent is the agent that ran.
	agent string
}

// runIteration runs the agent once on t and records the outcome. The
// returned error ends the run (interrupt, fatal error, broken state).
func (r *runner) runIteration(ctx context.Context, t task.Task) (iteration, error) {
	r.st.Iteration++
	r.st.Totals.Iterations++
	r.st.CurrentTask = t.ID
	r.st.CurrentAgent, r.st.CurrentModel = "", ""
	if r.cur != nil && (r.cur.Name() != r.st.Agent || r.curModel != r.st.Model) {
		r.st.CurrentAgent, r.st.CurrentModel = r.cur.Name(), r.curModel
	}
	// Written while the agent starts: see saveAsync.
	if err := r.saveAsync(); err != nil {
		return iteration{}, err
	}
	ref := &TaskRef{ID: t.ID, Title: t.Title}
	r.emit(Event{Kind: EventIterationStarted, Iteration: r.st.Iteration, MaxIterations: r.opts.MaxIterations, Task: ref,
		Message: r.onNote})

	req, err := r.request(t)
	if err != nil {
		return iteration{}, err
	}
	if p, ok := r.deps.Store.(preparer); ok {
		p.UsePrepared(r.st.RunID, r.st.Iteration)
	}
	promptPath, outPath, err := r.deps.Store.IterationFiles(r.st.RunID, r.st.Iteration)
	if err != nil {
		return iteration{}, err
	}
	if err := writeEmpty(promptPath, []byte(req.Prompt)); err != nil {
		return iteration{}, fmt.Errorf("write prompt: %w", err)
	}
	req.PromptFile = promptPath
	f, err := openEmpty(outPath)
	if err != nil {
		return iteration{}, fmt.Errorf("create transcript: %w", err)
	}
	out := r.newTranscript(f)
	r.seeTree(ctx)
	var doneBefore map[string]bool // what the agent ticks: agent ownership only
	if r.opts.Ownership == task.OwnerAgent {
		doneBefore = doneSet(r.deps.Plan.Plan())
	}
	r.markStart(ctx, t)
	// The state naming the task is on disk before the agent can touch
	// anything: after a crash, the next run knows which task's marks in
	// the plan were not ralph's (reconcile.go). The write started with
	// the iteration is nearly always done by now.
	if err := r.saved(); err != nil {
		_ = out.close()
		return iteration{}, err
	}

	if p, ok := r.deps.Store.(preparer); ok {
		// The next iteration's files are made while this one's agent runs.
		p.PrepareIteration(r.st.RunID, r.st.Iteration+1)
	}
	started := r.deps.Now()
	endWatch := r.watchNetwork(ref)
	res, runErr := r.agentNow().Run(ctx, req, agent.Sink{
		Transcript: out,
		Emit: func(e agent.Event) {
			r.emit(Event{Kind: EventAgent, Iteration: r.st.Iteration, Task: ref, Agent: &e})
		},
	})
	ended := r.deps.Now()
	// The hosts go after the agent's output, not into it: a line of
	// ours in the middle of one of its lines would break both.
	for _, line := range endWatch() {
		_, _ = io.WriteString(out, line+"\n")
	}
	if terr := out.close(); terr != nil {
		// The agent's result stands: the run records it, then stops.
		r.warn("%v; the run stops after this iteration", terr)
		r.stop = terr
	}

	// Whether the plan was edited, before the runner touches it:
	// files_changed counts what changed during the iteration. In runner
	// ownership the edit is taken in now, whatever the outcome: a status
	// change the runner did not make must not outlive the iteration.
	var planEdited, planUndone bool
	if r.opts.Ownership == task.OwnerRunner {
		t, planEdited, planUndone = r.takePlanEdits(t)
	} else if r.deps.Repo != nil {
		planEdited, _ = r.deps.Plan.Modified()
	}
	startTree := r.st.Tasks[t.ID].StartTree // accepting clears it; a refused commit keeps it
	it := r.classify(ctx, t, req, res, runErr, doneBefore)
	it.restored = it.restored || planUndone
	it.agent = r.agentNow().Name()
	rec := state.Record{
		RunID: r.st.RunID, Iteration: r.st.Iteration, TaskID: t.ID, Attempt: r.st.Tasks[t.ID].Attempts + 1,
		Agent: it.agent, Model: cmp.Or(res.Model, req.Model),
		StartedAt: started, EndedAt: ended, DurationMS: ended.Sub(started).Milliseconds(),
		ExitCode: res.ExitCode, Outcome: it.outcome,
		InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
		CacheReadTokens: res.Usage.CacheReadTokens, CacheWriteTokens: res.Usage.CacheWriteTokens,
		CostUSD: res.CostUSD, CostSource: costSource(res), ContextUsedPercent: res.ContextUsedPercent,
		SessionID: res.SessionID, Error: it.errText,
	}
	if it.match.Marker != completion.None {
		rec.Marker = string(it.match.Marker)
		rec.Strategy = string(it.match.Strategy)
	}
	it.ev.record(&rec) // the reviewer's cost with its own source: the task's, apart from the agent's
	if len(it.doneIDs) > 0 && r.opts.Ownership == task.OwnerAgent {
		rec.TaskID = strings.Join(it.doneIDs, ",")
	}
	r.recordInPlan(t, rec, it.doneIDs)
	var commitErr error
	rec.FilesChanged, rec.Commit, commitErr = r.settle(ctx, t, it, planEdited)
	if r.holdRefused(&it, t, commitErr, startTree) {
		rec.Outcome, rec.Error, rec.TaskID = it.outcome, it.errText, r.st.Held
		commitErr = nil
	}
	uncommitted := commitErr != nil && len(it.doneIDs) > 0
	if !uncommitted {
		r.releaseHeld(it.doneIDs)
	}
	if uncommitted {
		// No task is done without its commit: the acceptance waits in
		// state, and the next run commits it before anything else.
		rec.Error = strings.TrimPrefix(rec.Error+"; ", "; ") + "its checks passed, but the commit failed: " + commitErr.Error()
	}
	if rec.FilesChanged > 0 || len(it.doneIDs) > 0 {
		it.progress = true
	}
	r.st.Totals.AddRecord(rec, len(it.doneIDs))
	if err := r.deps.Store.AppendHistory(rec); err != nil {
		return it.iteration, err
	}
	if uncommitted {
		r.emit(Event{Kind: EventIterationEnded, Iteration: r.st.Iteration, Task: ref, Record: &rec, Plan: r.progress(), Totals: &r.st.Totals})
		return it.iteration, fmt.Errorf("%w: %s passed its checks, but git could not commit it: %w; "+
			"fix what git says and run ralph again: it commits %s first", ErrNotCommitted, strings.Join(it.doneIDs, ", "),
			commitErr, strings.Join(it.doneIDs, ", "))
	}
	// History is the record; the state follows it (saveLater), and no
	// longer needs to say what was being accepted.
	r.notAccepting()
	if err := r.saveLater(); err != nil {
		return it.iteration, err
	}
	r.emit(Event{Kind: EventIterationEnded, Iteration: r.st.Iteration, Task: ref, Record: &rec, Plan: r.progress(), Totals: &r.st.Totals})
	if err := r.stopping(); err != nil {
		return it.iteration, err
	}

	switch it.outcome {
	case state.OutcomeInterrupted:
		return it.iteration, ErrInterrupted
	case state.OutcomeFatalError:
		hint := "fix the agent's setup (`ralph doctor` checks it) and run again"
		if strings.Contains(it.errText, "ralph doctor") {
			hint = "then run again"
		}
		if h := ResourceHint(runErr); h != "" {
			hint = h // not the agent's setup: ralph could not start it
		}
		return it.iteration, fmt.Errorf("%w: %s; %s", ErrFatal, it.errText, hint)
	default:
		// The other values need nothing here.
	}
	return it.iteration, nil
}

// openEmpty opens path for writing, created when missing and emptied when
// not empty. An empty file is not truncated: on ext4, a file truncated to
// nothing has its data written out when it is closed (auto_da_alloc),
// and the transcript files, made empty ahead of time (preparer), need not
// wait for that.
//
// The store made the run's directory beneath the project; the file is
// opened beneath that directory, so a link planted in its place is not
// followed (an iter-002.out linked to ~/.bashrc is not emptied).
func openEmpty(path string) (*os.File, error) {
	f, err := projectfs.New(filepath.Dir(path)).OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err != nil || info.Size() > 0 {
		if err == nil {
			err = f.Truncate(0)
		}
		if err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

// writeEmpty is os.WriteFile through openEmpty.
func writeEmpty(path string, data []byte) error {
	f, err := openEmpty(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// preparer is a Store that makes an iteration's transcript files ahead
// of time (state.Store).
type preparer interface {
	PrepareIteration(runID string, iteration int)
	UsePrepared(runID string, iteration int)
	DropPrepared()
}

// classified is an iteration plus what classification found.
type classified struct {
	iteration
	match   completion.Match
	doneIDs []string
	// restored: the runner put back (part of) an edit of the plan.
	restored bool
	// ev is what checked a done claim (verify.go).
	ev evidence
	// look is the claim whose snapshot was this iteration's look at the
	// tree, when nothing ran in the tree after it; nil: settle looks.
	look *claim
}

// classify decides the outcome of one agent run and applies it to the
// plan: the one place that reads the Result.
func (r *runner) classify(ctx context.Context, t task.Task, req agent.Request, res agent.Result, runErr error, doneBefore map[string]bool) classified {
	c := classified{iteration: iteration{result: res}}
	set := func(outcome state.Outcome, errText string) classified {
		c.outcome, c.errText = outcome, errText
		return c
	}
	switch {
	case runErr != nil:
		msg := runErr.Error()
		if agent.IsNotFound(runErr) {
			msg += " (is the agent installed and on PATH? `ralph doctor` checks)"
		}
		return set(state.OutcomeFatalError, msg)
	case res.Interrupted || ctx.Err() != nil:
		return set(state.OutcomeInterrupted, "interrupted")
	case res.TimedOut:
		return set(state.OutcomeTimeout, fmt.Sprintf("no result within --timeout %s", r.opts.Timeout))
	case res.IdleTimedOut:
		return set(state.OutcomeIdleTimeout, fmt.Sprintf("no output for --idle-timeout %s", r.opts.IdleTimeout))
	}
	if res.IsError {
		switch res.ErrorKind {
		case agent.ErrorUsageLimit, agent.ErrorRateLimit:
			return set(state.OutcomeRateLimited, res.ErrorText)
		case agent.ErrorTransient:
			return set(state.OutcomeTransientError, res.ErrorText)
		case agent.ErrorFatal:
			return set(state.OutcomeFatalError, res.ErrorText)
		default:
			// The other values need nothing here.
		}
	}

	in := completion.Input{Final: res.FinalText, Messages: res.Messages, ExitCode: res.ExitCode}
	if res.RawText {
		// Only raw output can hold the echoed prompt, whose instructions
		// name the markers.
		in.Prompt = req.Prompt
	}
	c.match = completion.Detect(in, r.opts.Strategies)
	if r.opts.Ownership == task.OwnerAgent {
		return r.classifyAgentOwned(ctx, c, doneBefore)
	}
	return r.classifyRunnerOwned(ctx, c, t)
}

// classifyRunnerOwned applies the runner-ownership contract: the agent
// claims, the runner checks and marks. The plan's edits are taken in by
// now (takePlanEdits).
func (r *runner) classifyRunnerOwned(ctx context.Context, c classified, t task.Task) classified {
	switch c.match.Marker {
	case completion.TaskDone:
		return r.accept(ctx, c, t, state.OutcomeTaskDone)
	case completion.PlanDone:
		if others := r.deps.Plan.Plan().Open() - 1; others > 0 {
			c.outcome = state.OutcomePrematureClaim
			c.errText = fmt.Sprintf("claimed the plan complete with %d other tasks open", others)
			r.warn("premature claim: %s", c.errText)
			return c
		}
		return r.accept(ctx, c, t, state.OutcomePlanDone)
	case completion.TaskFailed:
		c.outcome, c.errText = state.OutcomeTaskFailed, firstNonEmpty(c.match.Reason, "the agent reported TASK_FAILED")
		return c
	case completion.Question:
		c.outcome, c.errText = state.OutcomeNeedsAnswer, firstNonEmpty(c.match.Reason, "(the agent asked without saying what)")
		return c
	default:
		// The other values need nothing here.
	}
	if c.result.IsError {
		c.outcome, c.errText = state.OutcomeTaskFailed, firstNonEmpty(c.result.ErrorText, "the agent reported an error")
		return c
	}
	c.outcome, c.errText = state.OutcomeNoMarker, noMarkerText(c.result)
	return c
}

// accept runs the gates, the guard and the reviewer, and marks t done.
func (r *runner) accept(ctx context.Context, c classified, t task.Task, outcome state.Outcome) classified {
	if failed, ok := r.gatesFail(ctx, t, &c); !ok {
		return failed
	}
	if !r.verify(ctx, &c, t, []string{t.ID}) {
		return c
	}
	if !r.land(ctx, t, &c) {
		return c
	}
	if !r.accepting(&c, t.ID) {
		return c
	}
	if err := r.deps.Plan.SetStatus(t.ID, task.StatusDone); err != nil {
		r.stopFor(err)
		r.notAccepting() // not accepted after all: nothing to finish
		c.outcome, c.errText = state.OutcomeTaskFailed, "marking the task done failed: "+err.Error()
		return c
	}
	c.outcome = outcome
	c.doneIDs = []string{t.ID}
	r.accepted(&c, c.doneIDs)
	return c
}

// accepting records that ids are being accepted, on disk, before the
// plan says so and the commit is made: a run that dies before the
// iteration's history line leaves them for the next run to finish
// (reconcile.go). A store that keeps the record in a file of its own
// (acceptRecorder) spares the wait for state.json; otherwise, or when
// the ids do not fit there, state.json holds it. When it cannot be
// written they are not accepted, and c says why.
func (r *runner) accepting(c *classified, ids ...string) bool {
	r.st.Accepting = ids
	if rec, ok := r.deps.Store.(acceptRecorder); ok {
		recorded, err := rec.Accepting(r.st.RunID, ids)
		if err != nil {
			r.stopFor(err)
			r.st.Accepting = nil
			c.outcome, c.errText = state.OutcomeTaskFailed, "could not record the task's acceptance: "+err.Error()
			return false
		}
		if recorded {
			return true
		}
	}
	if err := r.save(); err != nil {
		r.stopFor(err)
		r.st.Accepting = nil
		c.outcome, c.errText = state.OutcomeTaskFailed, "could not record the task's acceptance in state.json: "+err.Error()
		return false
	}
	return true
}

// notAccepting ends the acceptance under way, if any: its record goes.
func (r *runner) notAccepting() {
	r.st.Accepting = nil
	if rec, ok := r.deps.Store.(acceptRecorder); ok {
		rec.Accepted()
	}
}

// acceptRecorder is a Store that records an acceptance in a file of its
// own (state.Store), cheaper to write than state.json.
type acceptRecorder interface {
	Accepting(runID string, ids []string) (bool, error)
	Accepted()
	DropAccepting() error
}

// gatesFail runs the gates for t; ok is false when they failed, and then
// c is filled in as gate_failed, or sandbox_failed when the sandbox made
// a gate fail (SandboxFailure).
func (r *runner) gatesFail(ctx context.Context, t task.Task, c *classified) (classified, bool) {
	if r.deps.Gate == nil {
		return *c, true
	}
	var ok bool
	var output string
	var err error
	r.watchGates(ctx, func() { ok, output, err = r.deps.Gate.Check(ctx, t) })
	c.ev.gates = gateRuns(r.deps.Gate)
	if err == nil && ok {
		return *c, true
	}
	if sf, is := asSandboxFailure(err); is {
		r.sandboxFailed(c, sf)
		return *c, false
	}
	c.outcome = state.OutcomeGateFailed
	c.errText = "quality gates failed"
	if err != nil {
		c.errText += ": " + err.Error()
	} else if first, _, _ := strings.Cut(output, "\n"); first != "" {
		c.errText = first
	}
	c.output = tail(output, prompt.MaxAttemptOutput)
	return *c, false
}

// classifyAgentOwned reads progress from the plan file the agent edits.
func (r *runner) classifyAgentOwned(ctx context.Context, c classified, doneBefore map[string]bool) classified {
	if _, err := r.deps.Plan.Reload(); err != nil {
		// The agent broke the plan: put back the last good version.
		rerr := r.deps.Plan.Restore()
		c.restored = rerr == nil
		r.warn("the agent left %s invalid (%v); restored the last valid version (%v)", r.deps.Plan.Plan().Path, err, rerr)
		c.outcome, c.errText = state.OutcomeTaskFailed, "the agent left the plan invalid: "+err.Error()
		return c
	}
	p := r.deps.Plan.Plan()
	for _, t := range p.Tasks {
		if t.Status == task.StatusDone && !doneBefore[t.ID] {
			c.doneIDs = append(c.doneIDs, t.ID)
		}
	}
	if len(c.doneIDs) > 0 {
		// The agent ticked tasks; they count only once the gates pass.
		t, _ := p.Task(c.doneIDs[0])
		failed, ok := r.gatesFail(ctx, t, &c)
		why := "the quality gates failed"
		if ok {
			failed = c
			ok = r.verify(ctx, &failed, t, c.doneIDs)
			why = "its checks failed"
		}
		if ok {
			ok = r.accepting(&failed, c.doneIDs...)
			why = "ralph could not record it"
		}
		if !ok {
			for _, id := range c.doneIDs {
				if err := r.deps.Plan.SetStatus(id, task.StatusOpen); err != nil {
					r.warn("could not untick %s: %v", id, err)
				}
			}
			r.warn("unticked %s: %s (%s)", strings.Join(c.doneIDs, ", "), why, failed.errText)
			failed.doneIDs = nil
			return failed
		}
		c.ev, c.look = failed.ev, failed.look
		r.accepted(&c, c.doneIDs)
	}
	switch {
	case c.match.Marker == completion.PlanDone && p.Open() == 0:
		c.outcome = state.OutcomePlanDone
	case c.match.Marker == completion.PlanDone:
		c.outcome = state.OutcomePrematureClaim
		c.errText = fmt.Sprintf("claimed the plan complete with %s open", words.Count(p.Open(), "task"))
		r.warn("premature claim: %s", c.errText)
	case len(c.doneIDs) > 0:
		c.outcome = state.OutcomeTaskDone
	case c.match.Marker == completion.Question:
		c.outcome, c.errText = state.OutcomeNeedsAnswer, firstNonEmpty(c.match.Reason, "(the agent asked without saying what)")
	case c.match.Marker == completion.TaskFailed:
		c.outcome, c.errText = state.OutcomeTaskFailed, firstNonEmpty(c.match.Reason, "the agent reported TASK_FAILED")
	case c.result.IsError:
		c.outcome, c.errText = state.OutcomeTaskFailed, firstNonEmpty(c.result.ErrorText, "the agent reported an error")
	default:
		c.outcome, c.errText = state.OutcomeNoMarker, "no task was marked done in the plan and no marker was given"
	}
	return c
}

// recordInPlan keeps the plan's own log up to date where the format has
// one (progress.md's Completed This Iteration, Recent Attempts and
// Iteration Log), before the commit so the log is part of it.
func (r *runner) recordInPlan(t task.Task, rec state.Record, doneIDs []string) {
	lg, ok := r.deps.Plan.(interface {
		RecordIteration(task.IterationRecord) error
	})
	if !ok {
		return
	}
	if kl, ok := r.deps.Plan.(interface{ KeepsLog() bool }); ok && !kl.KeepsLog() {
		return
	}
	err := lg.RecordIteration(task.IterationRecord{Iteration: rec.Iteration, Started: rec.StartedAt,
		Duration: rec.EndedAt.Sub(rec.StartedAt), TaskID: t.ID, Outcome: string(rec.Outcome), Error: rec.Error, Done: doneIDs})
	if err != nil {
		r.stopFor(err)
		r.warn("could not update the log in %s: %v", r.deps.Plan.Plan().Path, err)
	}
}

func noMarkerText(res agent.Result) string {
	if res.ExitCode != 0 {
		return fmt.Sprintf("exit code %d and no completion marker; stderr: %s", res.ExitCode, tail(res.Stderr, 500))
	}
	return "the agent ended without a completion marker"
}

func (r *runner) warn(format string, args ...any) {
	r.emit(Event{Kind: EventWarning, Iteration: r.st.Iteration, Message: fmt.Sprintf(format, args...)})
}

// request builds the agent request for t.
func (r *runner) request(t task.Task) (agent.Request, error) {
	text, err := r.renderPrompt(t)
	if err != nil {
		return agent.Request{}, err
	}
	return agent.Request{
		Prompt: text, Dir: r.opts.Dir, Model: r.modelNow(), Env: r.opts.Env,
		Timeout: r.opts.Timeout, IdleTimeout: r.opts.IdleTimeout, Grace: r.opts.Grace,
	}, nil
}

func doneSet(p *task.Plan) map[string]bool {
	m := map[string]bool{}
	for _, t := range p.Tasks {
		if t.Status == task.StatusDone {
			m[t.ID] = true
		}
	}
	return m
}

func firstNonEmpty(s ...string) string {
	if i := slices.IndexFunc(s, func(v string) bool { return strings.TrimSpace(v) != "" }); i >= 0 {
		return strings.TrimSpace(s[i])
	}
	return ""
}

// tail keeps the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// watchNetwork starts an agent's or a reviewer's account of the
// sandbox's network, each refusal a warning about the task (ref; nil for
// a reviewer of the whole run); the returned end gives its lines.
// Without a proxy there is nothing to watch.
func (r *runner) watchNetwork(ref *TaskRef) (end func() []string) {
	if r.deps.Network == nil {
		return func() []string { return nil }
	}
	iteration := r.st.Iteration
	return r.deps.Network.Watch(func(message string) {
		r.emit(Event{Kind: EventWarning, Iteration: iteration, Task: ref, Message: message})
	})
}
