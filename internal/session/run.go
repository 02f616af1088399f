package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/completion"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/gate"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/price"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/redact"
	"github.com/ralph-loop/ralph/internal/route"
	"github.com/ralph-loop/ralph/internal/sandbox"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/tracker"
	ghtracker "github.com/ralph-loop/ralph/internal/tracker/github"
	"github.com/ralph-loop/ralph/internal/ui"
	"github.com/ralph-loop/ralph/internal/vcs"
	"github.com/ralph-loop/ralph/internal/words"
)

// Options are what a command asks of a run beyond its configuration.
type Options struct {
	// Config loads the run's configuration for a project directory: the
	// files, the environment and the command's flags over them. A
	// --worker's task run loads it again in its task's worktree.
	Config func(dir string) (config.Config, error)
	// Plan is the plan the command named ("" for the config's).
	Plan string
	Once bool
	// Task is the one task to run (--task).
	Task string
	// Worker: claim tasks from the remote until none is left (--worker).
	Worker bool
	Dry    bool
	NoTUI  bool
	JSON   bool
	// PRFeedback is the pull request whose feedback is the plan.
	PRFeedback int
	// Serve is the address of the page --serve shows the run on; "" for
	// none.
	Serve string
	// CLIAgent and CLIModel are the command line's --agent and --model,
	// when given: stronger than a task's own (route.Config).
	CLIAgent, CLIModel string

	f *Host
	// dir, when set, is the project directory instead of -C's; workerID
	// tags the events of a --worker's task run, which runs in its task's
	// worktree (inWorktree).
	dir        string
	workerID   string
	inWorktree bool
	// budgetLeft and tokensLeft, when above 0, are what a --worker has
	// left of --budget and --max-tokens for its next task.
	budgetLeft float64
	tokensLeft int
}

// ErrReported wraps the error of a run whose renderer already showed how
// it ended: the exit code says the rest.
var ErrReported = errors.New("already reported")

// Worker is `ralph run --worker`: one of many workers on one plan,
// claiming tasks from the remote until none is left.
func Worker(ctx context.Context, f *Host, opts Options) error {
	opts.f = f
	return runWorker(ctx, &opts)
}

// PRFeedback makes pull request opts.PRFeedback's failing checks and
// review comments the plan, and works it until the pull request is green.
func PRFeedback(ctx context.Context, f *Host, opts Options) error {
	if opts.PRFeedback <= 0 || opts.Plan != "" {
		return usageError(errors.New("--pr-feedback N takes a pull request number and no PLAN"))
	}
	opts.f = f
	return prFeedback(ctx, &opts)
}

// A Run is one run of the plan, put together by Open from the
// configuration, the project directory and the command's options: the
// plan (or the tracker it comes from), the sandbox with the agents' homes
// and the egress proxy, the agent and the reviewer, the gates, and what
// the run checked before anything changed. Run starts it; Close gives
// back what Open took, whether or not it ran.
type Run struct {
	f    *Host
	opts *Options
	// programs is how ralph finds the programs it starts outside the
	// sandbox (git, bwrap, sh), skipping what the agent can write.
	programs *proc.Outside
	dir      string
	cfg      config.Config
	// gh is the tracker of a github: plan; offline says why it is not
	// written back to ("" when it is).
	gh      *ghtracker.Client
	offline string
	plan    *task.File
	// nothing is set when a tracker's query has no open issue: there is
	// nothing to run.
	nothing  bool
	sb       runSandbox
	ag       runAgent
	reviewer loop.Agent
	// agents are the routes of the run and of its reviewer, and every
	// agent they may name.
	agents agents
	lopts  loop.Options
	gates  runGates
	// notReady is what would stop the run before anything changes.
	notReady error
	// routeNote says the plan's tasks name other agents or models than
	// those in force ("" when they do not).
	routeNote string
}

