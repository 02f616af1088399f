package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/projectfs"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// Branch names of parallel runs: a task works on ralph/task/<id>; a task
// whose work did not merge keeps it as ralph/conflict/<id>-<n>.
const (
	TaskBranchPrefix     = "ralph/task/"
	ConflictBranchPrefix = "ralph/conflict/"
)

// Parallel configures RunParallel.
type Parallel struct {
	// Workers is how many tasks run at once.
	Workers int
	// Worktrees makes the tasks' checkouts and merges them back.
	Worktrees Worktrees
	// Root is the top of the main worktree; the project directory and the
	// plan file are found at the same place relative to it in every
	// worktree.
	Root string
	// Dir is where the tasks' worktrees go (.ralph/worktrees).
	Dir string
	// GateAt returns the quality gates to run in a worktree; nil, or a nil
	// result, means none.
	GateAt func(dir string) Gate
}

// Worktrees gives each parallel task its own checkout on its own branch,
// and brings finished tasks back into the run branch, which is checked out
// in the main worktree (Deps.Repo). The command line implements it with
// git.
type Worktrees interface {
	// Add checks out a new branch, made from the run branch's head, in a
	// new worktree at dir.
	Add(ctx context.Context, dir, branch string) (Repo, error)
	// Merge stages branch's changes in the main worktree without
	// committing them. When they conflict with the run branch it changes
	// nothing and returns the conflicting files.
	Merge(ctx context.Context, branch string) (conflicts []string, err error)
	// Remove removes the worktree at dir, whatever it holds.
	Remove(ctx context.Context, dir string) error
	// Branches lists the local branches whose names start with prefix.
	Branches(ctx context.Context, prefix string) ([]string, error)
	DeleteBranch(ctx context.Context, name string) error
	RenameBranch(ctx context.Context, from, to string) error
}

// RunParallel is Run with up to par.Workers tasks at once: each task whose
// dependencies are done runs in its own worktree, on its own branch made
// from the run branch's current head, with its own agent process and its
// own gates. A task that passes its gates is committed on its branch and
// squash-merged into the run branch right away, one merge at a time, then
// marked done in the plan (written only here, in the main worktree) and
// committed there: one commit per task, as without --parallel. Work that
// does not merge cleanly is a failed gate: the branch is kept as
// ralph/conflict/<id>-<n>, and the task runs again from the new head.
//
// Worktrees and task branches are removed when the run ends, however it
// ends. Events from a task carry its worker's number; Deps.Emit is called
// from one goroutine at a time.
//
// It needs a Repo, Worktrees, runner ownership (the agents must not pick
// tasks) and commits; with par.Workers below 2 it is Run.
func RunParallel(ctx context.Context, opts Options, deps Deps, par Parallel) error {
	if par.Workers < 2 {
		return Run(ctx, opts, deps)
	}
	if deps.Emit != nil {
		var mu sync.Mutex
		emit := deps.Emit
		deps.Emit = func(e Event) {
			mu.Lock()
			defer mu.Unlock()
			emit(e)
		}
	}
	r, err := newRunner(opts, deps)
	if err != nil {
		return err
	}
	switch {
	case deps.Repo == nil || par.Worktrees == nil:
		return errors.New("--parallel needs a git repository: each task works in a worktree of its own")
	case r.opts.Ownership != task.OwnerRunner:
		return errors.New("--parallel needs runner ownership: agents that pick their own tasks would collide")
	case !r.opts.Commit:
		return errors.New("--parallel merges each task's commit into the run branch: it cannot run with --no-commit")
	}
	p := &parallelRun{r: r, par: par, trees: map[string]*worktree{}}
	if p.relDir, err = relTo(par.Root, r.opts.Dir); err != nil {
		return err
	}
	if p.relPlan, err = relTo(par.Root, deps.Plan.Plan().Path); err != nil {
		return err
	}
	r.parallel = true
	if err := r.start(ctx); err != nil {
		return err
	}
	err = p.iterate(ctx)
	if err == nil {
		err = r.endReview(ctx, p.iterate)
	}
	return r.finish(err)
}

