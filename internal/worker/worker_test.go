package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/gittest"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
)

const testPlan = `# Plan

- [ ] T1: first
- [ ] T2: second
- [ ] T3: third
  - Depends on: T1
`

// newRemote makes a bare repository whose main branch holds the plan,
// and returns its path.
func newRemote(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	seed := filepath.Join(root, "seed")
	if err := os.MkdirAll(seed, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(seed, "IMPLEMENTATION_PLAN.md"), testPlan)
	writeFile(t, filepath.Join(seed, ".gitignore"), ".ralph/\n")
	writeFile(t, filepath.Join(seed, "progress.txt"), "# progress\n")
	gittest.Init(t, seed)
	bare := filepath.Join(root, "remote.git")
	gittest.Git(t, root, "clone", "-q", "--bare", seed, bare)
	return bare
}

// clone clones the remote and opens it as ralph does.
func clone(t *testing.T, remote string) *vcs.Git {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, filepath.Dir(dir), "clone", "-q", remote, dir)
	g, err := vcs.Open(t.Context(), dir, gittest.Env(dir))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ledger(g *vcs.Git) *Ledger {
	return &Ledger{Git: g, Remote: "origin", Branch: "main", Plan: "IMPLEMENTATION_PLAN.md"}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestClaimRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	a, b := ledger(clone(t, remote)), ledger(clone(t, remote))
	now := time.Now()
	for _, id := range []string{"T1", "T2"} {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, l := range []*Ledger{a, b} {
			wg.Go(func() {
				<-start
				_, errs[i] = l.Claim(t.Context(), id, fmt.Sprintf("w%d", i), now, time.Minute, nil)
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrTaken):
				t.Fatalf("%s: claim failed otherwise than lost: %v", id, err)
			}
		}
		if won != 1 {
			t.Fatalf("%s: %d workers won the claim, want exactly 1 (%v)", id, won, errs)
		}
		v, err := a.Fetch(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if c := v.Claims[id]; c.State != StateWorking || !c.Live(now) {
			t.Errorf("%s: claim as fetched: %+v", id, c)
		}
	}
}

func TestExpiredClaimIsTakenOver(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	a, b := ledger(clone(t, remote)), ledger(clone(t, remote))
	start := time.Now()
	mine, err := a.Claim(t.Context(), "T1", "a", start, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	later := start.Add(2 * time.Second)
	old := v.Claims["T1"]
	if old.Worker != "a" || old.Live(later) {
		t.Fatalf("a's claim %+v should have run out at %s", old, later)
	}
	if _, err := b.Claim(t.Context(), "T1", "b", later, time.Minute, nil); !errors.Is(err, ErrTaken) {
		t.Fatalf("creating a claim that exists: %v, want ErrTaken", err)
	}
	if _, err := b.Claim(t.Context(), "T1", "b", later, time.Minute, &old); err != nil {
		t.Fatalf("taking over an expired claim: %v", err)
	}
	if err := a.Renew(t.Context(), &mine, later, time.Minute); !errors.Is(err, ErrTaken) {
		t.Fatalf("renewing a claim taken over: %v, want ErrTaken", err)
	}
	v, err = a.Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := v.Claims["T1"]
	if c.Worker != "b" {
		t.Fatalf("claim after the takeover: %+v", c)
	}
	if err := b.Fail(t.Context(), &c, "gave up"); err != nil {
		t.Fatal(err)
	}
	v, _ = a.Fetch(t.Context())
	if f := v.Claims["T1"]; f.State != StateFailed || !f.Live(later.Add(time.Hour)) || f.Reason != "gave up" {
		t.Fatalf("failed claim: %+v", f)
	}
	if err := b.Release(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	v, _ = a.Fetch(t.Context())
	if _, ok := v.Claims["T1"]; ok {
		t.Fatalf("claim still there after release: %+v", v.Claims)
	}
}

// taskTree makes a task's worktree from the remote's head, as a worker
// does, with the task's work committed there the way the loop commits
// it: the work and the plan's mark in one commit.
func taskTree(t *testing.T, l *Ledger, id, file string) (*vcs.Git, string) {
	t.Helper()
	ctx := t.Context()
	head, err := l.fetchHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "wt")
	tree, err := l.Git.AddWorktreeAt(ctx, dir, TaskBranchPrefix+id, head)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, file), id+" was here\n")
	f, err := os.OpenFile(filepath.Join(dir, "progress.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "%s: learned something\n", id)
	f.Close()
	plan, err := task.Load(filepath.Join(dir, "IMPLEMENTATION_PLAN.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.SetStatus(id, task.StatusDone); err != nil {
		t.Fatal(err)
	}
	if _, err := tree.Commit(ctx, "feat: "+id); err != nil {
		t.Fatal(err)
	}
	return tree, head
}

func TestLandRebasesOntoOtherWorkersResults(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	a, b := ledger(clone(t, remote)), ledger(clone(t, remote))
	// Both start from the same head; b lands second and must rebase
	// (the plan's marks are on adjacent lines: a textual merge would
	// conflict).
	treeA, baseA := taskTree(t, a, "T1", "one.txt")
	treeB, baseB := taskTree(t, b, "T2", "two.txt")
	nop := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	landA := &Landing{Ledger: a, Tree: treeA, TaskBranch: TaskBranchPrefix + "T1", Base: baseA,
		Union: []string{"progress.txt"}, Sleep: nop}
	var reports []string
	landB := &Landing{Ledger: b, Tree: treeB, TaskBranch: TaskBranchPrefix + "T2", Base: baseB,
		Union: []string{"progress.txt"}, Report: func(m string) { reports = append(reports, m) }, Sleep: nop}
	// a lands while b is about to push: b's push is no fast-forward.
	landB.beforePush = func() {
		landB.beforePush = nil
		if _, err := landA.Land(t.Context(), "T1"); err != nil {
			t.Errorf("landing T1: %v", err)
		}
	}
	if _, err := landB.Land(t.Context(), "T2"); err != nil {
		t.Fatalf("landing T2: %v", err)
	}
	if len(reports) != 1 || !strings.Contains(reports[0], "moved on") {
		t.Errorf("T2's landing should have found the branch moved on once: %q", reports)
	}
	check := clone(t, remote).Root
	log := gittest.Git(t, check, "log", "--format=%s", "main")
	if log != "feat: T2\nfeat: T1\ninitial" {
		t.Errorf("run branch history:\n%s\nwant one commit per task", log)
	}
	plan, err := task.Load(filepath.Join(check, "IMPLEMENTATION_PLAN.md"))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]task.Status{"T1": task.StatusDone, "T2": task.StatusDone, "T3": task.StatusOpen} {
		if got, _ := plan.Plan().Task(id); got.Status != want {
			t.Errorf("%s: %s, want %s", id, got.Status, want)
		}
	}
	progress, _ := os.ReadFile(filepath.Join(check, "progress.txt"))
	for _, id := range []string{"T1", "T2"} {
		if !strings.Contains(string(progress), id+": learned something") {
			t.Errorf("progress.txt lost %s's line:\n%s", id, progress)
		}
	}
	// Each commit holds its task's work and its mark, nothing else.
	files := gittest.Git(t, check, "show", "--name-only", "--format=", "main")
	if files != "IMPLEMENTATION_PLAN.md\nprogress.txt\ntwo.txt" {
		t.Errorf("T2's commit changes:\n%s", files)
	}
}

func TestLandBacksOffWhileTheRemoteRefuses(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	gate := filepath.Join(t.TempDir(), "refuse")
	writeFile(t, gate, "")
	hook := filepath.Join(remote, "hooks", "pre-receive")
	writeFile(t, hook, "#!/bin/sh\nif [ -e '"+gate+"' ]; then echo 'maintenance: try later' >&2; exit 1; fi\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	a := ledger(clone(t, remote))
	tree, base := taskTree(t, a, "T1", "one.txt")
	var reports []string
	land := &Landing{Ledger: a, Tree: tree, TaskBranch: TaskBranchPrefix + "T1", Base: base,
		Report: func(m string) { reports = append(reports, m) },
		Sleep: func(ctx context.Context, _ time.Duration) error {
			// The remote comes back after the second refusal.
			if len(reports) == 2 {
				return os.Remove(gate)
			}
			return ctx.Err()
		}}
	commit, err := land.Land(t.Context(), "T1")
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 2 || !strings.Contains(reports[0], "push refused") {
		t.Errorf("reports: %q, want two refused pushes", reports)
	}
	if got := gittest.Git(t, remote, "rev-parse", "main"); got != commit {
		t.Errorf("remote main at %s, want the landed %s", got, commit)
	}
}

func TestLandRefusesATaskLandedAlready(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	a, b := ledger(clone(t, remote)), ledger(clone(t, remote))
	// Both did T1 (b's claim had run out and a took it over, say): the
	// second one is not landed.
	treeA, baseA := taskTree(t, a, "T1", "one.txt")
	treeB, baseB := taskTree(t, b, "T1", "uno.txt")
	nop := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	if _, err := (&Landing{Ledger: a, Tree: treeA, TaskBranch: TaskBranchPrefix + "T1", Base: baseA, Sleep: nop}).Land(t.Context(), "T1"); err != nil {
		t.Fatal(err)
	}
	_, err := (&Landing{Ledger: b, Tree: treeB, TaskBranch: TaskBranchPrefix + "T1", Base: baseB, Sleep: nop}).Land(t.Context(), "T1")
	if !errors.Is(err, ErrLanded) {
		t.Fatalf("landing T1 twice: %v, want ErrLanded", err)
	}
	if n := gittest.Git(t, remote, "rev-list", "--count", "main"); n != "2" {
		t.Errorf("main has %s commits, want the initial one and T1's", n)
	}
}

// doTask is a RunTask that does what a task run does in the worktree:
// the work and the plan's mark, committed together. fail names tasks that
// fail instead.
func doTask(fail string) RunTask {
	return func(ctx context.Context, dir, id string) error {
		if id == fail {
			return fmt.Errorf("%w: task %s failed", loop.ErrStuck, id)
		}
		if err := os.WriteFile(filepath.Join(dir, "work-"+id+".txt"), []byte(id), 0o644); err != nil {
			return err
		}
		plan, err := task.Load(filepath.Join(dir, "IMPLEMENTATION_PLAN.md"))
		if err != nil {
			return err
		}
		if err := plan.SetStatus(id, task.StatusDone); err != nil {
			return err
		}
		g, err := vcs.Open(ctx, dir, gittest.Env(dir))
		if err != nil {
			return err
		}
		_, err = g.Commit(ctx, "feat: "+id)
		return err
	}
}

// newWorker is a worker in a clone of its own.
func newWorker(t *testing.T, remote, id string, run RunTask, events *[]string, mu *sync.Mutex) *Worker {
	t.Helper()
	g := clone(t, remote)
	return &Worker{Ledger: ledger(g), ID: id, Lease: time.Second, RelDir: ".",
		TreesDir: filepath.Join(g.Root, ".ralph", "worktrees"), Union: []string{"progress.txt"}, Run: run,
		Emit: func(e loop.Event) {
			mu.Lock()
			defer mu.Unlock()
			*events = append(*events, e.WorkerID+": "+e.Message)
		}}
}

func TestTwoWorkersShareAPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, branch string
		// made: the workers make the run branch, which the remote lacks.
		made bool
	}{
		{"on_main", "main", false},
		{"on_a_fresh_branch", "ralph/fleet", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			remote := newRemote(t)
			var mu sync.Mutex
			var events []string
			ws := []*Worker{newWorker(t, remote, "a", doTask(""), &events, &mu), newWorker(t, remote, "b", doTask(""), &events, &mu)}
			var wg sync.WaitGroup
			errs := make([]error, len(ws))
			for i, w := range ws {
				w.Ledger.Branch, w.MakeBranch, w.From = tc.branch, tc.made, "main"
				wg.Go(func() { errs[i] = w.Loop(t.Context()) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("worker %s: %v", ws[i].ID, err)
				}
			}
			made := strings.Count(strings.Join(events, "\n"), "made the run branch "+tc.branch+" on origin from main")
			if want := map[bool]int{true: 1}[tc.made]; made != want {
				t.Errorf("%d workers made the run branch, want %d", made, want)
			}
			log := gittest.Git(t, remote, "log", "--format=%s", tc.branch)
			for _, id := range []string{"T1", "T2", "T3"} {
				if n := strings.Count(log, "feat: "+id); n != 1 {
					t.Errorf("%s landed %d times:\n%s", id, n, log)
				}
			}
			if strings.Index(log, "feat: T3") > strings.Index(log, "feat: T1") {
				t.Errorf("T3 landed before its dependency T1:\n%s", log)
			}
			if refs := gittest.Git(t, remote, "for-each-ref", "refs/ralph/"); refs != "" {
				t.Errorf("claims left:\n%s", refs)
			}
			if t.Failed() {
				t.Log(strings.Join(events, "\n"))
			}
		})
	}
}

func TestFailedTaskStopsTheWorkersStuck(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	var mu sync.Mutex
	var events []string
	// T1 fails: T3 waits on it for ever; T2 is done.
	w := newWorker(t, remote, "a", doTask("T1"), &events, &mu)
	err := w.Loop(t.Context())
	if !errors.Is(err, loop.ErrStuck) || !strings.Contains(err.Error(), "failed: T1; waiting on them: T3") {
		t.Fatalf("Loop: %v, want stuck on T1 with T3 waiting", err)
	}
	v, err := w.Ledger.Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st := w.Ledger.Status(v, time.Now())
	got := map[string]string{}
	for _, ts := range st.Tasks {
		got[ts.ID] = ts.State
	}
	want := map[string]string{"T1": TaskFailed, "T2": TaskDone, "T3": TaskWaiting}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("status: %v, want %v", got, want)
	}
	// Another worker sees the same and stops at once, claiming nothing.
	other := newWorker(t, remote, "b", doTask(""), &events, &mu)
	if err := other.Loop(t.Context()); !errors.Is(err, loop.ErrStuck) {
		t.Fatalf("second worker: %v, want stuck", err)
	}
}

