package loop

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ralph-loop/ralph/internal/guard"
	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// What stands between a done claim and a task marked done (DESIGN §8):
// the gates (baseline.go), then the tamper guard, which reads the task's
// diff and reports changes that weaken the checks, then the reviewer
// (review.go). Each can reject the claim; each leaves evidence in the
// iteration's history line and in the task's commit.

// The tamper guard's modes.
const (
	// GuardWarn records and shows the guard's findings, passes them to the
	// reviewer and into the next prompt; they never reject a task.
	GuardWarn = "warn"
	// GuardStrict rejects a claim on any finding the task's own text did
	// not ask for (guard_rejected).
	GuardStrict = "strict"
	// GuardOff turns the guard off.
	GuardOff = "off"
)

// evidence is what checked one done claim.
type evidence struct {
	gates  []state.GateRun
	guard  *state.GuardEvidence
	review *state.ReviewEvidence
}

// record puts the evidence into the iteration's history line.
func (e evidence) record(rec *state.Record) {
	rec.Gates, rec.Guard, rec.Review = e.gates, e.guard, e.review
}

// trailers are the commit trailers that say what checked the task.
func (e evidence) trailers() string {
	var lines []string
	if len(e.gates) > 0 {
		lines = append(lines, "Ralph-Gates: "+state.GatesLine(e.gates))
	}
	if e.review != nil {
		lines = append(lines, "Ralph-Review: "+state.ReviewLine(e.review))
	}
	if e.guard != nil {
		lines = append(lines, "Ralph-Guard: "+state.GuardLine(e.guard))
	}
	return strings.Join(lines, "\n")
}

// withTrailers ends a commit message with trailers, as their own
// paragraph.
func withTrailers(msg, trailers string) string {
	if trailers == "" {
		return msg
	}
	return strings.TrimRight(msg, "\n") + "\n\n" + trailers + "\n"
}

// guardMode is the guard's mode, warn by default.
func (r *runner) guardMode() string {
	if r.opts.Guard == "" {
		return GuardWarn
	}
	return r.opts.Guard
}

// checksDiffs reports whether anything reads a task's diff: the guard, or
// a reviewer of each task.
func (r *runner) checksDiffs() bool {
	return r.deps.Trees != nil && (r.guardMode() != GuardOff || r.reviewsTasks())
}

// markStart remembers the working tree as t's first attempt starts: the
// diff of every later claim is read from there. An earlier attempt's
// mark stays, so a retry is judged on all the task's work. When the tree
// is as the last iteration's look left it (seeTree), that look's tree is
// the start: no second look.
func (r *runner) markStart(ctx context.Context, t task.Task) {
	if _, ok := r.taskGates[t.ID]; !ok {
		r.taskGates[t.ID] = r.deps.Plan.Plan().Validation
	}
	if !r.checksDiffs() || r.st.Tasks[t.ID].StartTree != "" {
		return
	}
	look := r.deps.Trees.Snapshot
	if r.treeSeen {
		look = r.deps.Trees.Seen
	}
	id, err := look(ctx)
	if err != nil {
		r.warn("could not record the tree %s starts from (its diff will not be checked): %v", t.ID, err)
		return
	}
	ts := r.st.Tasks[t.ID]
	ts.StartTree = id
	r.st.Tasks[t.ID] = ts
}

// claim is the work a done claim is about: the diff from the tree the
// task started at to the tree now.
type claim struct {
	// from is the tree the task started at; to the tree now, "" until
	// toTree writes it (when seen: the look's, which only a reader of
	// its files needs).
	from, to string
	seen     bool
	diff     []byte
	// err says why there is no diff.
	err error
	// looked: the snapshot of to was the repository's look at the tree
	// (Changes), which found changes; settle counts and need not look
	// again.
	looked  bool
	changes []string
	// dirty is the repository's Dirty, asked beside the diff when the
	// look was this iteration's and ralph commits what the agent left
	// (agent ownership); nil when not asked, or when it failed.
	dirty *dirtyAnswer
}

// dirtyAnswer is Dirty's answer as the claim's look saw the tree.
type dirtyAnswer struct {
	dirty bool
	// planWrites is the runner's count of its writes of the plan file
	// when it was asked (planWrites).
	planWrites uint64
}