// parallelRun is the coordinator of a parallel run. Its goroutine owns the
// runner's state; workers get copies, and report back through a channel.
type parallelRun struct {
	r   *runner
	par Parallel
	// relDir and relPlan are the project directory and the plan file
	// relative to the top of the repository.
	relDir, relPlan string
	// trees are the tasks' worktrees, kept for a task's next attempt
	// until it is merged or failed (coordinator only).
	trees map[string]*worktree
	// repoMu serialises what changes the repository's shared state:
	// merges and commits in the main worktree, worktrees and branches.
	repoMu sync.Mutex
	// totals is the run's totals as last merged, for workers' events.
	totalsMu sync.Mutex
	totals   state.Totals
	// limitWaited is when the last wait for a usage limit ended
	// (coordinator only): the workers share the account, so a limit that
	// hit an iteration started before then was that same limit, already
	// waited out, and its task simply runs again.
	limitWaited time.Time
}

// worktree is one task's checkout.
type worktree struct {
	dir, branch string
	repo        Repo
	// plan is the plan file's copy in the worktree and what it held when
	// the worktree was made (planOK: whether it existed).
	plan     string
	planBase []byte
	planOK   bool
}

// result is what a worker reports when its iteration ends.
type result struct {
	slot, n int
	t       task.Task
	it      iteration
	err     error
	totals  state.Totals
	gate    *mergeGate
	// startTree is the task's start as the worker left it (verify.go).
	startTree string
	// started is when the iteration started.
	started time.Time
	// quota is the usage windows as the worker last knew them.
	quota map[string]state.QuotaWindow
}

func (p *parallelRun) iterate(ctx context.Context) error {
	r := p.r
	p.sweep(ctx)
	defer p.cleanup(ctx)
	p.publish()
	results := make(chan result, p.par.Workers)
	running := map[string]int{} // task id → worker slot
	var stop error
	var outcomes []state.Outcome // for --once
	started := false
	for {
		if stop == nil && ctx.Err() != nil {
			stop = ErrInterrupted
		}
		if stop == nil && !(r.opts.Once && started) {
			n, err := p.fill(ctx, running, results)
			started = started || n > 0
			if err != nil {
				stop = err
			}
		}
		if len(running) == 0 {
			switch {
			case stop != nil:
				return stop
			case r.opts.Once && started:
				return p.afterOnce(outcomes)
			case len(r.st.Pending()) > 0:
				// Nothing can start but tasks whose agents asked, or
				// tasks that wait on them: wait for an answer, spending
				// nothing, as one task at a time does.
				if err := r.waitForAnswer(ctx); err != nil {
					return err
				}
				continue
			}
			return r.noneLeft()
		}
		res := <-results
		delete(running, res.t.ID)
		p.setCurrent(running)
		outcomes = append(outcomes, res.it.outcome)
		if err := p.finished(ctx, res); err != nil && stop == nil {
			stop = err
		}
		if stop == nil && r.opts.Delay > 0 {
			if err := r.deps.Sleep(ctx, r.opts.Delay); err != nil {
				stop = ErrInterrupted
			}
		}
	}
}

// fill starts tasks on the free workers: the plan's order, dependencies
// done, as for one task at a time. It returns how many it started, and an
// error that ends the run: a limit only once nothing runs any more, since
// the running tasks may still finish the plan.
func (p *parallelRun) fill(ctx context.Context, running map[string]int, results chan<- result) (int, error) {
	r := p.r
	if err := r.checkpoint(ctx); err != nil {
		return 0, err
	}
	if _, err := r.deps.Plan.Reload(); err != nil {
		return 0, err
	}
	started := 0
	for len(running) < p.par.Workers {
		t, ok := r.deps.Plan.Plan().Next(func(t task.Task) bool {
			_, busy := running[t.ID]
			return busy || r.passOver(t)
		})
		if !ok {
			return started, nil
		}
		limit := r.checkBudget()
		if limit == nil && r.opts.MaxIterations > 0 && r.st.Totals.Iterations+len(running) >= r.opts.MaxIterations {
			limit = fmt.Errorf("%w: %s done (--max-iterations)", ErrLimit, words.Count(r.st.Totals.Iterations, "iteration"))
		}
		if limit != nil {
			if len(running) == 0 {
				return started, limit
			}
			return started, nil
		}
		if ok, err := r.routeTask(ctx, t); err != nil || !ok {
			if err != nil {
				return started, err
			}
			continue // t failed its check: pick again
		}
		if name, q, _ := r.quotaHold(r.agentNow().Name()); name != "" {
			if r.quotaFailover(r.agentNow().Name(), q) {
				continue // a fallback stands in: pick again
			}
			// No new start while a protected window is past its line:
			// the running tasks finish first, then the run waits for the
			// window's reset (or stops) as without --parallel.
			if len(running) > 0 {
				return started, nil
			}
			if _, err := r.checkQuota(ctx, t); err != nil {
				return started, err
			}
		}
		tr, err := p.tree(ctx, t)
		if err != nil {
			return started, err
		}
		slot := freeSlot(running, p.par.Workers)
		r.st.Iteration++
		n := r.st.Iteration
		w, gate, err := p.worker(slot, n, tr)
		if err != nil {
			return started, err
		}
		w.cur, w.curModel, w.standIn, w.onNote = r.cur, r.curModel, r.standIn, r.onNote
		running[t.ID] = slot
		p.setCurrent(running)
		if err := r.save(); err != nil {
			return started, err
		}
		started++
		startedAt := r.deps.Now()
		go func() {
			it, err := w.runIteration(ctx, t)
			results <- result{slot: slot, n: n, t: t, it: it, err: err, totals: w.st.Totals, gate: gate,
				startTree: w.st.Tasks[t.ID].StartTree, started: startedAt, quota: w.st.Quota}
		}()
	}
	return started, nil
}

