package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralph-loop/ralph/internal/completion"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// Options are the settings of one run.
type Options struct {
	Dir       string
	Model     string
	Ownership task.Ownership
	// MaxIterations bounds agent invocations; 0 means no bound.
	MaxIterations int
	MaxAttempts   int
	// Once stops after one iteration.
	Once bool
	// Only, when set, is the one task the run works on (--task): the run
	// ends when it is done or failed, whatever the rest of the plan holds.
	Only        string
	Timeout     time.Duration
	IdleTimeout time.Duration
	Grace       time.Duration
	Delay       time.Duration
	// MaxWait bounds one wait for a usage limit to reset.
	MaxWait time.Duration
	// RouteInForce, when set, gives the agent and model in force for a
	// task (the trust store's record of the plan: an edit of the file is
	// not in force until `ralph trust PLAN`); nil: the plan's as the run
	// started.
	RouteInForce func(id string) (agentName, model string)
	// FallbackAfter is how long a usage limit is waited for before a
	// fallback agent stands in (Deps.Route).
	FallbackAfter time.Duration
	// Budget in USD; 0 means none.
	Budget float64
	// MaxTokens is a token budget for agents that report no cost; 0 means
	// none.
	MaxTokens int64
	// TranscriptMax and TranscriptMaxRun bound the bytes of agent output
	// an iteration's transcript and the run's keep (0: 256 MiB, 2 GiB);
	// past them the output is decoded, not stored (resources.go).
	TranscriptMax, TranscriptMaxRun int64
	// Prices estimates the cost of agents that report tokens only; nil:
	// their cost is unknown (money.go).
	Prices Pricer
	// QuotaReserve is the share of each protected usage window, in
	// percent, that the run leaves unused: no iteration starts once a
	// window the agent reports is used past 100-QuotaReserve percent, or
	// once it warns of a window listed in QuotaWindows. 0: no pacing.
	QuotaReserve float64
	// QuotaWindows are the windows protected (five_hour, seven_day, ...);
	// none: every window the agent reports a utilization for.
	QuotaWindows []string
	// QuotaAction is QuotaWait ("", the default: wait for the window's
	// reset) or QuotaStop (stop the run, tasks open).
	QuotaAction string
	Strategies  []completion.Strategy
	// Prompt is the prompt template text, PromptName its file name for
	// errors ("" for the embedded default).
	Prompt     string
	PromptName string
	// AllowFailingGates makes the gates that fail on the starting tree
	// advisory for the run, instead of stopping it (baseline.go).
	AllowFailingGates bool
	// SkipBaseline leaves the starting tree unchecked: it holds an
	// earlier run's unfinished work, which its gates need not pass.
	SkipBaseline bool
	// NoRepo: the run works without a repository, as the user asked
	// (--allow-no-repo); its header says what that costs.
	NoRepo bool
	// Baseline, when set, is the baseline as the caller already checked it
	// (CheckBaseline), before anything of the run changed: the loop runs
	// it no more, and makes its failed commands advisory.
	Baseline *Baseline
	// Commit turns on a commit per accepted task.
	Commit bool
	// Artefacts are the .gitignore lines of what the project's
	// toolchains leave in its tree (gate.Artefacts): untracked files they
	// match are left out of the commits, as are those the gates made
	// (artefacts.go).
	Artefacts      []string
	CommitTemplate string
	// StuckThreshold is the number of consecutive iterations without
	// progress, or with the same error, that stops the run.
	StuckThreshold int
	// Env is the environment agents start from.
	Env []string
	PID int
	// RunID is the run's id; "" makes one. The command line makes it
	// before the run starts: its children carry it (proc's family mark).
	RunID string
	// Guard is the tamper guard's mode: GuardWarn (""), GuardStrict or
	// GuardOff (verify.go). GuardConfigFiles are ralph's configuration
	// files, relative to the top of the repository, which the guard
	// watches as gate configuration (nil: ralph.toml).
	Guard            string
	GuardConfigFiles []string
	// OwnFiles are ralph's own files in the project (its configuration,
	// the prompt files): a claim that changes them gets them put back
	// as the task started (own.go).
	OwnFiles []OwnFile
	// RepoDir is the top of the repository the guard's findings name
	// files in, where a strict guard's rejection puts the tamper back
	// (tamper.go); empty: the tamper is not put back.
	RepoDir string
	// Review configures the reviewers (review.go).
	Review ReviewOptions
	// Sandbox is the sandbox the agents, reviewers and gates run in, as
	// state.json and the run_started event report it; nil when none was
	// chosen (tests).
	Sandbox *state.Sandbox
}

