// Package guard is ralph's tamper guard: it reads the diff an agent made
// for a task and reports, with file and line, the changes that weaken the
// checks instead of satisfying them — a test file deleted, a test or an
// assertion removed, commented out, replaced by a no-op or made
// unreachable, a skip or a lint suppression added, the CI, lint,
// coverage or gate configuration edited, the plan file touched, a task's
// agent or model in the plan changed.
//
// It owns reading a diff: parsing git's output (with go-gitdiff), the rule
// table (table.go) and the exceptions a task's own text grants (allow.go).
// It must not run anything (the caller produces the diff and, if it can,
// the files' contents) and must not decide the task's fate: it reports
// findings, and the loop decides whether they block.
package guard

import (
	"fmt"
	"sort"
)

// Rule names a kind of finding.
type Rule string

// The rules. Each row of the table (table.go) produces one of them.
const (
	// RuleTestDeleted: a test file deleted, emptied, or renamed to a name
	// the test runner does not pick up.
	RuleTestDeleted Rule = "test-deleted"
	// RuleTestRemoved: a test function or case removed with no test of the
	// same name added anywhere in the diff.
	RuleTestRemoved Rule = "test-removed"
	// RuleSkipAdded: a skip, ignore, disable, xfail, todo or .only added.
	RuleSkipAdded Rule = "skip-added"
	// RuleAssertionRemoved: assertions removed and not as many added back
	// in the same hunk; one replaced by a no-op (pass, _ = got) or by an
	// assertion that cannot fail (assert True) is removed.
	RuleAssertionRemoved Rule = "assertion-removed"
	// RuleAssertionCommented: an assertion commented out (a line or a
	// trailing comment holding the code of one the change removes), or a
	// block comment opened in a test file and not closed within the change.
	RuleAssertionCommented Rule = "assertion-commented"
	// RuleAssertionUnreachable: an assertion that a return or a branch
	// never taken, added above or around it, keeps from running.
	RuleAssertionUnreachable Rule = "assertion-unreachable"
	// RuleSuppressionAdded: a lint, type-check or coverage suppression added.
	RuleSuppressionAdded Rule = "suppression-added"
	// RuleCIChanged: a CI configuration file changed.
	RuleCIChanged Rule = "ci-changed"
	// RuleConfigChanged: lint, format, type-check, test-runner or coverage
	// configuration changed.
	RuleConfigChanged Rule = "config-changed"
	// RuleGateChanged: ralph's configuration, or a file, Makefile target or
	// package.json script that a gate command runs, changed.
	RuleGateChanged Rule = "gate-changed"
	// RulePlanChanged: the plan file changed.
	RulePlanChanged Rule = "plan-changed"
	// RuleAgentChanged: the plan names another agent or model for a task
	// than it did when the run started (route.go).
	RuleAgentChanged Rule = "agent-changed"
)

// Finding is one change that weakens a check.
type Finding struct {
	Rule Rule
	// File is the path relative to the repository root: the new name for
	// additions, the old one for removals.
	File string
	// Line is the line in the old file for a removal, in the new file for
	// an addition; 0 for a finding about the whole file (deleted, renamed,
	// binary, mode change).
	Line int
	// Removed says that Line is a line of the old file, which the change
	// removed (else it is one the change added).
	Removed bool
	// Text is the line as the diff shows it (trimmed, bounded); for
	// config-like rules it starts with "+" or "-", for whole-file findings
	// it says what happened to the file.
	Text string
	// Why says what the change weakens.
	Why string
	// Test is the test the change is in or removes, when known.
	Test string
	// Allowed is set when the task's text asks for this change; Reason
	// quotes the sentence that does.
	Allowed bool
	Reason  string
}

// Options says what the guard knows besides the diff. Paths are relative
// to the repository root, slash separated.
type Options struct {
	// GateCommands are the gate commands ([gates] commands and the task's
	// own validation commands). Files they name, Makefile targets and
	// package.json scripts they run are guarded (RuleGateChanged).
	GateCommands []string
	// ConfigFiles are ralph's own configuration files inside the
	// repository (the one --config names, if it is there); nil means
	// "ralph.toml".
	ConfigFiles []string
	// PlanFile is the plan; empty when the agent may edit it (agent
	// ownership).
	PlanFile string
	// Task is the task's text — title, description, acceptance criteria —
	// from which exceptions are read (allow.go).
	Task string
	// Before and After, when set, return a file's content at the diff's
	// two ends (false when the file does not exist there). With them the
	// guard knows which TOML section or Makefile target a changed line is
	// in and which test it belongs to even in a -U0 diff; without them it
	// reads what the hunks themselves show.
	Before, After func(path string) ([]byte, bool)
}

// maxText bounds Finding.Text.
const maxText = 200

// Check reads a git diff — the output of `git diff --no-color -U0
// --no-renames FROM TO`, or of `git diff` between two commits or trees with
// any context, renames on or off — and returns the findings in a stable
// order (file, line, rule), without duplicates. An error means the diff
// could not be read (a combined merge diff, a truncated hunk); no findings
// and no error means nothing weakening was seen.
//
// The diff should cover everything the task changed: from the commit the
// task started at to the tree the gates ran on, untracked files included
// (git diff does not show those unless they are added, e.g. with
// `git add -N`, or the tree is committed or written with write-tree).
func Check(diff []byte, opts Options) ([]Finding, error) {
	files, err := parseDiff(diff)
	if err != nil {
		return nil, fmt.Errorf("guard: reading the diff: %w", err)
	}
	c := newChecker(files, opts)
	c.run()
	return sortFindings(c.findings), nil
}

// Blocking returns the findings the task did not ask for.
func Blocking(findings []Finding) []Finding {
	var out []Finding
	for _, f := range findings {
		if !f.Allowed {
			out = append(out, f)
		}
	}
	return out
}

// sortFindings orders findings by file, line, rule and text, and drops
// exact repeats.
func sortFindings(fs []Finding) []Finding {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Text < b.Text
	})
	out := fs[:0]
	for i, f := range fs {
		if i > 0 {
			p := out[len(out)-1]
			if p.Rule == f.Rule && p.File == f.File && p.Line == f.Line && p.Text == f.Text {
				continue
			}
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