// finished takes a worker's iteration into the run: totals, its worktree,
// and the policy (attempts, waits, the breaker) as for one task at a time.
func (p *parallelRun) finished(ctx context.Context, res result) error {
	r := p.r
	r.st.Totals.Add(res.totals)
	if ts, ok := r.st.Tasks[res.t.ID]; ok || res.startTree != "" {
		ts.StartTree = res.startTree
		r.st.Tasks[res.t.ID] = ts
	}
	switch {
	case res.gate.merged:
		p.drop(ctx, res.t.ID, true)
	case res.gate.conflict:
		// The branch is kept under its conflict name; the next attempt
		// starts over from the run branch's new head.
		p.drop(ctx, res.t.ID, false)
	}
	defer p.publish()
	if res.err != nil {
		if err := r.save(); err != nil {
			return errors.Join(res.err, err)
		}
		return res.err
	}
	r.priceWarnings()
	p.takeQuota(res.quota)
	if res.it.outcome == state.OutcomeRateLimited && !p.limitWaited.IsZero() && res.started.Before(p.limitWaited) {
		// The limit this worker hit is the one the run already waited
		// out: its task runs again, with no second wait.
		r.noteQuota(res.it.agent, res.it.result.Quota)
		return r.save()
	}
	last := r.st.Iteration
	r.st.Iteration = res.n // the attempt notes name the task's own iteration
	err := r.apply(ctx, res.t, res.it)
	r.st.Iteration = max(last, r.st.Iteration)
	if res.it.outcome == state.OutcomeRateLimited && err == nil {
		p.limitWaited = r.deps.Now()
	}
	if r.st.Tasks[res.t.ID].Failed {
		p.drop(ctx, res.t.ID, true)
	}
	if serr := r.save(); err == nil {
		err = serr
	}
	return err
}

// takeQuota keeps the windows a worker heard of later than the run did
// (its reviewer's reports).
func (p *parallelRun) takeQuota(quota map[string]state.QuotaWindow) {
	r := p.r
	for name, q := range quota {
		if old, ok := r.st.Quota[name]; !ok || q.UpdatedAt.After(old.UpdatedAt) {
			if r.st.Quota == nil {
				r.st.Quota = map[string]state.QuotaWindow{}
			}
			r.st.Quota[name] = q
		}
	}
}

// afterOnce ends a --once run: success when every task it started was
// finished.
func (p *parallelRun) afterOnce(outcomes []state.Outcome) error {
	open := p.r.deps.Plan.Plan().Open()
	if open == 0 {
		return nil
	}
	for _, o := range outcomes {
		if o != state.OutcomeTaskDone && o != state.OutcomePlanDone {
			return fmt.Errorf("%w: --once: an iteration ended with %s", ErrLimit, o)
		}
	}
	p.r.doneMsg = onceMsg(words.Count(len(outcomes), "task")+" done", open)
	return nil
}