// Deps are what the loop works with. Repo and Gate may be nil.
type Deps struct {
	// Agent is the run's agent: the only one when Route is nil.
	Agent Agent
	// Route, when set, says which agent and model run each attempt
	// (escalation, a task's own agent, fallback on a usage limit); Agents
	// are the agents it may name, by name.
	Route  Route
	Agents map[string]Agent
	// ReviewRoute, when set, says which of Reviewers (by name) reviews
	// a claim, as Route does for the agent: review.fallback's stand in
	// while the reviewer's usage limit lasts.
	ReviewRoute Route
	Reviewers   map[string]Agent
	// Available, when set, says whether an agent can stand in for a
	// limited one (installed, logged in): nil when it can.
	Available func(name string) error
	Plan      Plan
	Store     Store
	Repo      Repo
	Gate      Gate
	// Trees, when set, gives the guard and the reviewer the task's diff.
	Trees Trees
	// Reviewer, when set, is the agent that reviews done claims
	// (Options.Review says when).
	Reviewer Agent
	Emit     func(Event)
	// Control, when set, lets the user pause the run and skip tasks
	// between iterations (control.go).
	Control Control
	// Network, when set, is the account of the hosts the sandbox's proxy
	// let the agent reach or refused: each iteration's goes at the end of
	// its transcript, and each refusal is a warning as it happens.
	Network Network
	// Now and Sleep are the clock; tests replace them.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a random duration in [0, max).
	Jitter func(max time.Duration) time.Duration
}

// Run drives the loop until the plan is done or a policy stops it. It
// returns nil when every task is done, and otherwise an error wrapping
// ErrLimit, ErrStuck, ErrInterrupted or ErrFatal, or another error for bad
// input.
func Run(ctx context.Context, opts Options, deps Deps) error {
	r, err := newRunner(opts, deps)
	if err != nil {
		return err
	}
	return r.run(ctx)
}

// runner is the state of one run.
type runner struct {
	opts Options
	deps Deps
	st   state.State
	// attempts holds each task's recent failed attempts for the prompt.
	attempts map[string][]attemptNote
	// noProgress counts consecutive iterations that changed nothing;
	// sameError counts consecutive iterations that failed alike.
	noProgress int
	lastError  string
	sameError  int
	// transient counts consecutive transient errors, limitWaits
	// consecutive usage-limit waits without a success between them.
	transient  int
	limitWaits int
	// skipped holds the tasks the user set aside for this run (control.go).
	skipped map[string]bool
	// gates is what the run's gates remember (baseline.go).
	gates *gateMemory
	// autoReview: review.when is auto and no gate of the run can reject
	// a task, so a reviewer checks each one (review.go).
	autoReview bool
	// reviews numbers the reviewer runs of iteration reviewIter, for their
	// transcripts (review.go).
	reviews, reviewIter int
	// trailers are the evidence of the task accepted in this iteration,
	// for its commit (verify.go).
	trailers string
	// template is the embedded prompt template, parsed at its first use.
	template *prompt.Template
	// writer writes state.json (save.go).
	writer stateWriter
	// doneMsg is what state.json says of a run that ended well, when it
	// is not "all tasks done" (`ralph review`).
	doneMsg string
	// stop is what ends the run once the iteration is recorded (a full
	// disk: resources.go).
	stop error
	// parallel: the run coordinates --parallel workers, whose acceptance
	// the state does not record (reconcile.go).
	parallel bool
	// refusals counts, per task, the run's commit_refused attempts
	// (held.go).
	refusals map[string]int
	// held is the task the last run accepted whose commit git refused
	// when this run tried it (reconcile), heldWhy what git said: start
	// holds it.
	held, heldWhy string
	// treeSeen: the repository's Changes has a baseline, the working tree
	// as the last iteration left it (commit.go). Waits and pauses clear
	// it: what the user changes meanwhile is not the agent's work.
	treeSeen bool
	// planGates are the plan's Validation Commands as its file said at
	// the run's start, taskGates as it said when each task's first
	// attempt of the run started: a change to them during a task is a
	// guard finding (plangates.go).
	planGates []string
	taskGates map[string][]string
	// routeStart is the plan as the run started: the agents and models
	// its tasks name there are those in force (routeplan.go);
	// routeReported the edits of them a guard finding already named.
	routeStart    *task.Plan
	routeReported map[string]bool
	// transcriptLeft is what the run's transcripts may still store, set
	// once (resources.go).
	transcriptLeft atomic.Int64
	transcriptOnce sync.Once
	// left is what the commits leave out (artefacts.go), shared with
	// the --parallel workers.
	left *leftOut
	// cur and curModel are the agent and model of the iteration the
	// route chose (failover.go); nil: Deps.Agent and Options.Model.
	// standIn is the limited agent cur stands in for; "" when it does
	// not stand in. available is why each
	// agent asked about cannot stand in ("" when it can).
	cur       Agent
	curModel  string
	standIn   string
	available map[string]string
	// revCur, revModel and revStandIn are the same of the reviewer
	// (Deps.ReviewRoute); nil: Deps.Reviewer and Options.Review.Model.
	revCur     Agent
	revModel   string
	revStandIn bool
	// onNote says who runs the iteration about to start, when a route
	// chose: "on codex:gpt-5 (codex stands in for claude, ...)".
	onNote string
}

