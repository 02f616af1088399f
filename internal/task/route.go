package task

import (
	"fmt"
	"regexp"
	"strings"
)

// This file is the grammar of a task's own agent and model (Task.Agent,
// Task.Model), and how a run tells that a plan edited mid-run names
// others.
//
// In markdown a task names them on a line of their own in its body,
// exactly
//
//	Agent: codex
//	Model: opus
//
// with the key spelled so (capital A or M, a colon) and a name of one word.
// The strictness is on purpose: a task's text is prose, and "Model: the
// user's data model" or "model: User" must stay the description it is. In
// a checklist the line is part of the item's text (a continuation line
// under "- [ ] ..."), in a heading plan any line of the task's section;
// a list item ("- Agent: codex") and a line in a code block are text.
// In JSON they are the "agent" and "model" string keys of a task.

// routeName is what a name may be: one word, starting with a letter or a
// digit, of the characters model names use (claude-sonnet-4-5,
// gpt-5.1-codex, openai/gpt-5, deepseek-r1:free, opus[1m]).
var routeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+\[\]-]*$`)

// IsRouteName reports whether s can name a task's agent or model: one
// word, of the characters agent and model names use.
func IsRouteName(s string) bool { return routeName.MatchString(s) }

// routeLineRE matches a trimmed "Agent: NAME" or "Model: NAME" line.
var routeLineRE = regexp.MustCompile(`^(Agent|Model):[ \t]+(\S+)$`)

// parseRoute reads a markdown line naming a task's agent or model: key is
// "agent" or "model". Surrounding whitespace is allowed; anything else
// (another case, two words, a list marker, emphasis) is not such a line.
func parseRoute(line string) (key, name string, ok bool) {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "Agent:") && !strings.HasPrefix(s, "Model:") {
		return "", "", false // most lines: skip the regexp
	}
	m := routeLineRE.FindStringSubmatch(s)
	if m == nil || !routeName.MatchString(m[2]) {
		return "", "", false
	}
	return strings.ToLower(m[1]), m[2], true
}

// RouteChange is a task whose agent or model a plan names otherwise than
// an earlier version of it did.
type RouteChange struct {
	// Task is the task's id in the new version.
	Task string
	// Field is "agent" or "model".
	Field string
	// Before and After are the names; "" when the version names none.
	Before, After string
	// New says that the task is not in the earlier version: the edit added
	// it (Before is then "").
	New bool
	// File and Line are where the new version says it: the line of the
	// "Agent:"/"Model:" line or key, or the task's own line when the new
	// version names none.
	File string
	Line int
	// BeforeLine is where the earlier version said Before; 0 when it
	// named none.
	BeforeLine int
}

// RouteChanges lists the tasks whose agent or model now names otherwise
// than before did, in now's order: the edits a run checks a plan for,
// since an agent that picks its own agent or model (or another task's)
// steps outside what the user chose. A task now has that before lacks is
// a change when it names an agent or a model. Tasks are matched as
// MergeEdits matches them (id and title, then title, then id), so a task
// known by its position that moved is not a change; a removed task is
// none.
func RouteChanges(before, now *Plan) []RouteChange {
	m := matchTasks(before.Tasks, now.Tasks)
	was := make([]int, len(now.Tasks)) // the index in before + 1; 0 for a new task
	for _, pr := range m.pairs {
		was[pr[1]] = pr[0] + 1
	}
	var out []RouteChange
	for j, t := range now.Tasks {
		if i := was[j]; i > 0 {
			out = append(out, routeChanges(before.Tasks[i-1], t, now.Path, false)...)
		} else {
			out = append(out, routeChanges(Task{}, t, now.Path, true)...)
		}
	}
	return out
}

// String says the change where it is, for warnings:
// "PLAN.md:14: task 2 model: sonnet → opus", "fix_plan.md:9: new task 4
// agent: codex".
func (c RouteChange) String() string {
	where := (&Error{File: c.File, Line: c.Line}).Error()
	if c.New {
		return fmt.Sprintf("%snew task %s %s: %s", where, c.Task, c.Field, c.After)
	}
	return fmt.Sprintf("%stask %s %s: %s → %s", where, c.Task, c.Field, orNone(c.Before), orNone(c.After))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func routeChanges(a, b Task, file string, isNew bool) []RouteChange {
	var out []RouteChange
	if a.Agent != b.Agent {
		out = append(out, RouteChange{Task: b.ID, Field: "agent", Before: a.Agent, After: b.Agent, New: isNew,
			File: file, Line: lineOr(b.AgentLine, b.Line), BeforeLine: a.AgentLine})
	}
	if a.Model != b.Model {
		out = append(out, RouteChange{Task: b.ID, Field: "model", Before: a.Model, After: b.Model, New: isNew,
			File: file, Line: lineOr(b.ModelLine, b.Line), BeforeLine: a.ModelLine})
	}
	return out
}

func lineOr(line, def int) int {
	if line > 0 {
		return line
	}
	return def
}