// worker makes the runner one task's iteration runs on: the run's settings
// and state, with the worktree as its directory, repository and gates.
func (p *parallelRun) worker(slot, n int, tr *worktree) (*runner, *mergeGate, error) {
	r := p.r
	opts := r.opts
	opts.Dir = filepath.Join(tr.dir, p.relDir)
	gate := &mergeGate{p: p, tr: tr}
	if p.par.GateAt != nil {
		gate.gate = p.par.GateAt(opts.Dir)
	}
	deps := r.deps
	deps.Repo = &worktreeRepo{Repo: tr.repo, gate: gate}
	// The guard and the reviewer read the task's work in its worktree.
	deps.Trees, _ = tr.repo.(Trees)
	deps.Gate = gate
	deps.Plan = &worktreePlan{main: r.deps.Plan, tr: tr}
	deps.Store = workerStore{r.deps.Store}
	deps.Control = nil
	mainPlan := r.deps.Plan.Plan().Path
	deps.Emit = func(e Event) {
		e.Worker = slot
		if e.Totals != nil {
			t := p.published()
			t.Add(*e.Totals)
			e.Totals = &t
		}
		if e.Plan != nil {
			e.Plan.Path = mainPlan
		}
		r.deps.Emit(e)
	}
	w, err := newRunner(opts, deps)
	if err != nil {
		return nil, nil, err
	}
	w.st = r.st
	w.st.Tasks = maps.Clone(r.st.Tasks)
	w.st.Quota = maps.Clone(r.st.Quota) // its reviewer's reports come back in result.quota
	w.st.Totals = state.Totals{}
	w.st.Iteration = n - 1 // runIteration counts it
	for id, notes := range r.attempts {
		w.attempts[id] = slices.Clone(notes)
	}
	w.gates = r.gates
	w.left = r.left
	w.autoReview = r.autoReview
	tree, _ := tr.repo.(TreeID)
	gate.gate = w.checkedGate(gate.gate, tree)
	gate.w = w
	return w, gate, nil
}

// tree returns t's worktree: the one an earlier attempt left, or a new
// one on a new branch from the run branch's head.
func (p *parallelRun) tree(ctx context.Context, t task.Task) (*worktree, error) {
	if tr := p.trees[t.ID]; tr != nil {
		return tr, nil
	}
	name := refSafe(t.ID)
	tr := &worktree{dir: filepath.Join(p.par.Dir, name), branch: TaskBranchPrefix + name}
	p.repoMu.Lock()
	defer p.repoMu.Unlock()
	// What a crashed run may have left under these names goes first.
	_ = p.par.Worktrees.Remove(ctx, tr.dir)
	if has, _ := p.par.Worktrees.Branches(ctx, tr.branch); slices.Contains(has, tr.branch) {
		_ = p.par.Worktrees.DeleteBranch(ctx, tr.branch)
	}
	repo, err := p.par.Worktrees.Add(ctx, tr.dir, tr.branch)
	if err != nil {
		return nil, fmt.Errorf("worktree for %s: %w", t.ID, err)
	}
	tr.repo = repo
	tr.plan = filepath.Join(tr.dir, p.relPlan)
	if b, err := projectfs.New(tr.dir).ReadFile(tr.plan); err == nil {
		tr.planBase, tr.planOK = b, true
	}
	p.trees[t.ID] = tr
	return tr, nil
}

// drop removes a task's worktree and, unless it is to be kept, its branch.
func (p *parallelRun) drop(ctx context.Context, id string, deleteBranch bool) {
	tr := p.trees[id]
	if tr == nil {
		return
	}
	delete(p.trees, id)
	ctx = context.WithoutCancel(ctx)
	p.repoMu.Lock()
	defer p.repoMu.Unlock()
	if err := p.par.Worktrees.Remove(ctx, tr.dir); err != nil {
		p.r.warn("could not remove the worktree of %s (%s): %v", id, tr.dir, err)
	}
	if deleteBranch {
		if err := p.par.Worktrees.DeleteBranch(ctx, tr.branch); err != nil {
			p.r.warn("could not delete branch %s: %v", tr.branch, err)
		}
	}
}

// sweep removes what a run that crashed left: worktrees and task branches.
func (p *parallelRun) sweep(ctx context.Context) {
	entries, _ := os.ReadDir(p.par.Dir)
	for _, e := range entries {
		_ = p.par.Worktrees.Remove(ctx, filepath.Join(p.par.Dir, e.Name()))
	}
	p.deleteTaskBranches(ctx)
}