func newRunner(opts Options, deps Deps) (*runner, error) {
	if deps.Agent == nil || deps.Plan == nil || deps.Store == nil {
		return nil, errors.New("loop: agent, plan and store are required")
	}
	if opts.Ownership == "" {
		opts.Ownership = task.OwnerRunner
	}
	if opts.Ownership != task.OwnerRunner && opts.Ownership != task.OwnerAgent {
		return nil, fmt.Errorf("ownership %q: want runner or agent", opts.Ownership)
	}
	if opts.MaxAttempts < 1 {
		opts.MaxAttempts = 1
	}
	if len(opts.Strategies) == 0 {
		opts.Strategies = completion.DefaultStrategies()
	}
	if opts.Guard != "" && opts.Guard != GuardWarn && opts.Guard != GuardStrict && opts.Guard != GuardOff {
		return nil, fmt.Errorf("guard %q: want warn, strict or off", opts.Guard)
	}
	if opts.CommitTemplate == "" {
		opts.CommitTemplate = config.DefaultCommitTemplate
	}
	if deps.Emit == nil {
		deps.Emit = func(Event) {}
	}
	deps.Agent = priced(deps.Agent, opts.Prices)
	deps.Reviewer = priced(deps.Reviewer, opts.Prices)
	deps.Agents = pricedAll(deps.Agents, opts.Prices, deps.Agent)
	deps.Reviewers = pricedAll(deps.Reviewers, opts.Prices, deps.Reviewer)
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Sleep == nil {
		deps.Sleep = Sleep
	}
	if deps.Jitter == nil {
		deps.Jitter = func(max time.Duration) time.Duration {
			if max <= 0 {
				return 0
			}
			return rand.N(max)
		}
	}
	return &runner{opts: opts, deps: deps, attempts: map[string][]attemptNote{}, left: &leftOut{}, available: map[string]string{},
		planGates: deps.Plan.Plan().Validation, taskGates: map[string][]string{},
		routeStart: snapshotPlan(deps.Plan.Plan()), routeReported: map[string]bool{}}, nil
}

// Sleep waits d, or until ctx is done (its error); the default
// Deps.Sleep.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (r *runner) emit(e Event) {
	e.Time = r.deps.Now()
	e.RunID = r.st.RunID
	r.deps.Emit(e)
}

func (r *runner) run(ctx context.Context) error {
	if r.opts.Only != "" {
		r.doneMsg = "task " + r.opts.Only + " done"
	}
	if err := r.start(ctx); err != nil {
		return err
	}
	err := r.iterate(ctx)
	if err == nil && r.opts.Only == "" {
		// One task of many is no run to review as a whole.
		err = r.endReview(ctx, r.iterate)
	}
	return r.finish(err)
}

