package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// TaskBranchPrefix names the local branch of a task's worktree.
const TaskBranchPrefix = "ralph/worker/"

// RunTask runs task id to its end in dir, the project directory inside
// the task's fresh worktree, and commits its work there. It returns nil
// when the task is done, and otherwise an error wrapping loop.ErrStuck
// (the task failed), loop.ErrLimit or loop.ErrInterrupted, or another
// error.
type RunTask func(ctx context.Context, dir, id string) error

// Worker claims the plan's ready tasks one after another, runs each in a
// fresh worktree and lands its result, until nothing is left to claim.
type Worker struct {
	Ledger *Ledger
	// ID names the worker in claims and events.
	ID    string
	Lease time.Duration
	// RelDir is the project directory from the top of the repository
	// ("." for the top).
	RelDir string
	// TreesDir is where the tasks' worktrees go.
	TreesDir string
	// Union are files merged by keeping both sides' lines (Landing).
	Union []string
	Run   RunTask
	// MakeBranch lets the worker make the run branch on the remote when
	// the remote has none yet (a plan naming a branch nobody made): from
	// the remote's branch From, or from its default branch when From is
	// "" or not there. Of workers starting together, one makes it.
	MakeBranch bool
	From       string
	// After, when set, runs once a task's run is over, before its
	// worktree goes: dir as for Run, and the commit that landed the task
	// ("" when it did not land).
	After func(dir, id, landed string)
	Emit  func(loop.Event)
	// Check, when set, runs before each claim: an error stops the loop
	// (a budget spent, say) with nothing claimed.
	Check func() error
	// Now and Sleep are the clock; nil: the real one.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	// Pinned are files (paths from the top of the repository, ralph.toml)
	// that must read at every commit the worker fetches as at the first
	// (pinned.go).
	Pinned []string

	// releasing are the claims of landed tasks being given back while
	// the worker goes on to its next task.
	releasing sync.WaitGroup
	pins      *pinned
}

// Loop works until no task is left that this worker could claim. It
// returns nil when the plan is done, an error wrapping loop.ErrStuck when
// only failed tasks (and those waiting on them) are left, and
// loop.ErrLimit or loop.ErrInterrupted when a task run stopped so; a task
// that failed is recorded on its claim and the loop goes on.
func (w *Worker) Loop(ctx context.Context) error {
	if w.Now == nil {
		w.Now = time.Now
	}
	if w.Sleep == nil {
		w.Sleep = loop.Sleep
	}
	defer w.releasing.Wait()
	// poll paces the fetches of a worker that waits (the claims; the
	// branch it watches more often, see await) and its tries at a remote
	// that refuses.
	poll := min(max(w.Lease/8, 100*time.Millisecond), 15*time.Second)
	wait := poll
	waiting := ""
	fetched, made := false, !w.MakeBranch
	for {
		if ctx.Err() != nil {
			return loop.ErrInterrupted
		}
		v, err := w.Ledger.Fetch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return loop.ErrInterrupted
			}
			if !fetched && !made {
				// The run branch may not be on the remote yet.
				made = true
				if err := w.makeBranch(ctx, err); err != nil {
					return err
				}
				continue
			}
			if !fetched || !isRemoteError(err) {
				// The first fetch failing is a setup to fix (no such
				// remote or branch), not a remote that is busy.
				return err
			}
			w.emit(nil, fmt.Sprintf("cannot reach %s, retrying in %s: %v", w.Ledger.Remote, wait.Round(time.Millisecond), err))
			if w.Sleep(ctx, jitter(wait)) != nil {
				return loop.ErrInterrupted
			}
			wait = min(wait*2, 30*time.Second)
			continue
		}
		fetched, wait = true, poll
		if err := w.checkPinned(ctx, v.Head); err != nil {
			return err
		}
		now := w.Now()
		w.sweep(ctx, v, now)
		if v.Plan.Open() == 0 {
			w.emit(nil, "the plan is done")
			return nil
		}
		if w.Check != nil {
			if err := w.Check(); err != nil {
				return err
			}
		}
		t, c, err := w.claimNext(ctx, v, now)
		switch {
		case errors.Is(err, errNoneFree):
			msg, err := w.nothingToClaim(v, now)
			if msg == "" {
				return err
			}
			if msg != waiting {
				w.emit(nil, msg)
				waiting = msg
			}
			if err := w.await(ctx, v, poll); err != nil {
				return err
			}
			continue
		case errors.Is(err, ErrTaken):
			// Every free task went to others: look again at once.
			continue
		case isRemoteError(err):
			w.emit(&t, fmt.Sprintf("claiming %s: the remote refused, retrying in %s: %v", t.ID, poll, err))
			if w.Sleep(ctx, jitter(poll)) != nil {
				return loop.ErrInterrupted
			}
			continue
		case err != nil:
			return err
		}
		waiting = ""
		if err := w.work(ctx, v.Head, t, c); err != nil {
			return err
		}
	}
}

