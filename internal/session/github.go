package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/tracker"
	ghtracker "github.com/ralph-loop/ralph/internal/tracker/github"
)

// trackerPrefix starts a plan that is a tracker's query, not a file.
const trackerPrefix = "github:"

// githubBranch is the branch a run of GitHub issues works on: its pull
// request's head.
const githubBranch = "ralph/issues"

// IsTrackerPlan reports a plan that is github:OWNER/REPO.
func IsTrackerPlan(plan string) bool { return strings.HasPrefix(plan, trackerPrefix) }

// snapshotPath is where the plan of github:OWNER/REPO is kept, under
// .ralph/: the issues as a prd.json plan the loop works on.
func snapshotPath(dir, plan string) string {
	owner, name, err := ghtracker.ParseRepo(plan)
	if err != nil {
		owner, name = "invalid", "plan"
	}
	return filepath.Join(dir, state.Dir, "github", owner+"_"+name+".json")
}

// cacheDir keeps the GitHub answers' ETags between runs.
func cacheDir(dir string) string { return filepath.Join(dir, state.Dir, "github", "cache") }

// newGitHub connects to repo (OWNER/REPO) with the token of the
// environment or of the gh CLI. waiting, when set, hears of rate-limit
// waits.
func newGitHub(ctx context.Context, f *Host, dir string, cfg config.Config, repo string,
	waiting func(until time.Time, why string)) (*ghtracker.Client, error) {
	if _, _, err := ghtracker.ParseRepo(repo); err != nil {
		return nil, usageError(err)
	}
	if waiting == nil {
		waiting = waitNotice(f)
	}
	token, _ := ghtracker.Token(ctx, f.Environ(), dir)
	if token == "" {
		return nil, fmt.Errorf("%s: no GitHub token: set GITHUB_TOKEN or GH_TOKEN, or log in with gh auth login", repo)
	}
	return ghtracker.New(ghtracker.Options{Repo: repo, Token: token, BaseURL: cfg.GitHub.APIURL,
		Query:    ghtracker.Query{Label: cfg.GitHub.Label, Milestone: cfg.GitHub.Milestone, Assignee: cfg.GitHub.Assignee},
		CacheDir: cacheDir(dir), MaxWait: cfg.MaxWait.D(), Waiting: waiting})
}

// SyncTrackerPlan fetches the issues of a github: plan into its snapshot
// and returns the tracker, and a warning when the snapshot stood in for
// an unreachable GitHub. It does nothing for a plan file.
func SyncTrackerPlan(ctx context.Context, f *Host, dir string, cfg config.Config) (*ghtracker.Client, string, error) {
	if !IsTrackerPlan(cfg.Tasks) {
		return nil, "", nil
	}
	gh, err := newGitHub(ctx, f, dir, cfg, cfg.Tasks, waitNotice(f))
	if err != nil {
		return nil, "", err
	}
	warn, err := tracker.Sync(ctx, branchSource{gh, githubBranch}, snapshotPath(dir, cfg.Tasks))
	return gh, warn, err
}

// waitNotice tells stderr of a rate-limit wait, before a run's renderer
// is up (a run's waits are EventWaiting, as an agent's usage limit).
func waitNotice(f *Host) func(time.Time, string) {
	return func(until time.Time, why string) {
		fmt.Fprintf(f.IO.ErrOut, "ralph: %s: waiting until %s\n", why, until.Local().Format(time.TimeOnly))
	}
}

// branchSource names the branch the snapshot's plan works on (its
// branchName), so a run of issues happens off the default branch.
type branchSource struct {
	tracker.Source
	branch string
}

func (b branchSource) Branch() string { return b.branch }

// trackerPlanFile is the snapshot path that stands for a github: plan in
// openPlan; a missing snapshot says how to make one.
func trackerPlanFile(dir, plan string) (string, error) {
	if _, _, err := ghtracker.ParseRepo(plan); err != nil {
		return "", usageError(err)
	}
	path := snapshotPath(dir, plan)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: no snapshot of its issues yet (%s): ralph run or ralph tasks list fetches them", plan, path)
	}
	return path, nil
}

// writeBack turns the loop's events into write-backs to the tracker: a
// task that starts, is done or fails says so on its issue. A write-back
// that fails is a warning, never the run's end: the snapshot holds the
// truth and the next run (or ralph pr) writes it back again.
type writeBack struct {
	ctx     context.Context
	tr      tracker.WriteBack
	store   *state.Store
	runID   string
	emit    func(loop.Event)
	mu      sync.Mutex
	started map[string]bool
	// finished: done or failed in this run.
	finished map[string]bool
	// offline: GitHub could not be reached; the rest of the run writes
	// nothing back (each try could hang for the client's timeout) and
	// the next run's reconcile catches up.
	offline bool
}