// readClaim snapshots the tree and reads the diff since the claimed
// tasks started: the earliest start among them, else the start of the
// task the iteration ran.
func (r *runner) readClaim(ctx context.Context, t task.Task, ids []string) *claim {
	cl := &claim{}
	if r.deps.Trees == nil {
		cl.err = fmt.Errorf("no repository")
		return cl
	}
	for _, id := range ids {
		if s := r.st.Tasks[id].StartTree; s != "" {
			cl.from = s
			break
		}
	}
	if cl.from == "" {
		cl.from = r.st.Tasks[t.ID].StartTree
	}
	var exclude []string
	if r.opts.Ownership == task.OwnerRunner {
		// The runner's own edits of the plan (marks, the iteration log)
		// are not the agent's work; the agent's are put back.
		exclude = []string{r.deps.Plan.Plan().Path}
	}
	if !r.lookAtClaim(ctx, cl) {
		to, err := r.deps.Trees.Snapshot(ctx)
		if err != nil {
			cl.err = err
			return cl
		}
		cl.to = to
	}
	cl.seen = cl.looked
	if cl.from == "" {
		cl.err = fmt.Errorf("the tree the task started from is unknown")
		return cl
	}
	if cl.looked {
		// The diff reads the look's index: no tree need be written for
		// it, and toTree writes one only when something reads it. The
		// question settle asks, whether anything is left to commit, reads
		// the user's index and the tree, as the look left it: it is asked
		// now, beside the diff (dirtyAtSettle says when it still holds).
		var asked sync.WaitGroup
		var dirtyErr error
		if n, ok := r.planWrites(); ok && r.opts.Commit && r.opts.Ownership == task.OwnerAgent { // settle asks it then
			cl.dirty = &dirtyAnswer{planWrites: n}
			asked.Go(func() { cl.dirty.dirty, dirtyErr = r.deps.Repo.Dirty(ctx) })
		}
		cl.diff, cl.err = r.deps.Trees.Diff(ctx, cl.from, "", exclude)
		if asked.Wait(); dirtyErr != nil {
			cl.dirty = nil // settle asks again
		}
		return cl
	}
	cl.diff, cl.err = r.deps.Trees.Diff(ctx, cl.from, cl.to, exclude)
	return cl
}

// toTree is the tree the claim ends at, written from the look when first
// asked for ("" when it cannot be): before anything but ralph's reads
// changes the working tree.
func (r *runner) toTree(ctx context.Context, cl *claim) string {
	if cl.to == "" && cl.seen {
		cl.to, _ = r.deps.Trees.Seen(ctx)
		cl.seen = false
	}
	return cl.to
}

// lookAtClaim makes the iteration's look at the tree (Changes) the
// claim's, when the repository and Trees are one git working tree and
// the look's baseline is the tree the agent started from: settle then
// reuses it, and the claim's tree is the one the look saw (Seen). It
// returns false when the claim needs a snapshot of its own.
func (r *runner) lookAtClaim(ctx context.Context, cl *claim) bool {
	if r.deps.Repo == nil || any(r.deps.Repo) != any(r.deps.Trees) || !r.treeSeen {
		return false
	}
	changes, err := r.deps.Repo.Changes(ctx)
	if err != nil {
		return false
	}
	cl.looked, cl.changes = true, changes
	return true
}