// makeBranch makes the run branch on the remote when the first fetch,
// failing with fetchErr, found none there. nil says fetch again: the
// branch is there now, made by this worker or another (maybe after the
// fetch failed); fetchErr comes back when the remote could not be asked.
func (w *Worker) makeBranch(ctx context.Context, fetchErr error) error {
	made, base, err := w.Ledger.MakeBranch(ctx, w.From)
	switch {
	case isFetchError(err):
		return fetchErr
	case err != nil:
		return err
	case made:
		w.emit(nil, fmt.Sprintf("made the run branch %s on %s from %s", w.Ledger.Branch, w.Ledger.Remote, base))
	}
	return nil
}

// sweep deletes the claims of tasks the run branch has done whose lease
// ran out: their worker landed the task and stopped before giving the
// claim back.
func (w *Worker) sweep(ctx context.Context, v View, now time.Time) {
	for _, t := range v.Plan.Tasks {
		if c, ok := v.Claims[t.ID]; ok && t.Status == task.StatusDone && c.State == StateWorking && !c.Live(now) {
			_ = w.Ledger.Release(ctx, c)
		}
	}
}

// errNoneFree: no task of the view is free to claim.
var errNoneFree = errors.New("no task to claim")

// claimNext claims the first free task of the view, in the plan's order:
// open, its dependencies done, unclaimed or its claim expired. A task
// another worker wins meanwhile is passed over for the next one; ErrTaken
// when every free one went so.
func (w *Worker) claimNext(ctx context.Context, v View, now time.Time) (task.Task, Claim, error) {
	lost := map[string]bool{}
	for {
		t, ok := v.Plan.Next(func(t task.Task) bool {
			c, claimed := v.Claims[t.ID]
			return lost[t.ID] || (claimed && c.Live(now))
		})
		if !ok {
			if len(lost) > 0 {
				return t, Claim{}, ErrTaken
			}
			return t, Claim{}, errNoneFree
		}
		var prev *Claim
		if c, claimed := v.Claims[t.ID]; claimed {
			prev = &c
		}
		c, err := w.Ledger.Claim(ctx, t.ID, w.ID, now, w.Lease, prev)
		if errors.Is(err, ErrTaken) {
			w.emit(&t, "another worker claimed "+t.ID+" first")
			lost[t.ID] = true
			continue
		}
		if err != nil {
			return t, c, err
		}
		what := "claimed " + t.ID
		if prev != nil {
			what += fmt.Sprintf(" (taken over from %s, whose lease ran out at %s)", prev.Worker, prev.Expires.Format(time.RFC3339))
		}
		w.emit(&t, what)
		return t, c, nil
	}
}