// start loads what earlier runs left, checks the gates on the starting
// tree, and records the new run.
func (r *runner) start(ctx context.Context) error {
	if rt := r.deps.Route; rt != nil {
		// Before anything is written or run: a task names an agent or a
		// model the config does not allow, or cannot climb its ladder.
		if err := rt.CheckPlan(r.deps.Plan.Plan()); err != nil {
			return err
		}
	}
	prev, err := r.deps.Store.LoadState()
	if err != nil {
		return err
	}
	now := r.deps.Now()
	id := r.opts.RunID
	if id == "" {
		id = state.NewRunID(now)
	}
	crashed, err := r.recoverCrashed(ctx, prev)
	if err != nil {
		return err
	}
	r.st = state.State{
		RunID:     id,
		Status:    state.StatusRunning,
		Plan:      r.deps.Plan.Plan().Path,
		Agent:     r.deps.Agent.Name(),
		Model:     r.opts.Model,
		StartedAt: now,
		UpdatedAt: now,
		PID:       r.opts.PID,
		Tasks:     prev.Tasks,
		Sandbox:   r.opts.Sandbox,
		Quota:     prev.Quota, // the account's windows outlive a run
		Questions: prev.Questions,
		Held:      prev.Held,
	}
	if r.st.Tasks == nil {
		r.st.Tasks = map[string]state.TaskState{}
	}
	if err := r.loadAttempts(); err != nil {
		return err
	}
	r.holdReconciled(prev.Iteration)
	if err := r.checkHeld(); err != nil {
		return err
	}
	r.startEndReview(ctx, prev)
	if err := r.save(); err != nil {
		return err
	}
	if rec, ok := r.deps.Store.(acceptRecorder); ok {
		// The last run's acceptances are settled (recoverCrashed), and
		// state.json names this run now: their records can go.
		if err := rec.DropAccepting(); err != nil {
			return err
		}
	}
	if err := r.baseline(ctx); err != nil {
		return r.finish(err)
	}
	r.decideReview()
	r.emit(Event{Kind: EventRunStarted, MaxIterations: r.opts.MaxIterations, Plan: r.progress(),
		Message: fmt.Sprintf("agent %s, %s ownership", r.deps.Agent.Name(), r.opts.Ownership) + r.sandboxNote() + r.gatesNote() +
			r.routeNote() + r.reviewNote() + r.quotaNote(),
		Sandbox: r.opts.Sandbox})
	if sb := r.opts.Sandbox; sb != nil && sb.Warning != "" {
		r.emit(Event{Kind: EventWarning, Message: "no sandbox: the agent runs with your access and environment (" +
			sb.Mode + ": " + sb.Warning + ")"})
	}
	if r.opts.NoRepo {
		r.emit(Event{Kind: EventWarning, Message: NoRepoNote})
	}
	if crashed != "" {
		r.emit(Event{Kind: EventWarning, Message: crashed})
	}
	return nil
}

// NoRepoNote is what a run without a repository says once, under its
// header: what it goes without.
const NoRepoNote = "no repository: no guard, no reviewer diff, no rollback"

// iterate runs iterations until something ends the run.
func (r *runner) iterate(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		if err := r.checkpoint(ctx); err != nil {
			return err
		}
		if _, err := r.deps.Plan.Reload(); err != nil {
			return err
		}
		t, ok := r.next()
		if !ok && len(r.st.Pending()) > 0 {
			if err := r.waitForAnswer(ctx); err != nil {
				return err
			}
			continue
		}
		if !ok {
			return r.noneLeft()
		}
		if err := r.checkBudget(); err != nil {
			return err
		}
		if r.opts.MaxIterations > 0 && r.st.Totals.Iterations >= r.opts.MaxIterations {
			return fmt.Errorf("%w: %s done (--max-iterations)", ErrLimit, words.Count(r.st.Totals.Iterations, "iteration"))
		}
		if ok, err := r.routeTask(ctx, t); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		if again, err := r.checkQuota(ctx, t); err != nil || again {
			if err != nil {
				return err
			}
			continue
		}
		it, err := r.runIteration(ctx, t)
		r.priceWarnings()
		if err != nil {
			return err
		}
		if err := r.apply(ctx, t, it); err != nil {
			return err
		}
		if r.opts.Once {
			return r.afterOnce(t, it)
		}
		if r.opts.Delay > 0 {
			if err := r.deps.Sleep(ctx, r.opts.Delay); err != nil {
				return r.interruptedBetween(t)
			}
			r.treeSeen = false
		}
	}
}

