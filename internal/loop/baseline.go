package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// CommandGate is a Gate the loop can run one command at a time. With it
// the loop checks the starting tree before any agent runs (the baseline),
// makes gates that already fail there advisory when asked to, and reuses
// a command's result while the tree it ran on is unchanged. A Gate without
// it is only asked to Check.
type CommandGate interface {
	// ProjectCommands are the project's gates: run for every task, and
	// once on the starting tree.
	ProjectCommands() []string
	// TaskCommands are t's own checks (a plan's Validation Commands), run
	// after the project's; they describe work still to do, so the
	// baseline leaves them out.
	TaskCommands(t task.Task) []string
	// RunCommand runs one command; err is for one that could not be run.
	RunCommand(ctx context.Context, command string) (GateResult, error)
}

// GateResult is what one gate command did.
type GateResult struct {
	// ExitCode is -1 when the command was killed.
	ExitCode int
	// Output is the tail of what it printed.
	Output   string
	Duration time.Duration
	// TimedOut: the gate's timeout killed it.
	TimedOut bool
}

// TreeID identifies the content of a working tree, ralph's own .ralph/
// excluded: a git tree id. The repository is one when it can say (git and
// Sapling can; Repo itself does not ask for it).
type TreeID interface {
	Snapshot(ctx context.Context) (string, error)
}

// BaselineError is the project's gates failing on the starting tree,
// before any agent ran: the run stops before money is spent on work whose
// gates could never pass.
type BaselineError struct {
	Failed []FailedGate
}

// FailedGate is a gate command that failed.
type FailedGate struct {
	Command string
	Result  GateResult
}

// baselineTail is how many lines of a failing gate's output the error
// shows: the verdict, not the whole log (the gate keeps a bounded tail).
const baselineTail = 20

// Summary is the error's first line: what failed and the fix.
func (e *BaselineError) Summary() string {
	cmds := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		cmds[i] = "`" + f.Command + "`"
	}
	if len(cmds) == 1 {
		return fmt.Sprintf("the gate %s fails before any change: fix it, or run with --allow-failing-gates "+
			"to treat it as advisory for this run", cmds[0])
	}
	return fmt.Sprintf("the gates %s fail before any change: fix them, or run with --allow-failing-gates "+
		"to treat them as advisory for this run", strings.Join(cmds, ", "))
}

func (e *BaselineError) Error() string {
	var b strings.Builder
	b.WriteString(e.Summary())
	for _, f := range e.Failed {
		fmt.Fprintf(&b, "\n%s:", failedLine(f.Command, f.Result))
		for _, l := range lastLines(f.Result.Output, baselineTail) {
			b.WriteString("\n    " + l)
		}
	}
	return b.String()
}

// runMessage is how an error that ended a run reads in state.json and the
// run's last event: one line where the error has a summary.
func runMessage(err error) string {
	var be *BaselineError
	if errors.As(err, &be) {
		return be.Summary()
	}
	if sf, ok := asSandboxFailure(err); ok {
		return sf.Summary()
	}
	return err.Error()
}

// gateMemory is what the gates of a run share, its workers included: the
// commands made advisory by the baseline, and results by tree.
type gateMemory struct {
	// advisory is written by the baseline, before any worker starts, and
	// only read afterwards.
	advisory map[string]bool
	// skipped: the baseline did not run (Options.SkipBaseline).
	skipped bool
	mu      sync.Mutex
	results map[gateKey]GateResult
}

// gateKey is one command on one tree in one directory (a worktree of
// --parallel runs its gates in its own).
type gateKey struct{ dir, tree, command string }

// baseline runs the project's gates on the starting tree, before the
// first agent call. A gate that fails stops the run with a BaselineError,
// unless --allow-failing-gates makes it advisory: recorded in state.json,
// shown in the run's header, and its failures no longer reject a task.
// It also puts the gates behind the run's memory of results
// (checkedGate), so that an unchanged tree is not checked twice.
func (r *runner) baseline(ctx context.Context) error {
	r.gates = &gateMemory{advisory: map[string]bool{}, results: map[gateKey]GateResult{}}
	tree, _ := r.deps.Repo.(TreeID)
	g, ok := r.checkedGate(r.deps.Gate, tree).(*checkedGate)
	if !ok {
		return nil
	}
	r.deps.Gate = g
	if _, ok := r.next(); !ok {
		return nil // no agent will run: nothing to protect
	}
	if r.opts.SkipBaseline {
		r.gates.skipped = true
		return nil
	}
	var failed []string
	if b := r.opts.Baseline; b != nil {
		failed = b.Advisory
		if _, ok := r.artefactRepo(); ok {
			r.left.add(b.Made)
		}
	} else {
		var base *Baseline
		var err error
		r.watchGates(ctx, func() {
			base, err = checkBaseline(ctx, g.run, g.gates.ProjectCommands(), r.opts.AllowFailingGates)
		})
		if err != nil {
			return err
		}
		failed = base.Advisory
	}
	if len(failed) == 0 {
		return nil
	}
	for _, c := range failed {
		r.gates.advisory[c] = true
		r.st.AdvisoryGates = append(r.st.AdvisoryGates, c)
	}
	return r.save()
}