// Open puts a run together without changing anything: no branch, no
// state, no agent call. An error names what the run cannot work with.
func Open(ctx context.Context, f *Host, opts Options) (*Run, error) {
	opts.f = f
	r := &Run{f: f, opts: &opts, dir: opts.dir}
	if r.dir == "" {
		d, err := f.ProjectDir()
		if err != nil {
			return nil, err
		}
		r.dir = d
	}
	if err := r.openPlan(ctx); err != nil || r.nothing {
		return r, err
	}
	if err := r.openAgents(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// openPlan loads the configuration and the plan: a github: plan is
// fetched into its snapshot first, which is the plan.
func (r *Run) openPlan(ctx context.Context) error {
	cfg, err := r.opts.Config(r.dir)
	if err != nil {
		return err
	}
	if r.opts.Plan != "" {
		// The plan the command named; a --worker's task run and a pull
		// request's feedback round name their own.
		cfg.Tasks = r.opts.Plan
	}
	// Before any program is looked for: git, bwrap, gh, sh.
	r.programs = proc.OutsideOf(r.f.withPrograms(ctx, cfg, r.dir))
	ctx = proc.WithOutside(ctx, r.programs)
	if err := config.CheckProjectSecrets(r.dir, r.f.ConfigFile); err != nil {
		return err
	}
	if r.opts.budgetLeft > 0 {
		cfg.Budget = r.opts.budgetLeft
	}
	if r.opts.tokensLeft > 0 {
		cfg.MaxTokens = r.opts.tokensLeft
	}
	r.cfg = cfg
	if r.gh, r.offline, err = SyncTrackerPlan(ctx, r.f, r.dir, cfg); err != nil {
		return err
	}
	if r.plan, err = OpenPlan(r.dir, cfg.Tasks); err != nil {
		return err
	}
	if len(r.plan.Plan().Tasks) == 0 {
		if IsTrackerPlan(cfg.Tasks) {
			// An empty query is a state of the tracker, not a mistake.
			fmt.Fprintf(r.f.IO.ErrOut, "ralph: nothing to do: %s has no open issue for ralph\n", cfg.Tasks)
			r.nothing = true
			return nil
		}
		return fmt.Errorf("%s has no tasks: add one (ralph tasks add TITLE) or name another plan", words.Rel(r.dir, r.plan.Path()))
	}
	return r.f.approvePlanLink(r.dir, r.plan.Path())
}

// openAgents picks the sandbox and builds the agent, the reviewer, the
// loop's options and the gates, then checks every precondition.
func (r *Run) openAgents(ctx context.Context) error {
	ctx = proc.WithOutside(ctx, r.programs)
	f, cfg, dir, plan := r.f, r.cfg, r.dir, r.plan
	// Before any agent runs: an explicit sandbox that cannot work stops
	// the run here.
	var err error
	if r.sb, err = chooseSandbox(ctx, f, cfg, dir); err != nil {
		return err
	}
	if r.ag, err = newAgent(f, cfg, r.sb); err != nil {
		return err
	}
	if r.lopts, err = loopOptions(f, dir, cfg); err != nil {
		return err
	}
	r.lopts.Once = r.opts.Once
	r.lopts.Only = r.opts.Task
	if r.opts.Task != "" {
		if _, ok := plan.Plan().Task(r.opts.Task); !ok {
			return usageError(fmt.Errorf("--task %s: no such task in %s", r.opts.Task, words.Rel(dir, plan.Path())))
		}
		if cfg.Parallel > 1 {
			return usageError(errors.New("--task runs one task: drop --parallel"))
		}
	}
	r.lopts.Sandbox = r.sb.record()
	if err := verifyOptions(f, dir, cfg, &r.lopts); err != nil {
		return err
	}
	if r.reviewer, err = newReviewer(f, cfg, plan.Plan().Validation, r.sb); err != nil {
		return err
	}
	if err := r.openRoutes(); err != nil {
		return err
	}
	if err := r.openGates(); err != nil {
		return err
	}
	// Every precondition, before anything changes: no branch, state or
	// agent call on a run that cannot work.
	check := preflightCheck{dir: dir, cfg: cfg, plan: plan, agent: r.ag.Adapter, env: f.Environ(), keepBranch: r.opts.inWorktree}
	if rv, ok := r.reviewer.(runAgent); ok {
		check.reviewer = rv.Adapter
	}
	r.notReady = preflightErr(preflight(ctx, check))
	return nil
}

// openGates fixes the run's gates: the project's, then the plan's
// Validation Commands in force when the run starts.
func (r *Run) openGates() error {
	validation, validationNote, err := r.f.planGates(r.plan.Plan())
	if err != nil {
		return err
	}
	// What the found toolchains leave in the tree stays out of commits.
	r.lopts.Artefacts = gate.Artefacts(r.dir, slices.Concat(r.cfg.Gates.Commands, validation))
	r.gates = runGates{configured: r.cfg.Gates.Commands, validation: validation, validationNote: validationNote,
		reviewed: reviewsTasks(r.cfg, validation)}
	if len(r.cfg.Gates.Commands) == 0 {
		// Only worth a look when the config names no gate.
		r.gates.found = DetectChecks(r.f, r.dir)
	}
	// The agents and models the plan's tasks name in force, as its
	// Validation Commands are.
	routes, note, err := r.f.planRoutes(r.plan.Plan())
	if err != nil {
		return err
	}
	r.routeNote = note
	if routes != nil {
		r.lopts.RouteInForce = func(id string) (string, string) { return routes[id].Agent, routes[id].Model }
	}
	return nil
}

// projectGates are the gates the loop runs, nil when there is none: the
// project's, then the plan's Validation Commands in force, fixed for the
// run: what the agent writes in the plan is a guard finding, not a gate.
func (r *Run) projectGates() *gates {
	if len(r.cfg.Gates.Commands) == 0 && len(r.gates.validation) == 0 {
		return nil
	}
	validation := r.gates.validation
	return &gates{r: &gate.Runner{Dir: r.dir, Commands: r.cfg.Gates.Commands, Timeout: r.cfg.Gates.Timeout.D(),
		Env: r.f.Environ(), TaskCommands: func(string) []string { return validation },
		Sandbox: r.sb.gates(), Fresh: r.sb.gateCaches()}}
}

// DryRun prints what the next iteration would run, and runs nothing; an
// error says what would stop the run.
func (r *Run) DryRun(w io.Writer) error {
	if r.nothing {
		return nil
	}
	deps := loop.Deps{Agent: r.ag, Plan: r.plan}
	r.agents.deps(&deps, nil)
	if err := dryRun(w, r.f, r.lopts, deps, r.gates, r.ag.box, r.agents.rule); err != nil {
		return err
	}
	if r.notReady != nil {
		return fmt.Errorf("a run would not start: %w", r.notReady)
	}
	return nil
}

// Close gives back what Open took: the sandbox, the agents' homes.
func (r *Run) Close() {
	r.sb.closeHomes()
	r.sb.close()
}

// Run runs the plan to its end or a limit: the state is locked, the
// branch made, the gates' baseline checked, and the loop runs with every
// event through the run's one pipeline (events.go). pr is the pull request
// the run opened or updated, if any.
func (r *Run) Run(ctx context.Context) (pr *tracker.PullResult, err error) {
	if r.nothing {
		return nil, nil
	}
	if r.notReady != nil {
		return nil, r.notReady
	}
	ctx = proc.WithOutside(ctx, r.programs)
	if r.gh != nil && r.offline == "" {
		// Write-back needs write access: a token without it stops the run
		// here, before any work, not at the first write-back.
		if err := r.gh.CheckWrite(ctx); err != nil {
			return nil, err
		}
	}
	store, release, err := state.OpenLocked(r.dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = release() }()
	// The plan's fsyncs join the store's: the loop's barrier covers both.
	crashed, err := stopCrashed(r.f, store)
	if err != nil {
		return nil, err
	}
	// Every process the run starts from here on dies with it.
	r.lopts.RunID = state.NewRunID(time.Now())
	ctx, life := family(ctx, r.f, r.lopts.RunID)
	defer life.Close()
	pre, deps, err := r.start(ctx, store, crashed)
	if err != nil {
		return nil, err
	}
	// q in the TUI stops the run as Ctrl-C does; p and s steer it.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer stopOnBrokenPipe(stop)()
	ev, err := r.openEvents(ctx, store, life, stop, &deps)
	if err != nil {
		return nil, err
	}
	defer ev.release()
	r.warnings(ev, deps.Gate != nil)
	if g, ok := pre.repo.(*vcs.Git); ok {
		g.NestedRepo = func(news vcs.RepoNews) { ev.warn(nestedRepoWarning(news)) }
	}
	err = pre.run(ctx, r.lopts, deps)
	if ev.wb != nil {
		// The tasks it started and left unfinished are no longer in
		// progress.
		ev.wb.stopped(r.plan.Plan(), stopReason(err))
	}
	pr, err = r.publish(ctx, store, ev, err)
	// No agent is at work any more: the last of what they changed in
	// their configuration is told while the renderer still shows it.
	r.sb.closeHomes()
	life.detach()
	ev.close(err)
	if errors.Is(err, loop.ErrLimit) || errors.Is(err, loop.ErrStuck) || errors.Is(err, loop.ErrInterrupted) {
		// The renderer showed how the run ended; the exit code says the rest.
		return pr, fmt.Errorf("%w: %w", ErrReported, err)
	}
	return pr, err
}

// run opens the run opts ask for, runs it (or prints its dry run) and
// closes it: a --worker's task runs, a pull request's feedback rounds.
func run(ctx context.Context, opts *Options) error {
	r, err := Open(ctx, opts.f, *opts)
	if err != nil {
		return err
	}
	defer r.Close()
	if opts.Dry {
		return r.DryRun(opts.f.IO.Out)
	}
	_, err = r.Run(ctx)
	return err
}

// start is the last of the preconditions and the run's first changes:
// the repository checked, the gates' baseline, the branch, the setup
// commit; it returns the loop's dependencies but for Emit.
func (r *Run) start(ctx context.Context, store *state.Store, crashed bool) (*session, loop.Deps, error) {
	cfg, plan := r.cfg, r.plan
	pre, err := prerun(ctx, r.f, r.dir, cfg, plan, crashed, r.opts.inWorktree)
	if err != nil {
		return nil, loop.Deps{}, err
	}
	projectGates := r.projectGates()
	if projectGates != nil && !pre.leftover && plan.Plan().Open() > 0 && pre.treeIsStart(ctx) {
		// The gates' baseline is the last precondition: one that fails
		// leaves no branch and no run behind, and is said once.
		if r.lopts.Baseline, err = loop.CheckBaseline(ctx, *projectGates, cfg.AllowFailingGates, pre.repoDep()); err != nil {
			return nil, loop.Deps{}, err
		}
	}
	if err := pre.begin(ctx); err != nil {
		return nil, loop.Deps{}, err
	}
	if g, ok := pre.repo.(*vcs.Git); ok {
		// The hooks ralph's commits run are as confined as the agent: they
		// may run project code it wrote.
		g.Hooks = r.sb.hooks()
		r.lopts.Sandbox.Hooks = g.HookUse(ctx, g.Hooks != nil, cfg.GitHub.PR)
	}
	if _, err := state.EnsureGitignore(r.dir); err != nil {
		return nil, loop.Deps{}, err
	}
	if err := pre.commitSetup(ctx, cfg); err != nil {
		return nil, loop.Deps{}, err
	}
	deps := loop.Deps{Agent: r.ag, Plan: plan, Store: store, Repo: pre.repoDep(), Trees: treesDep(pre.repo),
		Network: r.sb.network()}
	if projectGates != nil {
		deps.Gate = *projectGates
	}
	r.lopts.NoRepo = pre.repo == nil
	if deps.Trees != nil {
		r.lopts.GuardConfigFiles = guardPaths(pre.repo.Dir(), r.lopts.GuardConfigFiles)
		r.lopts.RepoDir = pre.repo.Dir()
		r.lopts.OwnFiles = loopOwnFiles(pre.repo.Dir(), r.dir, r.f.ralphFiles(cfg, r.dir))
	}
	if r.reviewer != nil {
		deps.Reviewer = r.reviewer
	}
	r.agents.deps(&deps, r.available)
	r.lopts.SkipBaseline = pre.leftover
	return pre, deps, nil
}

// warnings are what the run says once its events are shown: gates that
// are off, the sandbox's words on the gates' caches, a tracker that is
// not written back to, plan gates not in force.
func (r *Run) warnings(ev *events, hasGates bool) {
	if msg := r.gates.warning(); msg != "" {
		ev.warn(msg)
	}
	if hasGates {
		for _, msg := range r.sb.gateWarnings() {
			ev.warn(msg)
		}
	}
	if r.offline != "" {
		ev.warn(r.offline)
	}
	if r.gates.validationNote != "" {
		ev.warn(r.gates.validationNote)
	}
	if r.routeNote != "" {
		ev.warn(r.routeNote)
	}
}

// publish opens or updates the run's pull request when github.pr asks
// for one and the run ended without an error of its own.
func (r *Run) publish(ctx context.Context, store *state.Store, ev *events, runErr error) (*tracker.PullResult, error) {
	if !r.cfg.GitHub.PR || runErr != nil && !errors.Is(runErr, loop.ErrLimit) && !errors.Is(runErr, loop.ErrStuck) {
		return nil, runErr
	}
	var prs tracker.PullRequests // nil: the repository prRepo names
	if r.gh != nil {
		prs = r.gh
	}
	res, err := publishPR(ctx, r.f, r.dir, r.cfg, r.plan.Plan(), store, prs, r.sb.gates())
	if err != nil {
		ev.warn("pull request: " + err.Error())
		return nil, cmp.Or(runErr, err)
	}
	return &res, runErr
}

// gates adapts the gate runner to the loop's Gate and CommandGate.
type gates struct{ r *gate.Runner }

func (g gates) Check(ctx context.Context, t task.Task) (bool, string, error) {
	return g.r.Run(ctx, t.ID)
}

func (g gates) ProjectCommands() []string { return g.r.Commands }

func (g gates) TaskCommands(t task.Task) []string {
	if g.r.TaskCommands == nil {
		return nil
	}
	return g.r.TaskCommands(t.ID)
}

func (g gates) RunCommand(ctx context.Context, command string) (loop.GateResult, error) {
	res, err := g.r.RunCommand(ctx, command)
	return loop.GateResult{ExitCode: res.ExitCode, Output: res.Output, Duration: res.Duration, TimedOut: res.TimedOut}, err
}

// chooseRenderer picks JSON, plain lines, or the TUI on a terminal, and
// adds the notifications [notify] asks for.
func chooseRenderer(opts *Options, v runView) (ui.Renderer, error) {
	return newRenderer(opts.f, opts.NoTUI, opts.JSON, v)
}

// OpenPlan finds and loads the plan.
func OpenPlan(dir, configured string) (*task.File, error) {
	path := configured
	if IsTrackerPlan(path) {
		p, err := trackerPlanFile(dir, path)
		if err != nil {
			return nil, err
		}
		path = p
	}
	if path == "" {
		p, err := task.Discover(dir)
		if err != nil {
			return nil, err
		}
		path = p
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	// The plan stays in the project; a link out of it that is there
	// before the run is the user's (a shared plan) and is kept to for the
	// run, while one the agent makes during it is refused.
	return task.LoadIn(dir, path, true)
}

// loopOptions maps the config onto the loop's options.
func loopOptions(f *Host, dir string, cfg config.Config) (loop.Options, error) {
	strategies, err := completion.ParseStrategies(cfg.Completion)
	if err != nil {
		return loop.Options{}, err
	}
	o := loop.Options{
		Dir: dir, Model: cfg.Model, Ownership: task.Ownership(cfg.Ownership),
		MaxIterations: cfg.MaxIterations, MaxAttempts: cfg.MaxAttempts,
		Timeout: cfg.Timeout.D(), IdleTimeout: cfg.IdleTimeout.D(), Grace: cfg.Grace.D(),
		Delay: cfg.Delay.D(), MaxWait: cfg.MaxWait.D(), Budget: cfg.Budget,
		Strategies: strategies, Commit: !cfg.NoCommit, CommitTemplate: cfg.CommitTemplate, StuckThreshold: cfg.Stuck,
		Env: f.Environ(), PID: os.Getpid(), MaxTokens: int64(cfg.MaxTokens),
		TranscriptMax: int64(cfg.TranscriptMax) << 20, TranscriptMaxRun: int64(cfg.TranscriptMaxRun) << 20, AllowFailingGates: cfg.AllowFailingGates,
		Prices: priceTable(cfg), QuotaReserve: cfg.QuotaReserve, QuotaWindows: cfg.QuotaWindows, QuotaAction: cfg.QuotaAction,
	}
	if cfg.Prompt != "" {
		b, err := readPromptFile(dir, cfg.Prompt)
		if err != nil {
			return o, fmt.Errorf("--prompt: %w", err)
		}
		o.Prompt, o.PromptName = string(b), cfg.Prompt
	}
	return o, nil
}

// priceTable is the built-in price table with the config's prices.
func priceTable(cfg config.Config) *price.Table {
	overrides := make(map[string]price.Override, len(cfg.Prices))
	for model, p := range cfg.Prices {
		overrides[model] = price.Override{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite}
	}
	return price.Builtin().With(overrides)
}

// dryRun prints what the next iteration would run, and runs nothing:
// with a sandbox, its exact command line and the environment it passes
// in.
func dryRun(w io.Writer, f *Host, opts loop.Options, deps loop.Deps, gates runGates, box *sandbox.Box, rule *route.Rule) error {
	pv, err := loop.Preview(opts, deps)
	if err != nil {
		return err
	}
	if pv.Task == nil {
		fmt.Fprintln(w, "# nothing to run: no open task")
		return nil
	}
	fmt.Fprintf(w, "# task: %s - %s\n", pv.Task.ID, pv.Task.Title)
	if pv.Route != "" {
		fmt.Fprintf(w, "# route: %s\n", pv.Route)
	}
	routeTasks(w, deps.Plan.Plan(), rule, opts.RouteInForce)
	if t, ok := deps.Plan.Plan().Task(pv.Task.ID); ok && rule != nil {
		// The task's own agent runs in its own box (its configuration
		// directories, its hosts).
		if a, ok := deps.Agents[rule.Start(t).Agent].(runAgent); ok {
			box = a.box
		}
	}
	fmt.Fprintf(w, "# prompt passed via: %s\n", pv.Invocation.Prompt)
	argv, passed := pv.Invocation.Argv, []string(nil)
	if opts.Sandbox != nil {
		fmt.Fprintf(w, "# sandbox: %s\n", opts.Sandbox)
	}
	if spec, _ := agent.Lookup(deps.Agent.Name()); box != nil && box.Kind() == sandbox.KindBwrap && len(spec.ConfigDirs) > 0 {
		// Made when the agent starts: not in the command line below.
		fmt.Fprintf(w, "# the agent's own configuration: a per-run copy, mounted in its place: %s\n",
			cmp.Or(strings.Join(configPaths(spec, f.Environ()), ", "), "(none yet)"))
	}
	if box != nil {
		req := pv.Request
		req.Sandbox = box
		if l, err := agent.Command(pv.Invocation, req); err == nil {
			argv, passed = l.Argv, l.Env
		} else {
			fmt.Fprintf(w, "# (no sandbox command line: %v)\n", err)
		}
	}
	fmt.Fprintln(w, "# argv:")
	for _, a := range argv {
		if a == pv.Prompt {
			a = "<prompt>"
		}
		fmt.Fprintf(w, "  %s\n", ShellQuote(redact.String(a)))
	}
	fmt.Fprintln(w, "# environment changes:")
	if len(pv.Invocation.EnvSet) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, kv := range pv.Invocation.EnvSet {
		fmt.Fprintf(w, "  %s\n", redact.Env(kv))
	}
	if passed != nil {
		fmt.Fprintln(w, "# environment passed into the sandbox (the rest of ralph's is dropped):")
		for _, kv := range passed {
			fmt.Fprintf(w, "  %s\n", redact.Env(kv))
		}
	}
	gates.dryRun(w)
	fmt.Fprintln(w, "# prompt:")
	_, err = fmt.Fprintln(w, redact.String(pv.Prompt))
	return err
}

// routeTasks prints the agent and model each open task starts on, when
// a task names its own or the run escalates or falls over.
func routeTasks(w io.Writer, p *task.Plan, rule *route.Rule, inForce func(string) (string, string)) {
	if rule == nil {
		return
	}
	named := rule.HasFallback() || rule.Escalates()
	for _, t := range p.Tasks {
		named = named || t.Agent != "" || t.Model != ""
	}
	if !named {
		return
	}
	fmt.Fprintln(w, "# each open task starts on:")
	for _, t := range p.Tasks {
		if t.Status == task.StatusDone {
			continue
		}
		if inForce != nil {
			t.Agent, t.Model = inForce(t.ID)
		}
		ch := rule.Start(t)
		fmt.Fprintf(w, "  %s  %s (%s)\n", t.ID, route.Pair{Agent: ch.Agent, Model: ch.Model}, ch.Why)
	}
}

// ShellQuote quotes s for a POSIX shell, when it needs quoting.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		safe := r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		return !safe
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// nestedRepoWarning tells of a repository nested in the working tree
// that appeared, or whose git directory moved (vcs.Git.NestedRepo): as a
// gitlink, it is entered by git status, the user's included, which obeys
// the configuration it finds there.
func nestedRepoWarning(news vcs.RepoNews) string {
	if news.GitDir == "" {
		return fmt.Sprintf("a repository of its own appeared at %s/: committed (a gitlink), git status, yours too, runs git in it, "+
			"which obeys %s/.git/config (core.fsmonitor names a program): read that file before you run git in this project", news.Path, news.Path)
	}
	if news.PutBack {
		return fmt.Sprintf("the git directory of the repository at %s/ was moved to %s (its .git file, or a commondir file in its "+
			"git directory, rewritten): git status, yours too, would have obeyed the configuration there; ralph put it back", news.Path, news.GitDir)
	}
	return fmt.Sprintf("the repository at %s/ now takes its git directory from %s (its .git, or a commondir file, was rewritten): "+
		"git status, yours too, runs git in it, which obeys the configuration there (core.fsmonitor names a program): "+
		"read it before you run git in this project", news.Path, news.GitDir)
}
