package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/completion"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/gate"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/price"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/redact"
	"github.com/ralph-loop/ralph/internal/sandbox"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/tracker"
	"github.com/ralph-loop/ralph/internal/ui"
	"github.com/ralph-loop/ralph/internal/vcs"
)

type runOptions struct {
	f    *Factory
	Plan string
	Once bool
	// Task is the one task to run (--task).
	Task string
	// Worker: claim tasks from the remote until none is left (--worker).
	Worker bool
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
	Dry        bool
	NoTUI      bool
	JSON       bool
	// PRFeedback is the pull request whose feedback is the plan.
	PRFeedback int
	// Serve is the address of the page --serve shows the run on; "" for
	// none.
	Serve string
	// flags holds the command's flags; the changed ones that are config
	// keys override the config.
	flags *pflag.FlagSet
}

const runLong = `Run the agent in a loop until every task of the plan is done.

Each iteration starts a fresh agent process on the next open task (priority,
then file order, dependencies first), reads what it streams, decides what
happened and records it in .ralph/history.jsonl.

PLAN defaults to the tasks key of ralph.toml, then the first of prd.json,
tasks.json, progress.md, IMPLEMENTATION_PLAN.md, fix_plan.md.

Before anything changes (a branch, .ralph/, an agent call) the run checks
that it can work, as ralph doctor does: the agent is installed, the plan
is writable, the working tree has no changes but ralph's own, HEAD is on
a branch, the plan's branchName is one git can make. --dry-run prints the
preview, then exits 1 with what would stop the run.

Before the first agent call the [gates] commands run once on the starting
tree: one that already fails stops the run (exit 1), unless
--allow-failing-gates makes it advisory for the run.

--task ID runs that task alone, to its end: exit 0 when it is done, 4 when
it failed (or waits on tasks not done), 3 when a limit stopped it.
--worker is one of many workers on one plan: it claims the next ready task
on the remote (--remote, through refs/ralph/claims/), works it in a fresh
worktree, lands it on the run branch, and repeats until nothing is left to
claim: exit 0 when the plan is done, 4 when only failed tasks are left, 3
when a limit stopped it. ralph status --remote shows who works on what.

PLAN may be github:OWNER/REPO: the repository's open issues labelled ralph
(--label, --milestone, --assignee) are the plan, written back to as the
run goes; --pr ends the run at a pull request.

Every flag but --once, --task, --worker, --dry-run, --no-tui, --json,
--pr-feedback and --serve is also a key of ralph.toml and an environment variable
RALPH_<KEY> (RALPH_MAX_ITERATIONS; [worker] keys: RALPH_WORKER_REMOTE, ...).

While it runs, .ralph/run.sock is its control channel (ralph serve and
ralph answer use it), and --serve shows it on a page (see ralph serve).

Exit codes:
  0    all tasks done
  1    error: bad input or config, agent missing, fatal agent error, lock held
  2    usage: bad flags or arguments
  3    a limit stopped the run with tasks open (iterations, budget, wait)
  4    stuck: no progress or the same error too often, or only failed tasks left
  130  interrupted: Ctrl-C, SIGTERM, SIGHUP (the terminal closed), SIGQUIT`

