// Package state owns a run's bookkeeping: what ralph remembers between
// iterations and runs, all under .ralph/ (state.json, history.jsonl,
// per-iteration transcripts, the lock that keeps one run per project, and
// what the last run left: last-branch, last-plan/, last-tree), and what it
// keeps beside the plan in the project (the progress log's name, the
// archive of earlier runs, the .ralph/ line in .gitignore). It also holds
// the dirty-tree policy (dirty.go): which uncommitted changes are ralph's
// own.
//
// Writes are atomic (temporary file and rename) or append-only with whole
// lines (history.jsonl). It never runs agents or version control (the
// caller hands it a Tree) and never prints.
package state

import "time"

// Dir is the name of ralph's directory inside a project.
const Dir = ".ralph"

// Run statuses written to state.json.
const (
	StatusRunning     = "running"
	StatusWaiting     = "waiting"
	StatusPaused      = "paused"
	StatusDone        = "done"
	StatusStopped     = "stopped"
	StatusStuck       = "stuck"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
	// StatusCrashed is never written: status reports it for a state.json
	// that says a run is live (Live) while no run holds the lock.
	StatusCrashed = "crashed"
)

// Live reports whether status is that of a run still going: a state.json
// that says so while no run holds the lock was left by a run that died.
func Live(status string) bool {
	return status == StatusRunning || status == StatusWaiting || status == StatusPaused
}

// Record is one line of history.jsonl: one agent invocation, whatever its
// outcome. Its cost_usd is null when the cost is unknown (CostKnown): an
// unknown cost is never written as $0.
type Record struct {
	RunID     string `json:"run_id"`
	Iteration int    `json:"iteration"`
	TaskID    string `json:"task_id"`
	// Attempt is which attempt at the task the iteration was: the task's
	// failed attempts before it, plus one (0 in lines of an older ralph).
	Attempt          int       `json:"attempt,omitempty"`
	Agent            string    `json:"agent"`
	Model            string    `json:"model"`
	StartedAt        time.Time `json:"started_at"`
	EndedAt          time.Time `json:"ended_at"`
	DurationMS       int64     `json:"duration_ms"`
	ExitCode         int       `json:"exit_code"`
	Outcome          Outcome   `json:"outcome"`
	Marker           string    `json:"marker"`
	Strategy         string    `json:"strategy"`
	InputTokens      int64     `json:"input_tokens"`
	OutputTokens     int64     `json:"output_tokens"`
	CacheReadTokens  int64     `json:"cache_read_tokens"`
	CacheWriteTokens int64     `json:"cache_write_tokens"`
	// CostUSD and CostSource are the agent's own (the reviewer's are in
	// Review): reported, estimated or unknown (cost.go).
	CostUSD            float64 `json:"cost_usd"`
	CostSource         string  `json:"cost_source,omitempty"`
	ContextUsedPercent float64 `json:"context_used_percent"`
	SessionID          string  `json:"session_id"`
	FilesChanged       int     `json:"files_changed"`
	Commit             string  `json:"commit"`
	Error              string  `json:"error"`
	// The evidence of a done claim: the gates that ran on it, what the
	// tamper guard found in the task's diff, and the reviewer's verdict
	// (evidence.go). Absent where the step did not run.
	Gates  []GateRun       `json:"gates,omitempty"`
	Guard  *GuardEvidence  `json:"guard,omitempty"`
	Review *ReviewEvidence `json:"review,omitempty"`
	// EndReview is a review round at the end of a run (outcome
	// end_review): its reviewers and what became of their findings. The
	// line's tokens and cost are its reviewers' (endreview.go).
	EndReview *RoundEvidence `json:"end_review,omitempty"`
}

// Totals add up a run's iterations.
type Totals struct {
	Iterations       int     `json:"iterations"`
	TasksDone        int     `json:"tasks_done"`
	TasksFailed      int     `json:"tasks_failed"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	CostSource       string  `json:"cost_source,omitempty"` // the least certain of the costs added up
	DurationMS       int64   `json:"duration_ms"`
}

// TaskState is what ralph remembers of one task across runs.
type TaskState struct {
	Attempts  int    `json:"attempts"`
	Failed    bool   `json:"failed,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// StartTree is the working tree (a tree id) when the task's first
	// attempt started: the tamper guard and the reviewer read the diff
	// from there. Cleared once the task is done.
	StartTree string `json:"start_tree,omitempty"`
}

