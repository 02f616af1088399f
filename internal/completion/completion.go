// Package completion decides whether an agent claimed a task or the plan
// done, by looking for promise markers in what the agent itself said.
//
// It never looks at tool results, files the agent read, or the prompt the
// agent echoed: runners that grep raw output stop early that way. It knows
// nothing of processes or plans.
package completion

import (
	"fmt"
	"slices"
	"strings"
)

// Marker is a completion claim an agent can make.
type Marker string

// The canonical markers. Aliases (success, RALPH_DONE, PLAN_DONE) are
// normalized to these.
const (
	None       Marker = ""
	TaskDone   Marker = "TASK_DONE"
	TaskFailed Marker = "TASK_FAILED"
	PlanDone   Marker = "COMPLETE"
	// Question: the agent needs a human's answer before it can go on; the
	// question is the text after the marker (Match.Reason).
	Question Marker = "QUESTION"
)

// Strategy names a detection strategy.
type Strategy string

// The strategies, tried in the configured order.
const (
	PromiseTag Strategy = "promise-tag"
	RelaxedTag Strategy = "relaxed-tag"
	Heuristic  Strategy = "heuristic"
)

// DefaultStrategies is the order used when none is configured.
func DefaultStrategies() []Strategy { return []Strategy{PromiseTag} }

// Input is what one iteration offers for scanning.
type Input struct {
	// Final is the agent's own final message.
	Final string
	// Messages are all assistant messages of the iteration (relaxed-tag).
	Messages []string
	// ExitCode of the agent process (heuristic needs 0).
	ExitCode int
	// Prompt is removed from Final and Messages before scanning, for plain
	// text agents that echo it.
	Prompt string
}

// Match is the outcome of detection.
type Match struct {
	Marker   Marker
	Strategy Strategy
	// Reason is the text after TASK_FAILED (one line), when given, or the
	// question of a QUESTION.
	Reason string
}

// Strategies lists every strategy, in the order the documentation gives
// them.
func Strategies() []Strategy { return []Strategy{PromiseTag, RelaxedTag, Heuristic} }

// ParseStrategies turns configured names (promise-tag, relaxed-tag,
// heuristic; case and surrounding space ignored) into strategies, keeping
// their order and dropping repeats and empty names.
func ParseStrategies(names []string) ([]Strategy, error) {
	var out []Strategy
	seen := map[Strategy]bool{}
	for _, name := range names {
		s := Strategy(strings.ToLower(strings.TrimSpace(name)))
		if s == "" || seen[s] {
			continue
		}
		if !slices.Contains(Strategies(), s) {
			return nil, fmt.Errorf("unknown completion strategy %q (valid: %s)", name, validNames())
		}
		seen[s] = true
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no completion strategy given (valid: %s)", validNames())
	}
	return out, nil
}

func validNames() string {
	var names []string
	for _, s := range Strategies() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// Detect tries the strategies in order and returns the first match, naming
// the strategy that matched; Match{} when none does. An empty order means
// DefaultStrategies. Unknown strategies are skipped (ParseStrategies rejects
// them earlier).
//
// The prompt is removed from the input first (see Input.Prompt and
// stripEcho), so an agent that echoes its instructions does not complete
// by quoting them.
//
// What each strategy accepts:
//   - promise-tag: <promise>MARKER</promise> in the final message, outside
//     inline code and fenced blocks; with several markers the last one
//     wins, as the agent's latest word.
//   - relaxed-tag: the tag anywhere, also in code; the "promise: MARKER"
//     form at the start of a line or after punctuation, marker in capitals;
//     and the newest assistant message holding a marker when the final one
//     has none.
//   - heuristic: exit code 0 and an unhedged completion phrase ("all tasks
//     are complete", "the task is done") in the last three lines; TASK_DONE
//     only.
//
// A TASK_FAILED match carries the reason the agent gave after it.
func Detect(in Input, order []Strategy) Match {
	if len(order) == 0 {
		order = DefaultStrategies()
	}
	final := stripEcho(in.Final, in.Prompt)
	var messages []string // stripped lazily: only relaxed-tag reads them
	for _, s := range order {
		var m Match
		switch s {
		case PromiseTag:
			m = promiseTag(final)
		case RelaxedTag:
			if messages == nil {
				messages = make([]string, len(in.Messages))
				for i, msg := range in.Messages {
					messages[i] = stripEcho(msg, in.Prompt)
				}
			}
			m = relaxedTag(final, messages)
		case Heuristic:
			m = heuristic(final, in.ExitCode)
		}
		if m.Marker != None {
			m.Strategy = s
			return m
		}
	}
	return Match{}
}