// nothingToClaim says why no task of an unfinished plan can be claimed:
// "" with the error that ends the loop, or what the worker waits for.
func (w *Worker) nothingToClaim(v View, now time.Time) (string, error) {
	p := v.Plan
	failed := func(t task.Task) bool { return v.Claims[t.ID].State == StateFailed }
	blocked := p.Blocked(failed)
	var failedIDs, others []string
	for _, t := range p.Tasks {
		switch {
		case t.Status == task.StatusDone:
		case t.Status == task.StatusFailed || failed(t):
			failedIDs = append(failedIDs, t.ID)
		case !slices.ContainsFunc(blocked, func(b task.Task) bool { return b.ID == t.ID }):
			others = append(others, t.ID)
		}
	}
	if len(others) == 0 {
		msg := fmt.Sprintf("nothing left but failed tasks (failed: %s", strings.Join(failedIDs, ", "))
		if len(blocked) > 0 {
			ids := make([]string, len(blocked))
			for i, b := range blocked {
				ids[i] = b.ID
			}
			msg += "; waiting on them: " + strings.Join(ids, ", ")
		}
		return "", fmt.Errorf("%w: %s)", loop.ErrStuck, msg)
	}
	var held []string
	for _, id := range others {
		if c, ok := v.Claims[id]; ok && c.Live(now) {
			held = append(held, fmt.Sprintf("%s by %s", id, c.Worker))
		}
	}
	return "waiting for other workers: " + strings.Join(held, ", "), nil
}

// work runs one claimed task in a fresh worktree made from head and lands
// its result. A task that failed, whose claim was taken over or whose work
// conflicts is recorded and the loop goes on (nil); what stops the loop is
// returned.
func (w *Worker) work(ctx context.Context, head string, t task.Task, c Claim) error {
	g := w.Ledger.Git
	dir := filepath.Join(w.TreesDir, refPart(t.ID))
	branch := TaskBranchPrefix + refPart(t.ID)
	// What a killed worker may have left under these names goes first.
	_ = g.RemoveWorktree(ctx, dir)
	tree, err := g.AddWorktreeAt(ctx, dir, branch, head)
	if err != nil {
		w.release(ctx, c)
		return fmt.Errorf("worktree for %s: %w", t.ID, err)
	}
	landed := ""
	defer func() {
		if w.After != nil {
			w.After(filepath.Join(dir, w.RelDir), t.ID, landed)
		}
		bg := context.WithoutCancel(ctx)
		_ = g.RemoveWorktree(bg, dir)
		_ = g.DeleteBranch(bg, branch)
		_ = os.Remove(w.TreesDir)
	}()
	taskCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hb := w.heartbeat(taskCtx, c, cancel)
	err = w.Run(taskCtx, filepath.Join(dir, w.RelDir), t.ID)
	if err == nil {
		landing := &Landing{Ledger: w.Ledger, Tree: tree, TaskBranch: branch, Base: head, Union: w.Union,
			Report: func(msg string) { w.emit(&t, msg) }, Sleep: w.Sleep, Deadline: 15 * time.Minute}
		var commit string
		commit, err = landing.Land(taskCtx, t.ID)
		if err == nil {
			landed = commit
			c, lost := hb.stop()
			// The task is done on the branch, which is what any worker
			// reads first: its claim goes while this one fetches and
			// claims its next task.
			w.releasing.Go(func() { w.release(context.WithoutCancel(ctx), c) })
			what := fmt.Sprintf("landed %s as %s on %s", t.ID, short(commit), w.Ledger.Branch)
			if lost != nil {
				// The result is on the branch all the same: done is done.
				what += " (its claim was taken over meanwhile)"
			}
			w.emit(&t, what)
			return nil
		}
	}
	c, lost := hb.stop()
	bg := context.WithoutCancel(ctx)
	switch {
	case lost != nil:
		w.emit(&t, fmt.Sprintf("gave up %s: %v", t.ID, lost))
		return nil
	case errors.Is(err, ErrLanded):
		w.release(bg, c)
		w.emit(&t, fmt.Sprintf("%s was landed by another worker meanwhile; this worker's work on it is dropped", t.ID))
		return nil
	case errors.Is(err, ErrConflict):
		w.release(bg, c)
		w.emit(&t, fmt.Sprintf("%s: %v; released for another try on the new head", t.ID, err))
		return nil
	case errors.Is(err, loop.ErrStuck):
		if ferr := w.Ledger.Fail(bg, &c, oneLine(err)); ferr != nil {
			w.emit(&t, fmt.Sprintf("could not record that %s failed: %v", t.ID, ferr))
		}
		w.emit(&t, fmt.Sprintf("%s failed: %v", t.ID, err))
		return nil
	case errors.Is(err, context.Canceled) || errors.Is(err, loop.ErrInterrupted) || ctx.Err() != nil:
		w.release(bg, c)
		w.emit(&t, "interrupted; released "+t.ID+" for another worker")
		return loop.ErrInterrupted
	default:
		w.release(bg, c)
		w.emit(&t, fmt.Sprintf("released %s: %v", t.ID, err))
		return err
	}
}

