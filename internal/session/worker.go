package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
	"github.com/ralph-loop/ralph/internal/words"
	"github.com/ralph-loop/ralph/internal/worker"
)

// project is how --worker and --pr-feedback begin: the project
// directory, its configuration, and ctx with the lookup of ralph's own
// programs made for it (withPrograms), which their task runs share.
func (o *Options) project(ctx context.Context) (context.Context, string, config.Config, error) {
	dir, err := o.f.ProjectDir()
	if err != nil {
		return ctx, "", config.Config{}, err
	}
	cfg, err := o.Config(dir)
	if err != nil {
		return ctx, "", config.Config{}, err
	}
	return o.f.withPrograms(ctx, cfg, dir), dir, cfg, nil
}

// runWorker is `ralph run --worker`: one of many workers on one plan,
// coordinated through the remote (package worker). Each task it claims
// runs as `ralph run --task ID` would, in a fresh worktree of the clone,
// and what the task run records (history, transcripts) is gathered into
// the clone's .ralph/ afterwards.
func runWorker(ctx context.Context, opts *Options) error {
	// One lookup of ralph's own programs for the worker and its task
	// runs, whose worktrees are in the clone.
	ctx, dir, cfg, err := opts.project(ctx)
	if err != nil {
		return err
	}
	switch {
	case opts.Task != "":
		return usageError(errors.New("--worker claims its own tasks: drop --task, or drop --worker to run one task"))
	case opts.Once || opts.Dry:
		return usageError(errors.New("--worker runs until no task is left: it takes neither --once nor --dry-run"))
	case cfg.Parallel > 1:
		return usageError(errors.New("--worker runs one task at a time: start more workers instead of --parallel"))
	case task.Ownership(cfg.Ownership) == task.OwnerAgent:
		return usageError(errors.New("--worker needs --ownership runner: agents that pick their own tasks would collide"))
	case cfg.NoCommit:
		return usageError(errors.New("--worker lands each task as a commit: drop --no-commit"))
	}
	plan, err := OpenPlan(dir, cfg.Tasks)
	if err != nil {
		return err
	}
	if err := opts.f.approvePlanLink(dir, plan.Path()); err != nil {
		return err
	}
	g, err := vcs.Open(ctx, dir, opts.f.Environ())
	if err != nil {
		return fmt.Errorf("--worker needs a git clone of the shared remote: %w", err)
	}
	// The plan's branchName may be on no remote yet: the first worker
	// makes it from the branch checked out (or the remote's default).
	checkedOut, headErr := g.Branch(ctx)
	branch, makeBranch := plan.Plan().Branch, true
	if branch == "" {
		if headErr != nil {
			return fmt.Errorf("--worker lands on the plan's branchName or the branch checked out: %w", headErr)
		}
		branch, makeBranch = checkedOut, false
	}
	relPlan, err := state.RepoPath(g.Root, plan.Path())
	if err != nil {
		return err
	}
	relDir, err := state.RepoPath(g.Root, dir)
	if err != nil {
		return err
	}
	planInDir, err := filepath.Rel(dir, plan.Path())
	if err != nil {
		return err
	}
	store, release, err := state.OpenLocked(dir)
	if err != nil {
		return err
	}
	defer func() { _ = release() }()

	// The worker's own lines and its task runs' share the output, from
	// more than one goroutine (the heartbeat).
	streams := *opts.f.IO
	streams.Out, streams.ErrOut, streams.TTY = &syncWriter{w: streams.Out}, &syncWriter{w: streams.ErrOut}, false
	opts.f.IO = &streams
	screen := screenRenderer(opts.f, true, opts.JSON, runView{})
	defer screen.Close(nil)

	id := cfg.Worker.ID
	if id == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	// --budget and --max-tokens hold for the worker as a whole: each task
	// run gets what is left, and no task is claimed once it is spent.
	var spent state.Totals
	w := &worker.Worker{
		Ledger:   &worker.Ledger{Git: g, Remote: cfg.Worker.Remote, Branch: branch, Plan: relPlan},
		ID:       id,
		Lease:    cfg.Worker.Lease.D(),
		RelDir:   relDir,
		TreesDir: filepath.Join(store.Dir(), state.WorktreesDir),
		Union:    []string{path.Join(relDir, state.ProgressFile)},
		Emit:     redacting(screen.Handle),
		Check:    func() error { return workerBudget(cfg.Budget, cfg.MaxTokens, spent) },
		// Each task's run obeys ralph.toml as the worktree has it.
		Pinned: []string{path.Join(relDir, "ralph.toml")},
		Run: func(ctx context.Context, taskDir, taskID string) error {
			o := *opts
			o.Worker, o.Task, o.Plan, o.NoTUI = false, taskID, planInDir, true
			o.dir, o.workerID, o.inWorktree = taskDir, id, true
			if cfg.Budget > 0 {
				o.budgetLeft = cfg.Budget - spent.CostUSD
			}
			if cfg.MaxTokens > 0 {
				o.tokensLeft = cfg.MaxTokens - int(tokensUsed(spent))
			}
			err := run(ctx, &o)
			if ts, serr := state.Open(taskDir); serr == nil {
				if st, serr := ts.LoadState(); serr == nil {
					spent.Add(st.Totals)
				}
			}
			return err
		},
		After: func(taskDir, taskID, landed string) {
			if err := gather(store, taskDir, taskID, landed); err != nil {
				screen.Handle(loop.Event{Kind: loop.EventWarning, WorkerID: id, Message: "keeping the task's records: " + err.Error()})
			}
		},
	}
	w.MakeBranch, w.From = makeBranch, checkedOut
	err = w.Loop(ctx)
	if errors.Is(err, loop.ErrLimit) || errors.Is(err, loop.ErrStuck) || errors.Is(err, loop.ErrInterrupted) {
		screen.Handle(loop.Event{Kind: loop.EventWorker, WorkerID: id, Message: "stopped: " + err.Error()})
		return fmt.Errorf("%w: %w", ErrReported, err)
	}
	return err
}