// checkBudget stops the run before an iteration would start past the
// budget in money or, for agents that report no cost, in tokens.
func (r *runner) checkBudget() error {
	t := r.st.Totals
	if r.opts.Budget > 0 && t.CostUSD >= r.opts.Budget {
		return fmt.Errorf("%w: budget $%.2f reached (spent %s over %s)", ErrLimit, r.opts.Budget,
			state.FormatCost(t.CostUSD, t.CostSource), words.Count(t.Iterations, "iteration"))
	}
	if used := t.InputTokens + t.OutputTokens + t.CacheReadTokens + t.CacheWriteTokens; r.opts.MaxTokens > 0 && used >= r.opts.MaxTokens {
		return fmt.Errorf("%w: token budget %d reached (used %d over %s)", ErrLimit, r.opts.MaxTokens, used, words.Count(t.Iterations, "iteration"))
	}
	return nil
}

// interruptedBetween records an interrupt that came while no agent ran (a
// wait or the delay), so the last history line says how the run ended.
func (r *runner) interruptedBetween(t task.Task) error {
	now := r.deps.Now()
	rec := state.Record{RunID: r.st.RunID, Iteration: r.st.Iteration, TaskID: t.ID, Attempt: r.st.Tasks[t.ID].Attempts + 1,
		Agent: r.agentNow().Name(), Model: r.modelNow(), StartedAt: now, EndedAt: now, Outcome: state.OutcomeInterrupted,
		CostSource: state.CostEstimated, // no agent ran: $0, known
		Error:      "interrupted while waiting; no agent was running"}
	if err := r.deps.Store.AppendHistory(rec); err != nil {
		return err
	}
	return ErrInterrupted
}

// afterOnce ends a --once run: success when the one iteration finished
// its task, a limit otherwise. A success with tasks left open says so.
func (r *runner) afterOnce(t task.Task, it iteration) error {
	open := r.deps.Plan.Plan().Open()
	if open == 0 {
		return nil
	}
	if it.outcome == state.OutcomeTaskDone || it.outcome == state.OutcomePlanDone {
		r.doneMsg = onceMsg("task "+t.ID+" done", open)
		return nil
	}
	return fmt.Errorf("%w: --once: the iteration ended with %s", ErrLimit, it.outcome)
}

// onceMsg is what a --once run that did its work says: what it did, and
// that the plan is not done.
func onceMsg(did string, open int) string {
	tasks := "tasks are"
	if open == 1 {
		tasks = "task is"
	}
	return fmt.Sprintf("--once: %s; %d %s still open", did, open, tasks)
}

// next picks the next task: the plan's order, passing over those that
// cannot run now (passOver) and, with --task, all others.
func (r *runner) next() (task.Task, bool) {
	if t, ok := r.heldTask(); ok {
		return t, true
	}
	return r.deps.Plan.Plan().Next(func(t task.Task) bool {
		return r.passOver(t) || (r.opts.Only != "" && t.ID != r.opts.Only)
	})
}

// passOver reports a task that cannot run now: failed, set aside
// (skipped), or waiting for an answer. Sequential and parallel runs
// both pick with it.
func (r *runner) passOver(t task.Task) bool {
	return r.st.Tasks[t.ID].Failed || r.skipped[t.ID] || r.waitingForAnswer(t.ID)
}

// noneLeft decides how a run with nothing to pick ends.
func (r *runner) noneLeft() error {
	p := r.deps.Plan.Plan()
	if r.opts.Only != "" {
		return r.onlyLeft(p)
	}
	if p.Open() == 0 {
		return nil
	}
	if err := r.skippedLeft(p); err != nil {
		return err
	}
	if pending := r.st.Pending(); len(pending) > 0 {
		// With --parallel: what is left waits for answers.
		return fmt.Errorf("%w: waiting for an answer to the question of %s (`ralph answer TEXT`, then run again)",
			ErrLimit, pending[0].Task)
	}
	isFailed := func(t task.Task) bool { return r.st.Tasks[t.ID].Failed }
	var failed, blocked []string
	for _, t := range p.Tasks {
		if t.Status == task.StatusFailed || (t.Status != task.StatusDone && isFailed(t)) {
			failed = append(failed, t.ID)
		}
	}
	for _, t := range p.Blocked(isFailed) {
		blocked = append(blocked, t.ID)
	}
	msg := fmt.Sprintf("nothing left but failed tasks (failed: %v", failed)
	if len(blocked) > 0 {
		msg += fmt.Sprintf("; waiting on them: %v", blocked)
	}
	return fmt.Errorf("%w: %s); fix the cause and run `ralph tasks reset ID`", ErrStuck, msg)
}

