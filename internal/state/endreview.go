package state

// The review phase at the end of a run (review.when = "end" or "both",
// and `ralph review`): reviewers, one per focus, read the whole run's
// diff; their findings become tasks of the plan, and the loop runs them.
// What it remembers lives in state.json; each round leaves a history line.

// EndReview is the review phase of a run in state.json: where the run's
// diff starts and how many rounds it has had. A run that continues an
// unfinished one (interrupted, stuck, stopped) keeps both.
type EndReview struct {
	// Base is the tree (or commit) the run's diff starts from: the
	// working tree as the run started, ralph's own files excepted.
	Base string `json:"base"`
	// Rounds counts the review rounds done.
	Rounds int `json:"rounds"`
}

// FindingTask is a task the review phase made of a finding, remembered by
// the finding's normalized text: the same finding again while its task is
// open is not a new task, and after its task is done it is a finding that
// came back, which stops the phase instead of looping.
type FindingTask struct {
	Task    string `json:"task"`
	Title   string `json:"title"`
	Finding string `json:"finding"`
	Focus   string `json:"focus,omitempty"`
	RunID   string `json:"run_id"`
	Round   int    `json:"round"`
}

// RoundEvidence is one review round, in its history line: who reviewed
// with which focus and what they said, and what became of the findings.
type RoundEvidence struct {
	Round int `json:"round"`
	// Base is where the diff the reviewers read starts.
	Base      string           `json:"base,omitempty"`
	Reviewers []ReviewEvidence `json:"reviewers"`
	// Tasks are the new findings and the tasks made of them; Known the
	// findings that already are open tasks; Recurring those whose task
	// was done, and which came back.
	Tasks     []FindingTask `json:"tasks,omitempty"`
	Known     []FindingTask `json:"known,omitempty"`
	Recurring []FindingTask `json:"recurring,omitempty"`
}