// runGuard reads the claim's diff for changes that weaken the checks. It
// returns the report (one finding a line, for the reviewer and the next
// prompt) and whether the findings reject the claim (strict mode).
func (r *runner) runGuard(ctx context.Context, c *classified, tasks []task.Task, cl *claim) (report string, reject bool) {
	mode := r.guardMode()
	if mode == GuardOff || r.deps.Trees == nil {
		return "", false
	}
	ev := &state.GuardEvidence{Mode: mode, Findings: []state.GuardFinding{}}
	c.ev.guard = ev
	if cl.err != nil {
		ev.Error = cl.err.Error()
		r.warn("tamper guard: the diff of %s could not be read: %v", tasks[0].ID, cl.err)
		return "", false
	}
	names := diffPaths(cl.diff)
	findings, err := guard.Check(cl.diff, guard.Options{
		GateCommands: r.gateCommands(tasks[0]),
		ConfigFiles:  r.opts.GuardConfigFiles,
		Task:         taskText(tasks),
		Before:       r.treeReader(ctx, func() string { return cl.from }, names),
		After:        r.treeReader(ctx, func() string { return r.toTree(ctx, cl) }, names),
	})
	if err != nil {
		ev.Error = err.Error()
		r.warn("tamper guard: %v", err)
		return "", false
	}
	findings = append(append(r.planGatesChanged(tasks[0].ID), r.routeChanged()...), findings...)
	blocking := guard.Blocking(findings)
	ev.Blocking = len(blocking)
	for _, f := range findings {
		ev.Findings = append(ev.Findings, state.GuardFinding{Rule: string(f.Rule), File: f.File, Line: f.Line, Text: f.Text, Allowed: f.Allowed})
	}
	if len(findings) == 0 {
		return "", false
	}
	report = guard.Report(findings, 0)
	first, _, _ := strings.Cut(guard.Report(blocking, 0), "\n")
	if first == "" {
		first, _, _ = strings.Cut(report, "\n")
	}
	more := ""
	if len(findings) > 1 {
		more = fmt.Sprintf(" (+%d more)", len(findings)-1)
	}
	r.warn("tamper guard: %s in the diff of %s, %d not asked for by the task: %s%s",
		state.GuardLine(ev), tasks[0].ID, len(blocking), first, more)
	if mode != GuardStrict || len(blocking) == 0 {
		return report, false
	}
	c.outcome = state.OutcomeGuardRejected
	c.errText = fmt.Sprintf("the tamper guard found %s that weaken the checks: %s", words.Count(len(blocking), "change"), first)
	c.output = "The tamper guard (guard = \"strict\") rejected the work. Undo these changes, or do the task without them:\n" +
		guard.Report(blocking, 0)
	if put := r.putBackTamper(ctx, cl, blocking); len(put) > 0 {
		c.look = nil // settle looks again at the tree put back
		c.output += "ralph put these back as they were when the task started (the rest of your work is as you left it): " +
			strings.Join(put, ", ") + "\n"
	}
	return report, true
}

// gateCommands are the commands t's gates run, for the guard: the files,
// Makefile targets and package.json scripts they name are watched.
func (r *runner) gateCommands(t task.Task) []string {
	g := r.deps.Gate
	for {
		switch v := g.(type) {
		case *mergeGate:
			g = v.gate
			continue
		case *checkedGate:
			return append(v.gates.ProjectCommands(), v.gates.TaskCommands(t)...)
		case CommandGate:
			return append(v.ProjectCommands(), v.TaskCommands(t)...)
		}
		return nil
	}
}

// treeReader reads files as tree has them, for the guard's Before and
// After: the files the diff names in one look, others one by one. The
// tree is asked for at the first read.
func (r *runner) treeReader(ctx context.Context, treeOf func() string, names []string) func(string) ([]byte, bool) {
	var batch map[string][]byte
	var tree string
	return func(p string) ([]byte, bool) {
		if batch == nil {
			if tree = treeOf(); tree != "" {
				batch, _ = r.deps.Trees.Files(ctx, tree, names)
			}
			if batch == nil {
				batch = map[string][]byte{}
			}
		}
		if b, ok := batch[p]; ok || tree == "" {
			return b, ok
		}
		one, err := r.deps.Trees.Files(ctx, tree, []string{p})
		if err != nil {
			return nil, false
		}
		b, ok := one[p]
		return b, ok
	}
}

// diffPaths lists the files a diff made without renames names in its
// "diff --git a/P b/P" lines; quoted names are left to be read one by one.
func diffPaths(diff []byte) []string {
	var out []string
	for line := range bytes.SplitSeq(diff, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("diff --git a/"))
		if !ok || len(rest)%2 == 0 {
			continue
		}
		n := (len(rest) - 3) / 2
		if string(rest[n:n+3]) == " b/" && bytes.Equal(rest[:n], rest[n+3:]) {
			out = append(out, string(rest[:n]))
		}
	}
	return out
}