// Baseline is the project's gates as the starting tree left them: the
// commands that failed there, advisory for the run.
type Baseline struct {
	Advisory []string
	// Made are the untracked files the gates made (ArtefactRepo's
	// Untracked entries), which the run's commits leave out.
	Made []string
}

// commandRunner runs one gate command; reused says its result is an
// earlier one on the same tree.
type commandRunner func(ctx context.Context, command string) (res GateResult, reused bool, err error)

// CheckBaseline runs the project's gates on the starting tree before
// anything of the run has changed (the caller's branch, its state): a
// gate that fails is a BaselineError, or, with allowFailing, one of the
// returned advisory commands. An interrupt is ErrInterrupted. tree, when
// it can list untracked files, is the working tree the gates run in:
// what they make there is recorded in Made.
func CheckBaseline(ctx context.Context, g CommandGate, allowFailing bool, tree Repo) (*Baseline, error) {
	run := func(ctx context.Context, c string) (GateResult, bool, error) {
		res, err := g.RunCommand(ctx, c)
		return res, false, err
	}
	var b *Baseline
	var err error
	check := func() { b, err = checkBaseline(ctx, run, g.ProjectCommands(), allowFailing) }
	a, ok := tree.(ArtefactRepo)
	if !ok {
		check()
		return b, err
	}
	made := madeBy(ctx, a, check)
	if err != nil {
		return nil, err
	}
	b.Made = made
	return b, nil
}

func checkBaseline(ctx context.Context, run commandRunner, commands []string, allowFailing bool) (*Baseline, error) {
	var failed []FailedGate
	for _, c := range commands {
		res, _, err := run(ctx, c)
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		if _, ok := asSandboxFailure(err); ok {
			// Never advisory: the same refusal would meet every task.
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("checking the gates before the first agent call: %w", err)
		}
		if res.ExitCode != 0 {
			failed = append(failed, FailedGate{Command: c, Result: res})
		}
	}
	if len(failed) > 0 && !allowFailing {
		return nil, &BaselineError{Failed: failed}
	}
	b := &Baseline{}
	for _, f := range failed {
		b.Advisory = append(b.Advisory, f.Command)
	}
	return b, nil
}

// gatesNote is what the run's header says about its gates: the advisory
// ones, which a reader must not mistake for checks that hold.
func (r *runner) gatesNote() string {
	if r.gates != nil && r.gates.skipped {
		return " · gates not checked before the first agent call: the tree holds the last run's unfinished work"
	}
	if len(r.st.AdvisoryGates) == 0 {
		return ""
	}
	return " · advisory gates (failing before any change, --allow-failing-gates): `" +
		strings.Join(r.st.AdvisoryGates, "`, `") + "`"
}

// checkedGate runs a CommandGate's commands for the loop: results reused
// for an unchanged tree, advisory gates reported without rejecting.
type checkedGate struct {
	r     *runner
	gates CommandGate
	// tree identifies the working tree the gates run in; nil: no reuse.
	tree TreeID
	mem  *gateMemory
	// runs are the commands the last Check ran, for the evidence.
	runs []state.GateRun
}

// checkedGate puts g behind the run's memory of gates when g runs
// command by command, and returns g unchanged otherwise. tree is the
// working tree g runs in.
func (r *runner) checkedGate(g Gate, tree TreeID) Gate {
	cg, ok := g.(CommandGate)
	if !ok || r.gates == nil {
		return g
	}
	return &checkedGate{r: r, gates: cg, tree: tree, mem: r.gates}
}