func newWriteBack(ctx context.Context, tr tracker.WriteBack, store *state.Store, runID string, emit func(loop.Event)) *writeBack {
	return &writeBack{ctx: ctx, tr: tr, store: store, runID: runID, emit: emit,
		started: map[string]bool{}, finished: map[string]bool{}}
}

// handle writes back what e says.
func (w *writeBack) handle(e loop.Event) {
	if e.Task == nil || strings.Contains(e.Task.ID, ",") {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.offline {
		return
	}
	t := task.Task{ID: e.Task.ID, Title: e.Task.Title}
	var err error
	switch {
	case e.Kind == loop.EventIterationStarted && !w.started[t.ID]:
		w.started[t.ID] = true
		err = w.tr.Started(w.ctx, tracker.Update{Task: t, RunID: w.runID})
	case e.Kind == loop.EventIterationEnded && e.Record != nil && e.Record.Outcome == state.OutcomeTaskDone:
		w.finished[t.ID] = true
		err = w.done(t)
	case e.Kind == loop.EventTaskFailed:
		w.finished[t.ID] = true
		err = w.tr.Failed(w.ctx, tracker.Update{Task: t, RunID: w.runID, Receipt: w.receipt(t.ID), Error: e.Message})
	}
	w.failed(err)
}

// stopped is the run's end: the tasks it started and left unfinished are
// no longer in progress. A run stopped by Ctrl-C still says so, within a
// few seconds.
func (w *writeBack) stopped(plan *task.Plan, status string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.offline {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 10*time.Second)
	defer cancel()
	for _, t := range plan.Tasks {
		if !w.started[t.ID] || w.finished[t.ID] || t.Status == task.StatusDone {
			continue
		}
		if err := w.tr.Stopped(ctx, tracker.Update{Task: t, RunID: w.runID, Status: status}); err != nil {
			w.failed(err)
			return
		}
	}
}

// failed warns of a write-back that failed; a network failure stops the
// write-backs of this run.
func (w *writeBack) failed(err error) {
	if err == nil || w.ctx.Err() != nil {
		return
	}
	msg := "write-back: " + err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		w.offline = true
		msg += "; GitHub is unreachable: the next run (or ralph pr) writes back what this one could not"
	}
	w.emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: msg})
}

func (w *writeBack) receipt(id string) tracker.Receipt {
	history, _ := w.store.History()
	return tracker.ReceiptOf(history, id)
}

func (w *writeBack) done(t task.Task) error {
	return w.doneWith(t, w.receipt(t.ID))
}

func (w *writeBack) doneWith(t task.Task, r tracker.Receipt) error {
	runID := r.RunID
	if runID == "" {
		runID = w.runID
	}
	return w.tr.Done(w.ctx, tracker.Update{Task: t, RunID: runID, Receipt: r})
}

// reconcile writes back what an earlier run could not (it was killed, or
// GitHub was away): each task the snapshot says is done, or the state
// says failed, and that this project's history knows. The write-backs are
// idempotent, so what already reached GitHub is not sent again.
func (w *writeBack) reconcile(plan *task.Plan) {
	st, _ := w.store.LoadState()
	history, _ := w.store.History()
	for _, t := range plan.Tasks {
		r := tracker.ReceiptOf(history, t.ID)
		if r.Iterations == 0 {
			continue // not this project's work: leave GitHub's record alone
		}
		var err error
		switch {
		case t.Status == task.StatusDone:
			err = w.doneWith(t, r)
		case st.Tasks[t.ID].Failed:
			err = w.tr.Failed(w.ctx, tracker.Update{Task: t, RunID: w.runID, Receipt: r, Error: st.Tasks[t.ID].LastError})
		}
		if err != nil {
			w.failed(err)
			return
		}
	}
}

// stopReason says in a few words why a run ended, for an issue it left
// unfinished.
func stopReason(err error) string {
	switch {
	case err == nil:
		return "done"
	case errors.Is(err, loop.ErrLimit):
		return "a limit"
	case errors.Is(err, loop.ErrStuck):
		return "stuck"
	case errors.Is(err, loop.ErrInterrupted):
		return "interrupted"
	}
	return "an error"
}