// finish records how the run ended.
func (r *runner) finish(err error) error {
	err = r.projectGone(err)
	switch {
	case err == nil:
		r.st.Status = state.StatusDone
		r.st.Message = cmp.Or(r.doneMsg, "all tasks done")
	case errors.Is(err, ErrInterrupted):
		r.st.Status = state.StatusInterrupted
		r.st.Message = "interrupted"
	case errors.Is(err, ErrLimit):
		r.st.Status = state.StatusStopped
		r.st.Message = err.Error()
	case errors.Is(err, ErrStuck):
		r.st.Status = state.StatusStuck
		r.st.Message = err.Error()
	default:
		r.st.Status = state.StatusFailed
		r.st.Message = runMessage(err)
	}
	if len(r.st.Accepting) == 0 {
		r.st.CurrentTask, r.st.CurrentAgent, r.st.CurrentModel = "", "", ""
	} // else it stops inside an acceptance (its history line failed): the next run finishes it, as after a crash
	r.st.WaitingUntil = nil
	if p, ok := r.deps.Store.(preparer); ok {
		p.DropPrepared() // the iteration they were made for will not come
	}
	// Durably: the process exits or the next run starts from here.
	if serr := r.save(); serr != nil && err == nil {
		err = serr
	}
	totals := r.st.Totals
	r.emit(Event{Kind: EventRunEnded, Status: r.st.Status, Message: r.st.Message, Plan: r.progress(), Totals: &totals})
	return err
}

// progress counts the plan's tasks for events. It runs twice an
// iteration, so it hashes no id unless the state has failed tasks (most
// runs have none): one pass over the statuses.
func (r *runner) progress() *PlanProgress {
	p := r.deps.Plan.Plan()
	pp := &PlanProgress{Path: p.Path, Format: p.Format, Total: len(p.Tasks)}
	failedInState := false
	for _, ts := range r.st.Tasks {
		if ts.Failed {
			failedInState = true
			break
		}
	}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		switch {
		case t.Status == task.StatusDone:
			pp.Done++
		case t.Status == task.StatusFailed || (failedInState && r.st.Tasks[t.ID].Failed):
			pp.Failed++
		}
	}
	return pp
}

// sandboxNote names the sandbox in force for the run header.
func (r *runner) sandboxNote() string {
	if r.opts.Sandbox == nil {
		return ""
	}
	note := ", sandbox " + r.opts.Sandbox.Kind
	if h := r.opts.Sandbox.Hooks; h != "" {
		note += ", " + h
	}
	return note
}

// onlyLeft decides how a --task run with nothing to pick ends: its task
// done is success, failed is stuck (exit 4), and a task that cannot start
// says why.
func (r *runner) onlyLeft(p *task.Plan) error {
	t, ok := p.Task(r.opts.Only)
	switch {
	case !ok:
		return fmt.Errorf("--task %s: no such task in %s", r.opts.Only, p.Path)
	case t.Status == task.StatusDone:
		return nil
	case t.Status == task.StatusFailed || r.st.Tasks[t.ID].Failed:
		return fmt.Errorf("%w: task %s failed; fix the cause and run `ralph tasks reset %s`", ErrStuck, t.ID, t.ID)
	case r.skipped[t.ID]:
		return fmt.Errorf("%w: task %s skipped", ErrLimit, t.ID)
	}
	var waiting []string
	for _, d := range t.DependsOn {
		if dt, ok := p.Task(d); !ok || dt.Status != task.StatusDone {
			waiting = append(waiting, d)
		}
	}
	return fmt.Errorf("%w: task %s waits on %s, not done yet", ErrStuck, t.ID, strings.Join(waiting, ", "))
}
