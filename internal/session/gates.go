package session

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/gate"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/scaffold"
)

// The project's own checks, as init, doctor and run point them out: found
// by gate.Detect, written by init as [gates] commands, and named by run
// and doctor when the config leaves them out.

// DetectChecks finds the checks of the project in dir; clippy counts as
// plausible when it is on the PATH.
func DetectChecks(f *Host, dir string) []gate.Check {
	env := f.Environ()
	return gate.Detect(dir, gate.DetectOptions{OnPath: func(p string) bool {
		_, err := proc.LookPath(p, dir, env)
		return err == nil
	}})
}

// checkList names checks for a line of text: `go test ./...` (go.mod), ...
func checkList(checks []gate.Check) string {
	s := make([]string, len(checks))
	for i, c := range checks {
		s[i] = fmt.Sprintf("`%s` (%s)", c.Command, c.Why)
	}
	return strings.Join(s, ", ")
}

// unconfigured splits the found checks into those that neither [gates]
// nor the plan's Validation Commands run, and those the plan already
// runs as every task's own gates.
func unconfigured(checks []gate.Check, configured, validation []string) (off, inPlan []gate.Check) {
	for _, c := range checks {
		switch {
		case slices.Contains(configured, c.Command):
		case slices.Contains(validation, c.Command):
			inPlan = append(inPlan, c)
		default:
			off = append(off, c)
		}
	}
	return off, inPlan
}

// runGates are a run's gates as the command line shows them.
type runGates struct {
	configured []string // [gates] commands
	validation []string // the plan's Validation Commands
	// found are the project's own checks, looked for when no [gates]
	// commands are configured.
	found []gate.Check
	// reviewed: without gates, a reviewer checks each task.
	reviewed bool
	// validationNote says that the plan's file holds other Validation
	// Commands than those in force (Host.planGates).
	validationNote string
}

// warning is what a run says once at its start about its gates; empty
// when there is nothing to say.
func (g runGates) warning() string {
	if len(g.configured) > 0 {
		return ""
	}
	return noGatesWarning(g.found, g.validation, g.reviewed)
}

// dryRun lists, for --dry-run, the gates a task must pass and the
// baseline they run on.
func (g runGates) dryRun(w io.Writer) {
	switch {
	case len(g.configured)+len(g.validation) == 0 && g.reviewed:
		fmt.Fprintln(w, "# gates: none; a reviewer checks each task")
	case len(g.configured)+len(g.validation) == 0:
		fmt.Fprintln(w, "# gates: none; a task is done when the agent says so")
	default:
		fmt.Fprintln(w, "# gates, run before a task is accepted:")
		for _, c := range g.configured {
			fmt.Fprintf(w, "  %s  ([gates] commands)\n", c)
		}
		for _, c := range g.validation {
			if !slices.Contains(g.configured, c) {
				fmt.Fprintf(w, "  %s  (the plan's Validation Commands)\n", c)
			}
		}
	}
	if g.validationNote != "" {
		fmt.Fprintf(w, "# %s\n", g.validationNote)
	}
	if len(g.configured) > 0 {
		fmt.Fprintln(w, "# baseline: the [gates] commands run once on the starting tree before the first agent call; "+
			"one that fails stops the run (--allow-failing-gates makes it advisory)")
	}
	if off, _ := unconfigured(g.found, g.configured, g.validation); len(off) > 0 {
		fmt.Fprintf(w, "# found in the project, not enabled: %s; to require them, add to ralph.toml: %s\n",
			checkList(off), scaffold.GatesSnippet(gate.Commands(off)))
	}
}

// noGatesWarning is what a run without [gates] commands says once at its
// start when the project has checks: which ones, and how to turn them on.
// It is empty when there is nothing to point out. reviewed: a reviewer
// checks each task.
func noGatesWarning(checks []gate.Check, validation []string, reviewed bool) string {
	off, inPlan := unconfigured(checks, nil, validation)
	if len(off) == 0 {
		return ""
	}
	head := "no quality gates configured, so a task is done when the agent says so"
	if reviewed {
		head = "no quality gates configured, so only a reviewer checks a task"
	}
	if len(validation) > 0 {
		head = "no [gates] commands configured: only the plan's Validation Commands check a task"
	}
	msg := fmt.Sprintf("%s; found these checks in the project: %s", head, checkList(off))
	if len(inPlan) > 0 {
		msg += fmt.Sprintf(" (and %s, already one of the plan's Validation Commands)", checkList(inPlan))
	}
	return msg + fmt.Sprintf("; to require them, add to ralph.toml: %s", scaffold.GatesSnippet(gate.Commands(off)))
}