// State is state.json.
type State struct {
	RunID       string `json:"run_id"`
	Status      string `json:"status"`
	Plan        string `json:"plan"`
	Agent       string `json:"agent"`
	Model       string `json:"model,omitempty"`
	Iteration   int    `json:"iteration"`
	CurrentTask string `json:"current_task"`
	// CurrentAgent and CurrentModel are who runs the current task when
	// that is not Agent and Model (a fallback, escalation, the task's
	// own); empty otherwise.
	CurrentAgent string               `json:"current_agent,omitempty"`
	CurrentModel string               `json:"current_model,omitempty"`
	StartedAt    time.Time            `json:"started_at"`
	UpdatedAt    time.Time            `json:"updated_at"`
	WaitingUntil *time.Time           `json:"waiting_until,omitempty"`
	PID          int                  `json:"pid"`
	Totals       Totals               `json:"totals"`
	Tasks        map[string]TaskState `json:"tasks"`
	// Message says why the run ended, for status.
	Message string `json:"message,omitempty"`
	// Accepting are the tasks the run has decided are done (their gates,
	// guard and reviewer passed) and is marking and committing: recorded
	// before the plan says so (Store.Accepting, or here in state.json),
	// cleared with the iteration's history line. A run that dies in
	// between leaves them for the next one to finish.
	Accepting []string `json:"accepting,omitempty"`
	// Held is the task whose work git refused to commit (commit_refused):
	// open, its work in the tree uncommitted, it is the next task any run
	// works on, so that its work is committed alone and under its own
	// name. Kept across runs; cleared once it is committed or fails.
	Held string `json:"held,omitempty"`
	// AdvisoryGates are the gate commands that failed before any change
	// and that --allow-failing-gates made advisory for this run: their
	// failures do not reject a task.
	AdvisoryGates []string `json:"advisory_gates,omitempty"`
	// EndReview is the run's review phase, when it has one; Findings the
	// tasks review phases made of findings, by normalized finding, kept
	// across runs like Tasks (endreview.go).
	EndReview *EndReview             `json:"end_review,omitempty"`
	Findings  map[string]FindingTask `json:"findings,omitempty"`
	// Sandbox is the sandbox the run's agents, reviewers and gates run
	// in.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// Quota is the latest known state of each of the account's usage
	// windows, by window name, kept across runs (they share the account).
	Quota map[string]QuotaWindow `json:"quota,omitempty"`
	// Questions are the agents' questions of tasks not done yet, asked
	// and answered, kept across runs like Tasks: one without an answer
	// holds its task back; an answered one goes into the task's prompts
	// until the task is done.
	Questions []Question `json:"questions,omitempty"`
}

// Question is what an agent asked about its task (outcome needs_answer),
// and the answer once a human gave one.
type Question struct {
	Task      string    `json:"task"`
	Text      string    `json:"question"`
	RunID     string    `json:"run_id"`
	Iteration int       `json:"iteration"`
	AskedAt   time.Time `json:"asked_at"`
	Answer    string    `json:"answer,omitempty"`
	// By says where the answer came from: page, tui, cli, telegram.
	By         string     `json:"answered_by,omitempty"`
	AnsweredAt *time.Time `json:"answered_at,omitempty"`
}

// Pending returns the questions still waiting for an answer.
func (st *State) Pending() []Question {
	var out []Question
	for _, q := range st.Questions {
		if q.Answer == "" {
			out = append(out, q)
		}
	}
	return out
}

// AnswerQuestion records text as the answer to the pending question of
// task id, or, with id "", to the oldest pending one. It returns the
// question answered, false when there is none.
func (st *State) AnswerQuestion(id, text, by string, now time.Time) (Question, bool) {
	for i := range st.Questions {
		q := &st.Questions[i]
		if q.Answer != "" || (id != "" && q.Task != id) {
			continue
		}
		q.Answer, q.By, q.AnsweredAt = text, by, &now
		return *q, true
	}
	return Question{}, false
}

// Sandbox is the sandbox of a run.
type Sandbox struct {
	// Mode is what was asked for: auto, bwrap, sandbox-exec or none.
	Mode string `json:"mode"`
	// Kind is what is in force: bwrap, sandbox-exec or none.
	Kind string `json:"kind"`
	// Warning says why a run that asked for auto runs without one.
	Warning string `json:"warning,omitempty"`
	// Hooks says which of the user's git hooks the run runs, and where;
	// empty when the repository has none.
	Hooks string `json:"hooks,omitempty"`
}

// String says which sandbox is in force, and why none when auto found
// none: "bwrap", "none (auto: bwrap cannot run here: ...)".
func (s Sandbox) String() string {
	switch {
	case s.Warning != "":
		return s.Kind + " (" + s.Mode + ": " + s.Warning + ")"
	case s.Kind == "none" && s.Mode != "none":
		return s.Kind + " (" + s.Mode + ")"
	}
	return s.Kind
}

// Add adds another run's (or worker's) totals.
func (t *Totals) Add(d Totals) {
	t.Iterations += d.Iterations
	t.TasksDone += d.TasksDone
	t.TasksFailed += d.TasksFailed
	t.InputTokens += d.InputTokens
	t.OutputTokens += d.OutputTokens
	t.CacheReadTokens += d.CacheReadTokens
	t.CacheWriteTokens += d.CacheWriteTokens
	t.CostUSD += d.CostUSD
	t.CostSource = CombineCostSource(t.CostSource, d.CostSource)
	t.DurationMS += d.DurationMS
}

// AddRecord adds one iteration's tokens, cost and time, its reviewer's
// included, and the tasks it finished. Iterations are counted when they
// start, not here.
func (t *Totals) AddRecord(r Record, tasksDone int) {
	t.Add(Totals{TasksDone: tasksDone, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CacheReadTokens: r.CacheReadTokens, CacheWriteTokens: r.CacheWriteTokens, CostUSD: r.CostUSD,
		CostSource: r.CostSource, DurationMS: r.DurationMS})
	if v := r.Review; v != nil {
		t.Add(Totals{InputTokens: v.InputTokens, OutputTokens: v.OutputTokens, CacheReadTokens: v.CacheReadTokens,
			CacheWriteTokens: v.CacheWriteTokens, CostUSD: v.CostUSD, CostSource: v.CostSource})
	}
}