func newCmdRun(f *Factory, runF func(*runOptions) error) *cobra.Command {
	opts := &runOptions{f: f}
	cmd := &cobra.Command{
		Use:   "run [PLAN]",
		Short: "Run the agent in a loop until the plan is done",
		Long:  runLong,
		Args: func(cmd *cobra.Command, a []string) error {
			_, rest := serveArg(cmd, opts, a)
			return args(cobra.MaximumNArgs(1))(cmd, rest)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			if addr, rest := serveArg(cmd, opts, a); addr != "" {
				opts.Serve, a = addr, rest
			}
			if len(a) == 1 {
				opts.Plan = a[0]
			}
			opts.flags = cmd.Flags()
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	addKeyFlags(fl, "run")
	fl.BoolVar(&opts.Once, "once", false, "run one iteration and stop")
	fl.StringVar(&opts.Task, "task", "", "run only task `ID`, to its end (done, failed or a limit)")
	fl.BoolVar(&opts.Worker, "worker", false, "claim ready tasks on the remote, one after another, until none is left (many workers share one plan)")
	fl.BoolVar(&opts.Dry, "dry-run", false, "print the agent command, environment changes and prompt; run nothing")
	fl.BoolVar(&opts.NoTUI, "no-tui", false, "plain line output even on a terminal")
	fl.BoolVar(&opts.JSON, "json", false, "one JSON event per line on stdout")
	fl.IntVar(&opts.PRFeedback, "pr-feedback", 0, "make pull request `N`'s failing checks and review comments the plan; fix, push, answer, until green")
	fl.StringVar(&opts.Serve, "serve", "", "show the run on a page at `ADDR` (alone: "+DefaultServeAddr+"); see ralph serve")
	fl.Lookup("serve").NoOptDefVal = DefaultServeAddr
	return cmd
}

// addKeyFlags registers the flags of command that are config keys, as
// the key table declares them.
func addKeyFlags(fl *pflag.FlagSet, command string) {
	for _, k := range config.Flags(command) {
		switch def := k.Default.(type) {
		case string:
			fl.StringP(k.Name, k.Shorthand, def, k.Usage)
		case int:
			fl.IntP(k.Name, k.Shorthand, def, k.Usage)
		case float64:
			fl.Float64P(k.Name, k.Shorthand, def, k.Usage)
		case bool:
			fl.BoolP(k.Name, k.Shorthand, def, k.Usage)
		case time.Duration:
			fl.DurationP(k.Name, k.Shorthand, def, k.Usage)
		case []string:
			// One comma-separated value, as in the environment.
			fl.StringP(k.Name, k.Shorthand, strings.Join(def, ","), k.Usage)
		default:
			panic(fmt.Sprintf("cli: no flag type for key %s (%T)", k.Key, def))
		}
	}
}

// applyKeyFlags sets the keys whose flags of command were given on the
// command line, over the config files and environment.
func applyKeyFlags(cfg *config.Config, fl *pflag.FlagSet, command string) error {
	for _, k := range config.Flags(command) {
		f := fl.Lookup(k.Name)
		if f == nil || !f.Changed {
			continue
		}
		if err := cfg.Set(k.Key, f.Value.String()); err != nil {
			// The config error names the key; on the command line it is a flag.
			msg := err.Error()
			if rest, ok := strings.CutPrefix(msg, k.Key+": "); ok {
				msg = rest
			}
			return usageError(fmt.Errorf("--%s: %s", k.Name, msg))
		}
	}
	return nil
}

// runConfig layers the changed flags over the config files and environment.
func runConfig(opts *runOptions, dir string) (config.Config, error) {
	cfg, err := opts.f.Config(dir)
	if err != nil {
		return cfg, err
	}
	if err := applyKeyFlags(&cfg, opts.flags, "run"); err != nil {
		return cfg, err
	}
	if opts.Plan != "" {
		cfg.Tasks = opts.Plan
	}
	return cfg, cfg.Validate()
}

func runRun(ctx context.Context, opts *runOptions) error {
	if opts.Worker {
		return runWorker(ctx, opts)
	}
	if opts.PRFeedback != 0 {
		if opts.PRFeedback < 0 || opts.Plan != "" {
			return usageError(errors.New("--pr-feedback N takes a pull request number and no PLAN"))
		}
		return prFeedback(ctx, opts)
	}
	dir := opts.dir
	if dir == "" {
		d, err := opts.f.ProjectDir()
		if err != nil {
			return err
		}
		dir = d
	}
	cfg, err := runConfig(opts, dir)
	if err != nil {
		return err
	}
	// Before any program is looked for: git, bwrap, gh, sh.
	ctx = opts.f.withPrograms(ctx, cfg, dir)
	if err := secretsInProject(opts.f, dir); err != nil {
		return err
	}
	if opts.budgetLeft > 0 {
		cfg.Budget = opts.budgetLeft
	}
	if opts.tokensLeft > 0 {
		cfg.MaxTokens = opts.tokensLeft
	}
	// A github: plan is fetched into its snapshot, which is the plan.
	gh, offline, err := syncTrackerPlan(ctx, opts.f, dir, cfg)
	if err != nil {
		return err
	}
	plan, err := openPlan(dir, cfg.Tasks)
	if err != nil {
		return err
	}
	if len(plan.Plan().Tasks) == 0 {
		if isTrackerPlan(cfg.Tasks) {
			// An empty query is a state of the tracker, not a mistake.
			fmt.Fprintf(opts.f.IO.ErrOut, "ralph: nothing to do: %s has no open issue for ralph\n", cfg.Tasks)
			return nil
		}
		return fmt.Errorf("%s has no tasks: add one (ralph tasks add TITLE) or name another plan", relOr(dir, plan.Path()))
	}
	if err := opts.f.approvePlanLink(dir, plan.Path()); err != nil {
		return err
	}
	// Before any agent runs: an explicit sandbox that cannot work stops
	// the run here.
	sb, err := chooseSandbox(ctx, opts.f, cfg, dir)
	if err != nil {
		return err
	}
	defer sb.close()
	defer sb.closeHomes()
	ag, err := newAgent(opts.f, cfg, sb)
	if err != nil {
		return err
	}
	lopts, err := loopOptions(opts.f, dir, cfg)
	if err != nil {
		return err
	}
	lopts.Once = opts.Once
	lopts.Only = opts.Task
	if opts.Task != "" {
		if _, ok := plan.Plan().Task(opts.Task); !ok {
			return usageError(fmt.Errorf("--task %s: no such task in %s", opts.Task, relOr(dir, plan.Path())))
		}
		if cfg.Parallel > 1 {
			return usageError(errors.New("--task runs one task: drop --parallel"))
		}
	}
	lopts.Sandbox = sb.record()
	if err := verifyOptions(opts.f, dir, cfg, &lopts); err != nil {
		return err
	}
	reviewer, err := newReviewer(opts.f, cfg, plan.Plan().Validation, sb)
	if err != nil {
		return err
	}

	validation, validationNote, err := opts.f.planGates(plan.Plan())
	if err != nil {
		return err
	}
	// What the found toolchains leave in the tree stays out of commits.
	lopts.Artefacts = gate.Artefacts(dir, slices.Concat(cfg.Gates.Commands, validation))
	gv := runGates{configured: cfg.Gates.Commands, validation: validation, validationNote: validationNote,
		reviewed: reviewsTasks(cfg, validation)}
	if len(cfg.Gates.Commands) == 0 {
		// Only worth a look when the config names no gate.
		gv.found = detectChecks(opts.f, dir)
	}
	// Every precondition, before anything changes: no branch, state or
	// agent call on a run that cannot work.
	check := preflightCheck{dir: dir, cfg: cfg, plan: plan, agent: ag.Adapter, env: opts.f.Environ(), keepBranch: opts.inWorktree}
	if r, ok := reviewer.(runAgent); ok {
		check.reviewer = r.Adapter
	}
	notReady := preflightErr(preflight(ctx, check))
	if opts.Dry {
		if err := dryRun(opts.f, lopts, loop.Deps{Agent: ag, Plan: plan}, gv, ag.box); err != nil {
			return err
		}
		if notReady != nil {
			return fmt.Errorf("a run would not start: %w", notReady)
		}
		return nil
	}
	if notReady != nil {
		return notReady
	}

	if gh != nil && offline == "" {
		// Write-back needs write access: a token without it stops the run
		// here, before any work, not at the first write-back.
		if err := gh.CheckWrite(ctx); err != nil {
			return err
		}
	}
	store, release, err := state.OpenLocked(dir)
	if err != nil {
		return err
	}
	defer func() { _ = release() }()
	// The plan's fsyncs join the store's: the loop's barrier covers both.
	crashed, err := stopCrashed(opts.f, store)
	if err != nil {
		return err
	}
	// Every process the run starts from here on dies with it.
	lopts.RunID = state.NewRunID(time.Now())
	ctx, life := family(ctx, opts.f, lopts.RunID)
	defer life.Close()
	pre, err := prerun(ctx, opts.f, dir, cfg, plan, crashed, opts.inWorktree)
	if err != nil {
		return err
	}
	var projectGates *gates
	if len(cfg.Gates.Commands) > 0 || len(validation) > 0 {
		// The project's gates, then the plan's Validation Commands in
		// force, fixed for the run: what the agent writes in the plan is
		// a guard finding, not a gate.
		projectGates = &gates{r: &gate.Runner{Dir: dir, Commands: cfg.Gates.Commands, Timeout: cfg.Gates.Timeout.D(),
			Env: opts.f.Environ(), TaskCommands: func(string) []string { return validation },
			Sandbox: sb.gates(), Fresh: sb.gateCaches()}}
	}
	if projectGates != nil && !pre.leftover && plan.Plan().Open() > 0 && pre.treeIsStart(ctx) {
		// The gates' baseline is the last precondition: one that fails
		// leaves no branch and no run behind, and is said once.
		if lopts.Baseline, err = loop.CheckBaseline(ctx, *projectGates, cfg.AllowFailingGates, pre.repoDep()); err != nil {
			return err
		}
	}
	if err := pre.begin(ctx); err != nil {
		return err
	}
	if g, ok := pre.repo.(*vcs.Git); ok {
		// The hooks ralph's commits run are as confined as the agent: they
		// may run project code it wrote.
		g.Hooks = sb.hooks()
		lopts.Sandbox.Hooks = g.HookUse(ctx, g.Hooks != nil, cfg.GitHub.PR)
	}
	if _, err := state.EnsureGitignore(dir); err != nil {
		return err
	}
	if err := pre.commitSetup(ctx, cfg); err != nil {
		return err
	}

	deps := loop.Deps{Agent: ag, Plan: plan, Store: store}
	if projectGates != nil {
		deps.Gate = *projectGates
	}
	deps.Repo = pre.repoDep()
	lopts.NoRepo = pre.repo == nil
	deps.Trees = treesDep(pre.repo)
	if deps.Trees != nil {
		lopts.GuardConfigFiles = guardPaths(pre.repo.Dir(), lopts.GuardConfigFiles)
		lopts.RepoDir = pre.repo.Dir()
		lopts.OwnFiles = loopOwnFiles(pre.repo.Dir(), dir, opts.f.ralphFiles(cfg, dir))
	}
	if reviewer != nil {
		deps.Reviewer = reviewer
	}
	lopts.SkipBaseline = pre.leftover
	logger, closeLog, err := openLog(store.Dir(), opts.f.Debug)
	if err != nil {
		return err
	}
	defer closeLog()
	// q in the TUI stops the run as Ctrl-C does; p and s steer it.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer stopOnBrokenPipe(stop)()
	steer := loop.NewSteering()
	deps.Control = steer
	deps.Network = sb.network()
	ch, pageURL, closeChannel := openChannel(ctx, opts, dir, lopts.RunID, steer, stop, logger)
	defer closeChannel()
	screen, err := chooseRenderer(opts, runView{dir: dir, plan: plan.Plan(), agent: ag.Name(), model: cfg.Model,
		failed: failedIn(store), newDecoder: ag.NewDecoder, stop: stop, steer: steer, notify: cfg.Notify, log: logger,
		pageURL: pageURL, programs: proc.OutsideOf(ctx), notifyBox: sb.notify(cfg.Notify.Env)})
	if err != nil {
		return err
	}
	render := ui.Tee{screen, ui.NewLog(logger)}
	if ch != nil {
		render = append(render, ch)
	}
	handle := render.Handle
	if id := opts.workerID; id != "" {
		// A --worker's task run: every event says whose it is, the
		// process family's reports included.
		handle = func(e loop.Event) {
			e.WorkerID = id
			render.Handle(e)
		}
	}
	deps.Emit = life.attach(handle)
	if sb.egress != nil {
		// A gate's or a reviewer's refusal, between agents.
		emit := deps.Emit
		sb.egress.network.reportUnwatched(func(msg string) {
			emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: msg})
		})
	}
	if msg := gv.warning(); msg != "" {
		deps.Emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: msg})
	}
	if deps.Gate != nil {
		for _, msg := range sb.gateWarnings() {
			deps.Emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: msg})
		}
	}
	if offline != "" {
		deps.Emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: offline})
	}
	if gv.validationNote != "" {
		deps.Emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: gv.validationNote})
	}
	var wb *writeBack
	if gh != nil {
		emit := deps.Emit
		// GitHub's rate limits are waited out like an agent's usage limit.
		gh.OnWait(func(until time.Time, why string) {
			emit(loop.Event{Kind: loop.EventWaiting, Time: time.Now(), Until: &until, Message: why})
		})
		wb = newWriteBack(ctx, gh, store, lopts.RunID, deps.Emit)
		wb.reconcile(plan.Plan())
		deps.Emit = wb.handle
	}
	emit := deps.Emit
	sb.warnWith(func(msg string) { emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: msg}) })
	if g, ok := pre.repo.(*vcs.Git); ok {
		g.NestedRepo = func(news vcs.RepoNews) {
			emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: nestedRepoWarning(news)})
		}
	}
	err = pre.run(ctx, lopts, deps)
	if wb != nil {
		// The tasks it started and left unfinished are no longer in
		// progress.
		wb.stopped(plan.Plan(), stopReason(err))
	}
	if cfg.GitHub.PR && (err == nil || errors.Is(err, loop.ErrLimit) || errors.Is(err, loop.ErrStuck)) {
		var prs tracker.PullRequests // nil: the repository prRepo names
		if gh != nil {
			prs = gh
		}
		res, perr := publishPR(ctx, opts.f, dir, cfg, plan.Plan(), store, prs, sb.gates())
		if perr != nil {
			deps.Emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: "pull request: " + perr.Error()})
			err = cmp.Or(err, perr)
		} else {
			defer printPR(opts.f, res)
		}
	}
	// No agent is at work any more: the last of what they changed in
	// their configuration is told while the renderer still shows it.
	sb.closeHomes()
	life.detach()
	render.Close(err)
	if errors.Is(err, loop.ErrLimit) || errors.Is(err, loop.ErrStuck) || errors.Is(err, loop.ErrInterrupted) {
		// The renderer showed how the run ended; the exit code says the rest.
		return fmt.Errorf("%w: %w", errSilent, err)
	}
	return err
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
func chooseRenderer(opts *runOptions, v runView) (ui.Renderer, error) {
	return newRenderer(opts.f, opts.NoTUI, opts.JSON, v)
}