func TestMakeBranchRaceHasOneMaker(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	main := gittest.Git(t, remote, "rev-parse", "main")
	ls := make([]*Ledger, 4)
	for i := range ls {
		ls[i] = ledger(clone(t, remote))
		ls[i].Branch = "ralph/fleet"
	}
	var wg sync.WaitGroup
	made := make([]bool, len(ls))
	errs := make([]error, len(ls))
	start := make(chan struct{})
	for i, l := range ls {
		wg.Go(func() {
			<-start
			made[i], _, errs[i] = l.MakeBranch(t.Context(), "main")
		})
	}
	close(start)
	wg.Wait()
	n := 0
	for i, err := range errs {
		if err != nil {
			t.Errorf("worker %d: %v", i, err)
		}
		if made[i] {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d workers made the branch, want exactly 1", n)
	}
	if got := gittest.Git(t, remote, "rev-parse", "ralph/fleet"); got != main {
		t.Errorf("ralph/fleet at %s, want main's %s", got, main)
	}
	// Made, it is left alone: a worker starting later makes nothing.
	if made, _, err := ls[0].MakeBranch(t.Context(), "main"); made || err != nil {
		t.Errorf("MakeBranch on a branch that exists: made %v, %v", made, err)
	}
}

func TestMakeBranchBase(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	// develop is main and one commit more.
	g := clone(t, remote)
	gittest.Git(t, g.Root, "commit", "-q", "--allow-empty", "-m", "develop")
	gittest.Git(t, g.Root, "push", "-q", "origin", "HEAD:refs/heads/develop")
	for _, tc := range []struct{ from, want string }{
		{"develop", "develop"},
		{"", "main"},
		{"gone", "main"}, // a branch of the clone's that the remote lacks
	} {
		t.Run("from="+tc.from, func(t *testing.T) {
			l := ledger(clone(t, remote))
			l.Branch = "ralph/from-" + tc.want + "-" + tc.from
			made, base, err := l.MakeBranch(t.Context(), tc.from)
			if err != nil || !made || base != tc.want {
				t.Fatalf("MakeBranch(%q): made %v from %q, %v; want made from %q", tc.from, made, base, err, tc.want)
			}
			if got, want := gittest.Git(t, remote, "rev-parse", l.Branch), gittest.Git(t, remote, "rev-parse", tc.want); got != want {
				t.Errorf("%s at %s, want %s's %s", l.Branch, got, tc.want, want)
			}
		})
	}
}

func TestNoBranchMadeUnlessAllowed(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	var mu sync.Mutex
	var events []string
	w := newWorker(t, remote, "a", doTask(""), &events, &mu)
	w.Ledger.Branch = "ralph/fleet"
	if err := w.Loop(t.Context()); err == nil || !strings.Contains(err.Error(), "couldn't find remote ref refs/heads/ralph/fleet") {
		t.Fatalf("Loop on a branch the remote lacks, not allowed to make it: %v", err)
	}
	if refs := gittest.Git(t, remote, "for-each-ref", "refs/heads/ralph/"); refs != "" {
		t.Errorf("branches made:\n%s", refs)
	}
}

// gitCalls counts the git commands of a trace (GIT_TRACE) by name.
func gitCalls(t *testing.T, trace string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if _, cmd, ok := strings.Cut(line, "trace: built-in: git "); ok {
			n[strings.Fields(cmd)[0]]++
		}
	}
	return n
}