// cleanup removes every worktree and task branch when the run ends,
// interrupted or not; kept conflict branches stay.
func (p *parallelRun) cleanup(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for _, id := range slices.Sorted(maps.Keys(p.trees)) {
		p.drop(ctx, id, true)
	}
	p.deleteTaskBranches(ctx)
	if err := os.Remove(p.par.Dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.r.warn("could not remove %s: %v", p.par.Dir, err)
	}
}

func (p *parallelRun) deleteTaskBranches(ctx context.Context) {
	p.repoMu.Lock()
	defer p.repoMu.Unlock()
	names, err := p.par.Worktrees.Branches(ctx, TaskBranchPrefix)
	if err != nil {
		return
	}
	for _, b := range names {
		if err := p.par.Worktrees.DeleteBranch(ctx, b); err != nil {
			p.r.warn("could not delete branch %s: %v", b, err)
		}
	}
}

// setCurrent records the running tasks in state.json.
func (p *parallelRun) setCurrent(running map[string]int) {
	p.r.st.CurrentTask = strings.Join(slices.Sorted(maps.Keys(running)), ",")
}

func (p *parallelRun) publish() {
	p.totalsMu.Lock()
	defer p.totalsMu.Unlock()
	p.totals = p.r.st.Totals
}

func (p *parallelRun) published() state.Totals {
	p.totalsMu.Lock()
	defer p.totalsMu.Unlock()
	return p.totals
}

// merge brings a task that passed its gates into the run branch: commit
// on the task's branch, squash-merge into the main worktree, mark the task
// done in the plan, commit both. ok is false, with the reason in output,
// when the work cannot be merged; the task is then not done.
func (p *parallelRun) merge(ctx context.Context, g *mergeGate, t task.Task) (ok bool, output string, err error) {
	// A merge stopped halfway is worse than a stop that waits for it.
	ctx = context.WithoutCancel(ctx)
	p.repoMu.Lock()
	defer p.repoMu.Unlock()
	r := p.r
	msg, err := commitMessage(r.opts.CommitTemplate, t)
	if err != nil {
		return false, "", err
	}
	msg = withTrailers(msg, g.w.trailers)
	if _, err := g.w.commitIn(ctx, g.tr.repo, msg); err != nil {
		return false, fmt.Sprintf("the commit on %s failed: %v", g.tr.branch, err), nil
	}
	conflicts, err := p.par.Worktrees.Merge(ctx, g.tr.branch)
	if err != nil {
		return false, "", fmt.Errorf("merging %s into the run branch: %w", g.tr.branch, err)
	}
	if len(conflicts) > 0 {
		g.conflict = true
		kept := g.tr.branch
		if name, err := p.keep(ctx, t.ID, g.tr.branch); err == nil {
			kept = name
		} else {
			g.w.warn("could not rename %s after its merge conflict: %v", g.tr.branch, err)
		}
		return false, fmt.Sprintf("merge conflict: %s's work conflicts with the run branch in %s; kept as %s, the task runs again from the run branch's new head",
			t.ID, strings.Join(conflicts, ", "), kept), nil
	}
	if err := r.deps.Plan.SetStatus(t.ID, task.StatusDone); err != nil {
		return false, "", fmt.Errorf("marking %s done after merging it: %w", t.ID, err)
	}
	g.merged = true
	if g.hash, err = r.commitRepo(ctx, msg); err != nil {
		g.w.warn("commit failed; the task's state is kept and its changes stay uncommitted for the next commit: %v", err)
	}
	return true, "merged " + g.tr.branch + " into the run branch", nil
}

// keep renames a branch that did not merge to the next free
// ralph/conflict/<id>-<n>.
func (p *parallelRun) keep(ctx context.Context, id, branch string) (string, error) {
	prefix := ConflictBranchPrefix + refSafe(id) + "-"
	have, err := p.par.Worktrees.Branches(ctx, prefix)
	if err != nil {
		return "", err
	}
	name := ""
	for n := 1; name == "" || slices.Contains(have, name); n++ {
		name = fmt.Sprintf("%s%d", prefix, n)
	}
	return name, p.par.Worktrees.RenameBranch(ctx, branch, name)
}

// mergeGate is a worker's Gate: the project's gates in the worktree, and
// as the last step a task passes, after the guard and the reviewer, the
// merge into the run branch (land).
type mergeGate struct {
	p    *parallelRun
	w    *runner
	tr   *worktree
	gate Gate
	// What the merge did, read by the worker's repository and, once the
	// worker is done, by the coordinator.
	merged, conflict bool
	hash             string
}