// release gives a claim back, best effort: a claim not released runs out
// with its lease.
func (w *Worker) release(ctx context.Context, c Claim) {
	if err := w.Ledger.Release(ctx, c); err != nil {
		w.emit(&task.Task{ID: c.Task}, fmt.Sprintf("could not release the claim on %s (it runs out at %s): %v",
			c.Task, c.Expires.Format(time.RFC3339), err))
	}
}

// beat renews a claim while its task runs.
type beat struct {
	mu   sync.Mutex
	c    Claim
	lost error
	stp  context.CancelFunc
	wg   sync.WaitGroup
}

// heartbeat renews c every third of the lease until stopped; when the
// claim turns out to be another worker's, it records that and calls
// cancel: the task is no longer this worker's to finish.
func (w *Worker) heartbeat(ctx context.Context, c Claim, cancel context.CancelFunc) *beat {
	hctx, stop := context.WithCancel(ctx)
	b := &beat{c: c, stp: stop}
	b.wg.Go(func() {
		for {
			if w.Sleep(hctx, w.Lease/3) != nil {
				return
			}
			b.mu.Lock()
			cur := b.c
			b.mu.Unlock()
			// A push under way is not cut short by stop: the remote may
			// take it while its answer is lost, and the claim released
			// must be the one the remote holds.
			pctx, cancelPush := context.WithTimeout(context.WithoutCancel(hctx), w.Lease)
			err := w.Ledger.Renew(pctx, &cur, w.Now(), w.Lease)
			cancelPush()
			switch {
			case err == nil:
				b.mu.Lock()
				b.c = cur
				b.mu.Unlock()
			case errors.Is(err, ErrTaken):
				b.mu.Lock()
				b.lost = fmt.Errorf("its claim was taken over (lease ran out): %w", err)
				b.mu.Unlock()
				cancel()
				return
			case hctx.Err() != nil:
				return
			default:
				// A refused or unreachable remote: try again at the next
				// beat, while the lease still holds.
				w.emit(&task.Task{ID: c.Task}, fmt.Sprintf("could not renew the claim on %s: %v", c.Task, err))
			}
		}
	})
	return b
}

// stop ends the heartbeat and returns the claim as last renewed, and why
// it was lost, if it was.
func (b *beat) stop() (Claim, error) {
	b.stp()
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c, b.lost
}

func (w *Worker) emit(t *task.Task, msg string) {
	if w.Emit == nil {
		return
	}
	e := loop.Event{Kind: loop.EventWorker, Time: w.Now(), WorkerID: w.ID, Message: msg}
	if t != nil {
		e.Task = &loop.TaskRef{ID: t.ID, Title: t.Title}
	}
	w.Emit(e)
}

// isRemoteError is a failure to reach the remote or a push it refused:
// worth trying again later.
func isRemoteError(err error) bool {
	return errors.Is(err, vcs.ErrPushRejected) || isFetchError(err)
}

func short(commit string) string { return commit[:min(len(commit), 12)] }

func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