// t0 is the waiting tests' clock's start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// ms is a duration in milliseconds.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestWaitingWorker: worker b comes to a plan whose T1 and T2 another
// worker holds (T3 waits on T1): it has nothing to claim, and waits. Its
// clock moves by its waits, which return at once; something happens
// during its n-th wait; the first task it runs ends the test.
func TestWaitingWorker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// hold is the other worker's lease, lease b's.
		hold, lease time.Duration
		// at the wait numbered so, happen runs.
		at     int
		happen func(ctx context.Context, other *Ledger) error
		waits  []time.Duration
		ran    string
		// looks are b's ls-remotes; it fetches twice: to start, and
		// after its wait.
		looks int
	}{{
		// b looks at the branch with ls-remote, soon and then every
		// second, and fetches once it moved.
		name: "sees_a_landing_within_a_second", hold: time.Hour, lease: time.Hour,
		at: 6, happen: func(ctx context.Context, other *Ledger) error {
			if err := doTask("")(ctx, other.Git.Root, "T1"); err != nil {
				return err
			}
			return other.Git.PushBranch(ctx, "origin", "main", "HEAD")
		},
		waits: []time.Duration{ms(200), ms(400), ms(800), time.Second, time.Second, time.Second},
		ran:   "T3",
		looks: 6,
	}, {
		// Nothing moves: b fetches again when the other's lease ends,
		// and takes T1 over.
		name: "wakes_when_a_lease_runs_out", hold: 3 * time.Second, lease: time.Hour,
		waits: []time.Duration{ms(200), ms(400), ms(800), time.Second, ms(600)},
		ran:   "T1",
		looks: 4,
	}, {
		// A claim given back leaves the branch as it is: b sees it at
		// its next fetch, an eighth of its lease (2 s) after the last.
		name: "sees_a_claim_given_back_at_its_next_fetch", hold: time.Hour, lease: 16 * time.Second,
		at: 2, happen: func(ctx context.Context, other *Ledger) error {
			v, err := other.Fetch(ctx)
			if err != nil {
				return err
			}
			return other.Release(ctx, v.Claims["T2"])
		},
		waits: []time.Duration{ms(200), ms(400), ms(800), ms(600)},
		ran:   "T2",
		looks: 3,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			remote := newRemote(t)
			other := ledger(clone(t, remote))
			for _, id := range []string{"T1", "T2"} {
				if _, err := other.Claim(t.Context(), id, "other", t0, tc.hold, nil); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			var events []string
			w := newWorker(t, remote, "b", nil, &events, &mu)
			trace := filepath.Join(t.TempDir(), "trace")
			w.Ledger.Git.Env = append(w.Ledger.Git.Env, "GIT_TRACE="+trace)
			now := t0
			w.Lease, w.Now = tc.lease, func() time.Time { return now }
			var waits []time.Duration
			w.Sleep = func(ctx context.Context, d time.Duration) error {
				if d == w.Lease/3 { // the heartbeat's: until the task ends
					<-ctx.Done()
					return ctx.Err()
				}
				waits = append(waits, d)
				now = now.Add(d)
				if len(waits) == tc.at {
					if err := tc.happen(ctx, other); err != nil {
						t.Error(err)
					}
				}
				return ctx.Err()
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var ran string
			var calls map[string]int
			w.Run = func(ctx context.Context, _, id string) error {
				ran, calls = id, gitCalls(t, trace)
				cancel()
				return ctx.Err()
			}
			if err := w.Loop(ctx); !errors.Is(err, loop.ErrInterrupted) {
				t.Fatalf("Loop: %v", err)
			}
			if fmt.Sprint(waits) != fmt.Sprint(tc.waits) || ran != tc.ran {
				t.Errorf("waited %v, then ran %q; want %v, then %s", waits, ran, tc.waits, tc.ran)
			}
			if calls["fetch"] != 2 || calls["ls-remote"] != tc.looks {
				t.Errorf("git commands before %s ran: %v; want 2 fetches and %d ls-remotes", tc.ran, calls, tc.looks)
			}
			if t.Failed() {
				t.Log(strings.Join(events, "\n"))
			}
		})
	}
}