func (g *mergeGate) Check(ctx context.Context, t task.Task) (bool, string, error) {
	if g.gate != nil {
		return g.gate.Check(ctx, t)
	}
	return true, "", nil
}

// land merges the task's work into the run branch.
func (g *mergeGate) land(ctx context.Context, t task.Task) (bool, string, error) {
	return g.p.merge(ctx, g, t)
}

// worktreeRepo is a worker's Repo: the worktree's snapshots, and as its
// commit the commit the merge made in the main worktree.
type worktreeRepo struct {
	Repo
	gate *mergeGate
}

func (w *worktreeRepo) Commit(ctx context.Context, message string) (string, error) {
	if w.gate.merged {
		return w.gate.hash, nil
	}
	return w.Repo.Commit(ctx, message)
}

// Untracked makes the worktree's gates watched as the main tree's are
// (ArtefactRepo): their files are left out of the task's commit.
func (w *worktreeRepo) Untracked(ctx context.Context) ([]string, error) {
	a, ok := w.Repo.(ArtefactRepo)
	if !ok {
		return nil, errors.New("the worktree cannot list its untracked files")
	}
	return a.Untracked(ctx)
}

// CommitLeaving is Commit, what it leaves out being the merge's (merge
// commits the worktree through the runner's commitIn).
func (w *worktreeRepo) CommitLeaving(ctx context.Context, message string, patterns, paths []string) (string, map[string]int, error) {
	a, ok := w.Repo.(ArtefactRepo)
	if w.gate.merged || !ok {
		hash, err := w.Commit(ctx, message)
		return hash, nil, err
	}
	return a.CommitLeaving(ctx, message, patterns, paths)
}

// worktreePlan is a worker's Plan: the run's plan, as seen from the
// worktree. Only the main worktree's file is ever written; the agent's
// copy is checked, and put back, like the plan itself without --parallel.
type worktreePlan struct {
	main Plan
	tr   *worktree
}

func (w *worktreePlan) Plan() *task.Plan {
	p := *w.main.Plan()
	p.Path = w.tr.plan
	return &p
}

func (w *worktreePlan) SetStatus(id string, st task.Status) error { return w.main.SetStatus(id, st) }
func (w *worktreePlan) Reload() (bool, error)                     { return w.main.Reload() }

func (w *worktreePlan) Modified() (bool, error) {
	b, err := projectfs.New(w.tr.dir).ReadFile(w.tr.plan)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return w.tr.planOK, nil
	case err != nil:
		return false, err
	}
	return !w.tr.planOK || !bytes.Equal(b, w.tr.planBase), nil
}

// MergeEdits puts back the worktree's copy: whoever edited it, only the
// main worktree's plan is the plan.
func (w *worktreePlan) MergeEdits() (task.Edits, error) {
	mod, err := w.Modified()
	if err != nil || !mod {
		return task.Edits{}, err
	}
	if err := w.Restore(); err != nil {
		return task.Edits{}, err
	}
	return task.Edits{Discarded: errors.New("it is the worktree's copy: with --parallel, edit the plan in the main worktree")}, nil
}

func (w *worktreePlan) Restore() error {
	// The agent works in the worktree: its plan copy is read and written
	// beneath it, never through a link out.
	root := projectfs.New(w.tr.dir)
	if !w.tr.planOK {
		err := root.Remove(w.tr.plan)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return root.WriteFile(w.tr.plan, w.tr.planBase, 0o644)
}

// workerStore is a worker's Store: history and transcripts go to the
// run's store; state.json is the coordinator's to write.
type workerStore struct{ Store }

func (workerStore) SaveState(state.State) error { return nil }

// freeSlot is the lowest worker number no running task has.
func freeSlot(running map[string]int, workers int) int {
	busy := slices.Collect(maps.Values(running))
	for n := 1; n <= workers; n++ {
		if !slices.Contains(busy, n) {
			return n
		}
	}
	return workers
}

// refSafe makes a task id usable in a branch name and a directory name.
func refSafe(id string) string {
	b := []byte(id)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
		if !ok {
			b[i] = '-'
		}
	}
	s := strings.Trim(string(b), "-")
	if s == "" {
		return "task"
	}
	return s
}

// relTo is path relative to root, which must contain it.
func relTo(root, path string) (string, error) {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", fmt.Errorf("--parallel: %s is not inside the repository %s", path, root)
	}
	return rel, nil
}
