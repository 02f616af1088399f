// Package receipt adds up a run's history into its receipt: per task (or
// per model, or per agent) the attempts, agents, models, tokens and cost,
// whether the task was verified and how it ended; then the run's cost and
// its cost per verified task. A reviewer's tokens and cost belong to the
// task it reviewed (and, by model or agent, to the reviewer's).
//
// It reads history records (internal/state) and formats figures; it never
// reads files and never prints.
package receipt

import (
	"fmt"
	"math"
	"slices"

	"github.com/ralph-loop/ralph/internal/state"
)

// By is what a receipt's rows are: tasks, models or agents.
type By string

// The views of a receipt.
const (
	ByTask  By = "task"
	ByModel By = "model"
	ByAgent By = "agent"
)

// ParseBy reads a --by value.
func ParseBy(s string) (By, error) {
	switch b := By(s); b {
	case ByTask, ByModel, ByAgent:
		return b, nil
	}
	return "", fmt.Errorf("--by %q: want task, model or agent", s)
}

// EndReviewRow is the task row of the end review's rounds, which belong
// to no task.
const EndReviewRow = "(end review)"

// Report is a receipt: its rows, then the totals. Its JSON is the shape
// `ralph report --json` prints (docs/concepts.md, Receipts documents it).
type Report struct {
	By     By     `json:"by"`
	Rows   []Row  `json:"rows"`
	Totals Totals `json:"totals"`
}

// Row is one task, model or agent. The fields marked "by task" are in
// task rows only.
type Row struct {
	TaskID string `json:"task_id,omitempty"` // by task
	Model  string `json:"model,omitempty"`   // by model ("AGENT default" when it named none)
	Agent  string `json:"agent,omitempty"`   // by agent
	// Iterations counts the history lines: the agent's iterations (and,
	// by task, the end review's rounds).
	Iterations int `json:"iterations"`
	// Attempts are the iterations that counted as attempts at the task,
	// and the one that finished it (by task).
	Attempts int `json:"attempts,omitempty"`
	// LastOutcome is how the task's last iteration ended; Verified
	// whether it ended done with its checks passed (by task).
	LastOutcome state.Outcome `json:"last_outcome,omitempty"`
	Verified    *bool         `json:"verified,omitempty"`
	// Tasks are the tasks worked on (by model and by agent).
	Tasks []string `json:"tasks,omitempty"`
	// Agents and Models used, reviewers included, in the order first used.
	Agents []string `json:"agents,omitempty"`
	Models []string `json:"models,omitempty"`
	Usage
	// Reviews counts the reviewer's runs.
	Reviews int `json:"reviews,omitempty"`
	// The evidence the task was done on (by task): its gates, what the
	// guard found, the reviewer's verdict.
	Gates  []state.GateRun       `json:"gates,omitempty"`
	Guard  *state.GuardEvidence  `json:"guard,omitempty"`
	Review *state.ReviewEvidence `json:"review,omitempty"`
}