// A worker stops once a commit it pulls changed ralph.toml from the run's
// base commit (issue 37): the agent of T1 (another worker's, as likely)
// adds a notify command, which lands; the worker's next fetch stops it,
// naming the commit, before T2 runs in a worktree that has it.
func TestWorkerStopsOnAChangedConfig(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	var mu sync.Mutex
	var events []string
	var ran []string
	tamper := func(ctx context.Context, dir, id string) error {
		ran = append(ran, id)
		if id == "T1" {
			writeFile(t, filepath.Join(dir, "ralph.toml"), "[notify]\ncommand = \"touch /tmp/pwned\"\n")
		}
		return doTask("")(ctx, dir, id)
	}
	w := newWorker(t, remote, "a", tamper, &events, &mu)
	w.Pinned = []string{"ralph.toml"}
	err := w.Loop(t.Context())
	head := gittest.Git(t, remote, "rev-parse", "main")
	if err == nil || !strings.Contains(err.Error(), "ralph.toml at commit "+head[:12]+" of main is not the one at the run's base commit") {
		t.Fatalf("Loop: %v, want a stop naming %s", err, head[:12])
	}
	// It names the commit that made the change, not only the head.
	changer := gittest.Git(t, remote, "log", "--format=%h %s", "-1", "--abbrev=12", "main", "--", "ralph.toml")
	id, subject, _ := strings.Cut(changer, " ")
	if want := "commit " + id + " changed it (" + subject + ")"; !strings.Contains(err.Error(), want) {
		t.Errorf("Loop: %v\nwant it to say %q", err, want)
	}
	if fmt.Sprint(ran) != "[T1]" {
		t.Errorf("tasks run: %v, want T1 alone", ran)
	}
}