// Check runs the project's gates, then t's own, stopping at the first
// failure that is not advisory. Its output reads as the gate package's
// did: "gate failed: `CMD` exited N after D" and the output's tail, or
// "gates passed: ..."; advisory failures are added, and warned about.
func (g *checkedGate) Check(ctx context.Context, t task.Task) (bool, string, error) {
	var cmds []string
	for _, c := range append(g.gates.ProjectCommands(), g.gates.TaskCommands(t)...) {
		if !slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	var passed []string
	var advisory []FailedGate
	g.runs = nil
	for _, c := range cmds {
		res, reused, err := g.run(ctx, c)
		if err != nil {
			return false, "", err
		}
		g.runs = append(g.runs, gateEvidence(c, res, reused, g.mem.advisory[c]))
		switch {
		case res.ExitCode == 0 && reused:
			passed = append(passed, c+" (unchanged tree: earlier result)")
		case res.ExitCode == 0:
			passed = append(passed, c)
		case g.mem.advisory[c]:
			advisory = append(advisory, FailedGate{Command: c, Result: res})
			g.r.warn("the advisory gate `%s` failed (%s); %s is not rejected for it (--allow-failing-gates)", c, howFailed(res), t.ID)
		default:
			// The first line is the iteration's error; the failing
			// command's output comes last, where a tail keeps it.
			var out strings.Builder
			out.WriteString(failedLine(c, res))
			if reused {
				out.WriteString(" (unchanged tree: earlier result)")
			}
			for _, a := range advisory {
				out.WriteString("\n(advisory, not rejecting: " + failedLine(a.Command, a.Result) + ")")
			}
			return false, out.String() + "\n" + res.Output, nil
		}
	}
	var out strings.Builder
	out.WriteString("gates passed: " + strings.Join(passed, "; "))
	for _, a := range advisory {
		out.WriteString(fmt.Sprintf("\nadvisory gate, not rejecting: %s\n%s", failedLine(a.Command, a.Result), a.Result.Output))
	}
	return true, out.String(), nil
}

// run runs one command, or reuses its result on this tree.
func (g *checkedGate) run(ctx context.Context, command string) (res GateResult, reused bool, err error) {
	key, ok := g.key(ctx, command)
	if ok {
		g.mem.mu.Lock()
		res, reused = g.mem.results[key]
		g.mem.mu.Unlock()
		if reused {
			return res, true, nil
		}
	}
	res, err = g.gates.RunCommand(ctx, command)
	if err != nil || !ok || res.TimedOut || res.ExitCode < 0 || ctx.Err() != nil {
		// A killed gate says nothing about the tree.
		return res, false, err
	}
	g.mem.mu.Lock()
	g.mem.results[key] = res
	g.mem.mu.Unlock()
	return res, false, nil
}

// key is the command on the tree as it is now; ok is false when the tree
// cannot be identified (no repository).
func (g *checkedGate) key(ctx context.Context, command string) (gateKey, bool) {
	if g.tree == nil {
		return gateKey{}, false
	}
	id, err := g.tree.Snapshot(ctx)
	if err != nil || id == "" {
		return gateKey{}, false
	}
	return gateKey{dir: g.r.opts.Dir, tree: id, command: command}, true
}

// gateEvidence is one command's result as evidence.
func gateEvidence(command string, res GateResult, reused, advisory bool) state.GateRun {
	run := state.GateRun{Command: command, Result: "ok", ExitCode: res.ExitCode, DurationMS: res.Duration.Milliseconds(), Reused: reused}
	switch {
	case res.ExitCode == 0:
	case advisory:
		run.Result = "advisory"
	case res.TimedOut:
		run.Result = "timeout"
	default:
		run.Result = "failed"
	}
	return run
}

// gateRuns are the commands g ran in its last Check, when it says.
func gateRuns(g Gate) []state.GateRun {
	switch v := g.(type) {
	case *checkedGate:
		return v.runs
	case *mergeGate:
		return gateRuns(v.gate)
	}
	return nil
}

// failedLine is the one line that says how a gate command failed.
func failedLine(command string, res GateResult) string {
	return fmt.Sprintf("gate failed: `%s` %s", command, howFailed(res))
}

func howFailed(res GateResult) string {
	if res.TimedOut {
		return "timed out after " + res.Duration.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("exited %d after %s", res.ExitCode, res.Duration.Round(time.Millisecond))
}

// lastLines are the last n lines of s, trailing newlines aside.
func lastLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines[max(0, len(lines)-n):]
}