// workerBudget stops a worker before its next claim once the run's
// budget in money or tokens is spent, over all its tasks.
func workerBudget(budget float64, maxTokens int, spent state.Totals) error {
	if budget > 0 && spent.CostUSD >= budget {
		return fmt.Errorf("%w: budget $%.2f reached (this worker spent $%.4f over %s)", loop.ErrLimit, budget, spent.CostUSD, words.Count(spent.Iterations, "iteration"))
	}
	if used := tokensUsed(spent); maxTokens > 0 && used >= int64(maxTokens) {
		return fmt.Errorf("%w: token budget %d reached (this worker used %d over %s)", loop.ErrLimit, maxTokens, used, words.Count(spent.Iterations, "iteration"))
	}
	return nil
}

func tokensUsed(t state.Totals) int64 {
	return t.InputTokens + t.OutputTokens + t.CacheReadTokens + t.CacheWriteTokens
}

// gather moves a task run's history lines and transcripts from its
// worktree's .ralph/ into the clone's, which outlives the worktree. The
// task's done line names the commit that landed it on the run branch (the
// worktree's own commit was rebased), or none when it did not land.
func gather(store *state.Store, taskDir, taskID, landed string) error {
	from, err := state.Open(taskDir)
	if err != nil {
		return err
	}
	recs, err := from.History()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.TaskID == taskID && r.Outcome == state.OutcomeTaskDone {
			r.Commit = landed
		}
		if err := store.AppendHistory(r); err != nil {
			return err
		}
	}
	runs := filepath.Join(from.Dir(), state.RunsDir)
	entries, err := os.ReadDir(runs)
	if err != nil {
		return nil //nolint:nilerr // a run that never got to an iteration has no transcripts
	}
	if err := os.MkdirAll(filepath.Join(store.Dir(), state.RunsDir), 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(runs, e.Name()), filepath.Join(store.Dir(), state.RunsDir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// syncWriter serialises writes from several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