// Usage is what some calls used and cost.
type Usage struct {
	DurationMS       int64 `json:"duration_ms"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	Cost
}

// Cost is a sum of costs some of which may be unknown.
type Cost struct {
	// USD is the known part; null when no part is known.
	USD *float64 `json:"cost_usd"`
	// Source is the least certain source of the costs added up:
	// reported, estimated, or unknown when some had no price.
	Source string `json:"cost_source,omitempty"`
	// Unpriced counts the iterations of which some cost is unknown (the
	// agent's or a reviewer's; by model or agent, its own calls): with
	// any, USD is a lower bound.
	Unpriced int `json:"unpriced,omitempty"`
}

// Totals are the whole receipt's.
type Totals struct {
	Runs          int `json:"runs"`
	Tasks         int `json:"tasks"`
	TasksVerified int `json:"tasks_verified"`
	Iterations    int `json:"iterations"`
	Usage
	// PerVerifiedTask is the total cost ÷ the tasks verified; null with
	// none verified or no known cost. A lower bound when Unpriced > 0.
	PerVerifiedTask *float64 `json:"cost_per_verified_task_usd"`
}

// add adds one part's cost: known or not (state.Record.CostKnown).
func (c *Cost) add(usd float64, source string, known bool) {
	if !known {
		c.Unpriced++
		c.Source = state.CostUnknown
		if usd <= 0 {
			return
		}
		// Known in part (an end review some of whose reviewers had no
		// price): at least this much.
	} else {
		c.Source = state.CombineCostSource(c.Source, source)
	}
	c.USD = new(nano(deref(c.USD) + usd))
}

// nano rounds a sum of dollars to the nano-dollar: 0.1 + 0.2 is 0.3 on a
// receipt, as its reader added it up.
func nano(usd float64) float64 { return math.Round(usd*1e9) / 1e9 }

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// part is one call's share of a history line: the agent's, its
// reviewer's, or one end reviewer's.
type part struct {
	agent, model string
	usage        Usage
	reviews      int
}

func reviewPart(v *state.ReviewEvidence) part {
	u := Usage{DurationMS: v.DurationMS, InputTokens: v.InputTokens, OutputTokens: v.OutputTokens,
		CacheReadTokens: v.CacheReadTokens, CacheWriteTokens: v.CacheWriteTokens}
	u.add(v.CostUSD, v.CostSource, v.CostKnown())
	return part{agent: v.Agent, model: v.Model, usage: u, reviews: v.Attempts}
}

// parts splits a history line into its calls. An end review's line holds
// its reviewers' sums: they are counted from the reviewers.
func parts(r state.Record) []part {
	if r.EndReview != nil && len(r.EndReview.Reviewers) > 0 {
		out := make([]part, 0, len(r.EndReview.Reviewers))
		for i := range r.EndReview.Reviewers {
			out = append(out, reviewPart(&r.EndReview.Reviewers[i]))
		}
		return out
	}
	u := Usage{DurationMS: r.DurationMS, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CacheReadTokens: r.CacheReadTokens, CacheWriteTokens: r.CacheWriteTokens}
	u.add(r.CostUSD, r.CostSource, r.CostKnown())
	out := []part{{agent: r.Agent, model: r.Model, usage: u}}
	if r.Review != nil {
		p := reviewPart(r.Review)
		p.usage.DurationMS = 0 // inside the iteration's time already
		out = append(out, p)
	}
	return out
}

// plus adds d's time, tokens and cost.
func (u *Usage) plus(d Usage) {
	u.DurationMS += d.DurationMS
	u.InputTokens += d.InputTokens
	u.OutputTokens += d.OutputTokens
	u.CacheReadTokens += d.CacheReadTokens
	u.CacheWriteTokens += d.CacheWriteTokens
	u.Plus(d.Cost)
}

// Plus adds d.
func (c *Cost) Plus(d Cost) {
	c.Unpriced += d.Unpriced
	if d.USD != nil {
		c.USD = new(nano(deref(c.USD) + *d.USD))
	}
	c.Source = state.CombineCostSource(c.Source, d.Source)
}

// lineUsage adds up a line's parts: an iteration of which some part had
// no price counts once in Unpriced.
func lineUsage(ps []part) Usage {
	var u Usage
	for _, p := range ps {
		u.plus(p.usage)
	}
	u.Unpriced = min(u.Unpriced, 1)
	return u
}

// LineCost is what one history line cost: its agent's and its reviewers'.
func LineCost(r state.Record) Cost { return lineUsage(parts(r)).Cost }

// Verified says whether a line finished its task with its checks passed:
// it ended done, every gate that ran passed (an advisory gate that failed
// did not), the guard ran and found nothing the task did not ask for, and
// the reviewer, where one ran, said SHIP.
func Verified(r state.Record) bool {
	if r.Outcome != state.OutcomeTaskDone && r.Outcome != state.OutcomePlanDone {
		return false
	}
	for _, g := range r.Gates {
		if g.Result != "ok" {
			return false
		}
	}
	if r.Guard == nil || r.Guard.Error != "" || r.Guard.Blocking > 0 {
		return false
	}
	return r.Review == nil || r.Review.Verdict == "SHIP"
}

// Build adds up recs, in file order, into the receipt by by.
func Build(recs []state.Record, by By) Report {
	b := NewBuilder(by)
	for _, r := range recs {
		b.Add(r)
	}
	return b.Report()
}

// Builder adds up history one line at a time, in file order, holding the
// rows and not the lines: a long history is read, never held.
type Builder struct {
	rep      Report
	index    map[string]int
	runs     map[string]bool
	verified map[string]bool // by task: whether its last line verified it
}

// NewBuilder starts a receipt by by.
func NewBuilder(by By) *Builder {
	return &Builder{rep: Report{By: by, Rows: []Row{}}, index: map[string]int{}, runs: map[string]bool{},
		verified: map[string]bool{}}
}

// row is the row of key, added when new.
func (b *Builder) row(key string) *Row {
	i, ok := b.index[key]
	if !ok {
		i = len(b.rep.Rows)
		b.index[key] = i
		r := Row{}
		switch b.rep.By {
		case ByModel:
			r.Model = key
		case ByAgent:
			r.Agent = key
		default:
			r.TaskID = key
		}
		b.rep.Rows = append(b.rep.Rows, r)
	}
	return &b.rep.Rows[i]
}

// Add adds the next history line.
func (b *Builder) Add(r state.Record) {
	b.runs[r.RunID] = true
	task := r.TaskID
	if r.Outcome == state.OutcomeEndReview && task == "" {
		task = EndReviewRow
	} else {
		// The last word on a task is its last line: done and checked,
		// or not (a task reopened after it was done).
		b.verified[task] = Verified(r)
	}
	b.rep.Totals.Iterations++
	ps := parts(r)
	b.rep.Totals.plus(lineUsage(ps))
	if b.rep.By == ByTask {
		addTask(b.row(task), r, ps)
		return
	}
	seen := map[string]bool{}
	for i, p := range ps {
		key := p.agent
		if b.rep.By == ByModel {
			key = modelKey(p.agent, p.model)
		}
		g := b.row(key)
		if !seen[key] && (i == 0 || r.EndReview != nil) {
			g.Iterations++ // the line's agent; a reviewer's runs are reviews
		}
		seen[key] = true
		g.Reviews += p.reviews
		g.plus(p.usage)
		if task != EndReviewRow && !slices.Contains(g.Tasks, task) {
			g.Tasks = append(g.Tasks, task)
		}
		if b.rep.By == ByModel {
			g.Agents = appendNew(g.Agents, p.agent)
		} else {
			g.Models = appendNew(g.Models, modelKey(p.agent, p.model))
		}
	}
}

// Report is the receipt of the lines added so far.
func (b *Builder) Report() Report {
	rep := b.rep
	rep.Rows = slices.Clone(b.rep.Rows)
	if rep.By == ByTask {
		for i := range rep.Rows {
			if r := &rep.Rows[i]; r.TaskID != EndReviewRow {
				r.Verified = new(b.verified[r.TaskID])
			}
		}
	}
	rep.Totals.Runs = len(b.runs)
	rep.Totals.Tasks = len(b.verified)
	for _, v := range b.verified {
		if v {
			rep.Totals.TasksVerified++
		}
	}
	if n := rep.Totals.TasksVerified; n > 0 && rep.Totals.USD != nil {
		rep.Totals.PerVerifiedTask = new(nano(*rep.Totals.USD / float64(n)))
	}
	return rep
}

// addTask adds line r, split into ps, to its task's row.
func addTask(t *Row, r state.Record, ps []part) {
	t.Iterations++
	if r.Outcome.CountsAsAttempt() || r.Outcome == state.OutcomeTaskDone || r.Outcome == state.OutcomePlanDone {
		t.Attempts++
	}
	t.LastOutcome = r.Outcome
	t.plus(lineUsage(ps))
	for _, p := range ps {
		t.Reviews += p.reviews
		t.Agents = appendNew(t.Agents, p.agent)
		t.Models = appendNew(t.Models, modelKey(p.agent, p.model))
	}
	t.Gates, t.Guard, t.Review = nil, nil, nil
	if r.Outcome == state.OutcomeTaskDone || r.Outcome == state.OutcomePlanDone {
		t.Gates, t.Guard, t.Review = r.Gates, r.Guard, r.Review
	}
}

// modelKey names a model; a call that named none used its agent's
// default.
func modelKey(agent, model string) string {
	if model == "" {
		return agent + " default"
	}
	return model
}

func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// Views are the --by values.
func Views() []string { return []string{string(ByTask), string(ByModel), string(ByAgent)} }
