package loop

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/guard"
)

// The plan's Validation Commands in force are fixed at the run's start
// (the gate's TaskCommands, trust.Store.GatesInForce): an edit of them in
// the plan during the run runs nothing. It is a guard finding all the
// same, as an edit of a gate's file is, so that the user hears of it and
// a strict guard rejects the work that made it; `ralph trust PLAN` puts
// the new ones in force, from the next run.

// planGatesChanged is the finding of the plan's Validation Commands
// changed since the task id started (in this run); nil when they did
// not.
func (r *runner) planGatesChanged(id string) []guard.Finding {
	p := r.deps.Plan.Plan()
	before, ok := r.taskGates[id]
	if !ok {
		before = r.planGates
	}
	if slices.Equal(p.Validation, before) {
		return nil
	}
	return []guard.Finding{{
		Rule: guard.RuleGateChanged,
		File: r.planName(),
		Text: "Validation Commands: " + commandList(before) + " → " + commandList(p.Validation),
		Why: fmt.Sprintf("the plan's Validation Commands are gates; the run keeps checking tasks with those in force "+
			"at its start, and only 'ralph trust %s' puts new ones in force", r.planName()),
	}}
}

// planGatesEdited is the warning of a plan edit during an iteration that
// changed its Validation Commands: "" when it did not.
func (r *runner) planGatesEdited() string {
	p := r.deps.Plan.Plan()
	if slices.Equal(p.Validation, r.planGates) {
		return ""
	}
	return fmt.Sprintf("%s's Validation Commands changed during the run (%s): not in force; the run's gates stay %s, "+
		"and 'ralph trust %s' puts the new ones in force from the next run",
		r.planName(), commandList(p.Validation), commandList(r.planGates), r.planName())
}

// planName is the plan's path as the user names it: relative to the
// project when it is in it.
func (r *runner) planName() string {
	path := r.deps.Plan.Plan().Path
	if rel, err := filepath.Rel(r.opts.Dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}

// commandList shows commands as a message quotes them: `a`, `b`; none.
func commandList(cmds []string) string {
	if len(cmds) == 0 {
		return "none"
	}
	return "`" + strings.Join(cmds, "`, `") + "`"
}
