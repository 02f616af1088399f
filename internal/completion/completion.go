// Package completion decides whether an agent claimed a task or the plan
// done, by looking for promise markers in what the agent itself said.
//
// It never looks at tool results, files the agent read, or the prompt the
// agent echoed: runners that grep raw output stop early that way. It knows
// nothing of processes or plans.
package completion

// Marker is a completion claim an agent can make.
type Marker string

// The canonical markers. Aliases (success, RALPH_DONE, PLAN_DONE) are
// normalized to these.
const (
	None       Marker = ""
	TaskDone   Marker = "TASK_DONE"
	TaskFailed Marker = "TASK_FAILED"
	PlanDone   Marker = "COMPLETE"
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
	// Reason is the text after TASK_FAILED (one line), when given.
	Reason string
}