// openPlan finds and loads the plan.
func openPlan(dir, configured string) (*task.File, error) {
	path := configured
	if isTrackerPlan(path) {
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
func loopOptions(f *Factory, dir string, cfg config.Config) (loop.Options, error) {
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
func dryRun(f *Factory, opts loop.Options, deps loop.Deps, gates runGates, box *sandbox.Box) error {
	pv, err := loop.Preview(opts, deps)
	if err != nil {
		return err
	}
	w := f.IO.Out
	if pv.Task == nil {
		fmt.Fprintln(w, "# nothing to run: no open task")
		return nil
	}
	fmt.Fprintf(w, "# task: %s - %s\n", pv.Task.ID, pv.Task.Title)
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
		fmt.Fprintf(w, "  %s\n", shellQuote(redact.String(a)))
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

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		safe := r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		return !safe
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// serveArg takes the address of a bare --serve from the arguments:
// --serve takes its value optionally, so `--serve 127.0.0.1:9000` parses
// as --serve and an argument; an argument that is a host:port and names
// no file is the address.
func serveArg(cmd *cobra.Command, opts *runOptions, a []string) (addr string, rest []string) {
	fl := cmd.Flags().Lookup("serve")
	if fl == nil || !fl.Changed || opts.Serve != DefaultServeAddr || len(a) == 0 {
		return "", a
	}
	host, port, err := net.SplitHostPort(a[0])
	if err != nil || strings.ContainsAny(host, "/") {
		return "", a
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", a
	}
	if _, err := os.Stat(a[0]); err == nil {
		return "", a
	}
	return a[0], a[1:]
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

// secretsInProject refuses a project config file that holds a secret
// value: a run commits the project's files, ralph.toml with them.
func secretsInProject(f *Factory, dir string) error {
	path := cmp.Or(f.ConfigFile, filepath.Join(dir, "ralph.toml"))
	abs, err := filepath.Abs(path)
	if err != nil || relOr(dir, abs) == abs {
		return nil // not in the project: not committed with it
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil // Load read it: gone since, nothing to commit
	}
	return config.CheckSecrets(relOr(dir, abs), data)
}