// taskText is what the tasks ask for, for the guard's exceptions.
func taskText(tasks []task.Task) string {
	var b strings.Builder
	for _, t := range tasks {
		b.WriteString(t.Title + ".\n" + t.Description + "\n")
		for _, c := range t.Criteria {
			b.WriteString(c + "\n")
		}
		b.WriteString(t.Notes + "\n")
	}
	return b.String()
}

// verify runs the guard and the reviewer on a claim whose gates passed.
// It returns false, with c filled in, when they reject it.
func (r *runner) verify(ctx context.Context, c *classified, t task.Task, ids []string) bool {
	if !r.checksDiffs() && !r.reviewsTasks() {
		return true
	}
	tasks := r.claimedTasks(t, ids)
	cl := &claim{err: fmt.Errorf("no repository")}
	if r.deps.Trees != nil {
		cl = r.readClaim(ctx, t, ids)
	}
	if rf, ok := asRefusal(cl.err); ok && r.opts.Commit {
		// No commit can take this tree: the claim is held before any
		// reviewer spends on it.
		r.refuseClaim(c, t, ids, rf)
		return false
	}
	// The guard still reads the diff with them (a strict guard rejects
	// the claim); settle looks again at the tree they were put back in.
	if r.putBackOwn(ctx, cl) {
		c.look = nil
	} else if cl.looked {
		c.look = cl
	}
	report, reject := r.runGuard(ctx, c, tasks, cl)
	if reject {
		return false
	}
	if !r.reviewsTasks() {
		return true
	}
	// The reviewer works in the tree; what it changes is put back, but
	// settle looks again rather than trust that.
	c.look = nil
	return r.reviewClaim(ctx, c, tasks, cl, report)
}

// claimedTasks are the tasks a claim is about, as the plan has them now.
func (r *runner) claimedTasks(t task.Task, ids []string) []task.Task {
	var out []task.Task
	for _, id := range ids {
		if ct, ok := r.deps.Plan.Plan().Task(id); ok {
			out = append(out, ct)
		}
	}
	if len(out) == 0 {
		out = []task.Task{t}
	}
	return out
}

// accepted is called once tasks are done: their diffs start afresh, and
// the commit carries the evidence.
func (r *runner) accepted(c *classified, ids []string) {
	for _, id := range ids {
		if ts, ok := r.st.Tasks[id]; ok && ts.StartTree != "" {
			ts.StartTree = ""
			r.st.Tasks[id] = ts
		}
	}
	r.trailers = c.ev.trailers()
}

// lander is a Gate whose last step brings the work in: --parallel's
// merge into the run branch. It runs once the guard and the reviewer
// passed the claim.
type lander interface {
	land(ctx context.Context, t task.Task) (ok bool, output string, err error)
}

// land runs the gate's last step, if it has one; false, with c filled in
// as gate_failed, when the work could not be brought in.
func (r *runner) land(ctx context.Context, t task.Task, c *classified) bool {
	l, ok := r.deps.Gate.(lander)
	if !ok {
		return true
	}
	// The commit that lands the work carries the evidence.
	r.trailers = c.ev.trailers()
	ok, output, err := l.land(ctx, t)
	if err == nil && ok {
		return true
	}
	c.outcome = state.OutcomeGateFailed
	c.errText = "quality gates failed"
	if err != nil {
		c.errText += ": " + err.Error()
	} else if first, _, _ := strings.Cut(output, "\n"); first != "" {
		c.errText = first
	}
	c.output = tail(output, prompt.MaxAttemptOutput)
	return false
}

// recordedFindings are the reviewer's findings and the guard's in a
// history line, for the prompt of a run that resumes the task: what the
// iteration's attempt note held.
func recordedFindings(rec state.Record) string {
	var b strings.Builder
	if v := rec.Review; v != nil && len(v.Findings) > 0 {
		b.WriteString("The reviewer (" + v.By() + ") asked for these changes:\n" + numbered(v.Findings))
	}
	if g := rec.Guard; g != nil && len(g.Findings) > 0 {
		b.WriteString("The tamper guard reported:\n")
		for _, f := range g.Findings {
			where := f.File
			if f.Line > 0 {
				where = fmt.Sprintf("%s:%d", f.File, f.Line)
			}
			fmt.Fprintf(&b, "%s: %s: %s\n", where, f.Rule, f.Text)
		}
	}
	return b.String()
}
