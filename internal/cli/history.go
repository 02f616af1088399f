package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/ui"
)

type historyOptions struct {
	f      *Factory
	JSON   bool
	Last   int
	ByTask bool
}

func newCmdHistory(f *Factory, runF func(*historyOptions) error) *cobra.Command {
	opts := &historyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show every iteration: task, outcome, duration, tokens, cost",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runHistory(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the history records, one JSON object per line")
	cmd.Flags().IntVarP(&opts.Last, "last", "n", 0, "only the last `N` iterations")
	cmd.Flags().BoolVar(&opts.ByTask, "by-task", false, "one receipt per task: iterations, attempts, time, tokens, cost")
	return cmd
}

func runHistory(opts *historyOptions) error {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	store, err := state.Open(dir)
	if err != nil {
		return err
	}
	recs, err := store.History()
	if err != nil {
		return err
	}
	if opts.Last > 0 && len(recs) > opts.Last {
		recs = recs[len(recs)-opts.Last:]
	}
	w := ui.TextWriter{W: opts.f.IO.Out} // what the agent wrote, as text
	if opts.ByTask {
		return printReceipts(w, receipts(recs), opts.JSON)
	}
	if opts.JSON {
		enc := json.NewEncoder(w)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(recs) == 0 {
		_, err := fmt.Fprintln(w, "no iterations yet")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tITER\tTASK\tOUTCOME\tDURATION\tIN\tOUT\tCACHE R/W\tCOST\tCOMMIT\tERROR")
	var cost float64
	var source string
	for _, r := range recs {
		r.CostUSD += reviewCost(r)
		cost += r.CostUSD
		source = state.CombineCostSource(source, r.CostSource)
		commit := r.Commit
		if len(commit) > 7 {
			commit = commit[:7]
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d/%d\t%s\t%s\t%s\n", r.RunID, r.Iteration, r.TaskID, r.Outcome,
			(time.Duration(r.DurationMS) * time.Millisecond).Round(time.Millisecond), r.InputTokens, r.OutputTokens,
			r.CacheReadTokens, r.CacheWriteTokens, state.FormatCost(r.CostUSD, r.CostSource), commit, truncate(r.Error, 60))
	}
	fmt.Fprintf(tw, "\t\t\t%s\t\t\t\t\t%s\t\t\n", countLine(recs), state.FormatCost(cost, source))
	return tw.Flush()
}

// countLine counts the agent's iterations and, apart, the end review's
// rounds: a round runs reviewers, not the agent.
func countLine(recs []state.Record) string {
	rounds := 0
	for _, r := range recs {
		if r.Outcome == state.OutcomeEndReview {
			rounds++
		}
	}
	line := plural(len(recs)-rounds, "iteration")
	if rounds > 0 {
		line += " · " + plural(rounds, "review round")
	}
	return line
}

// plural is n things, in English.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// receipt is what one task cost over every iteration that ran it, its
// reviewers included, and the evidence it was done on.
type receipt struct {
	TaskID           string        `json:"task_id"`
	Iterations       int           `json:"iterations"`
	Attempts         int           `json:"attempts"`
	LastOutcome      state.Outcome `json:"last_outcome"`
	DurationMS       int64         `json:"duration_ms"`
	InputTokens      int64         `json:"input_tokens"`
	OutputTokens     int64         `json:"output_tokens"`
	CacheReadTokens  int64         `json:"cache_read_tokens"`
	CacheWriteTokens int64         `json:"cache_write_tokens"`
	CostUSD          float64       `json:"cost_usd"`
	// Reviews counts the reviewer runs over all its iterations.
	Reviews int `json:"reviews,omitempty"`
	// The evidence of the iteration that finished the task: its gates,
	// the guard's findings, the reviewer's verdict.
	Gates  []state.GateRun       `json:"gates,omitempty"`
	Guard  *state.GuardEvidence  `json:"guard,omitempty"`
	Review *state.ReviewEvidence `json:"review,omitempty"`
	// CostSource is the least certain source of its costs: reported,
	// estimated or unknown.
	CostSource string `json:"cost_source,omitempty"`
}

// reviewCost is what an iteration's reviewer cost.
func reviewCost(r state.Record) float64 {
	if r.Review == nil {
		return 0
	}
	return r.Review.CostUSD
}

// evidenceLine says in a few words what checked a task: "gates 2 ok ·
// guard 0 findings · SHIP by claude/sonnet"; "" when nothing did.
func evidenceLine(gates []state.GateRun, g *state.GuardEvidence, v *state.ReviewEvidence) string {
	var parts []string
	if len(gates) > 0 {
		ok := 0
		for _, run := range gates {
			if run.Result == "ok" {
				ok++
			}
		}
		parts = append(parts, fmt.Sprintf("gates %d/%d ok", ok, len(gates)))
	}
	if g != nil {
		parts = append(parts, "guard "+state.GuardLine(g))
	}
	if v != nil {
		parts = append(parts, state.ReviewLine(v))
	}
	return strings.Join(parts, " · ")
}

// endReviewRow is the receipt of the end review's rounds, which belong
// to no task.
const endReviewRow = "(end review)"

// receipts adds up history per task, in the order tasks first ran.
func receipts(recs []state.Record) []receipt {
	var out []receipt
	index := map[string]int{}
	for _, r := range recs {
		if r.Outcome == state.OutcomeEndReview && r.TaskID == "" {
			r.TaskID = endReviewRow // its rounds, together
		}
		i, ok := index[r.TaskID]
		if !ok {
			i = len(out)
			index[r.TaskID] = i
			out = append(out, receipt{TaskID: r.TaskID})
		}
		t := &out[i]
		t.Iterations++
		if r.Outcome.CountsAsAttempt() {
			t.Attempts++
		}
		t.LastOutcome = r.Outcome
		t.DurationMS += r.DurationMS
		t.InputTokens += r.InputTokens
		t.OutputTokens += r.OutputTokens
		t.CacheReadTokens += r.CacheReadTokens
		t.CacheWriteTokens += r.CacheWriteTokens
		t.CostUSD += r.CostUSD
		t.CostSource = state.CombineCostSource(t.CostSource, r.CostSource)
		if v := r.Review; v != nil {
			t.Reviews += v.Attempts
			t.InputTokens += v.InputTokens
			t.OutputTokens += v.OutputTokens
			t.CacheReadTokens += v.CacheReadTokens
			t.CacheWriteTokens += v.CacheWriteTokens
			t.CostUSD += v.CostUSD
		}
		if r.Outcome == state.OutcomeTaskDone || r.Outcome == state.OutcomePlanDone {
			t.Gates, t.Guard, t.Review = r.Gates, r.Guard, r.Review
		}
	}
	return out
}

func printReceipts(w io.Writer, rs []receipt, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, r := range rs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tITERATIONS\tATTEMPTS\tLAST OUTCOME\tTIME\tIN\tOUT\tCACHE R/W\tCOST\tEVIDENCE")
	var total receipt
	tasks := 0
	for _, r := range rs {
		if r.TaskID != endReviewRow {
			tasks++
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%d\t%d/%d\t%s\t%s\n", r.TaskID, r.Iterations, r.Attempts, r.LastOutcome,
			(time.Duration(r.DurationMS) * time.Millisecond).Round(time.Millisecond), r.InputTokens, r.OutputTokens,
			r.CacheReadTokens, r.CacheWriteTokens, state.FormatCost(r.CostUSD, r.CostSource), evidenceLine(r.Gates, r.Guard, r.Review))
		total.Iterations += r.Iterations
		total.DurationMS += r.DurationMS
		total.CostUSD += r.CostUSD
		total.CostSource = state.CombineCostSource(total.CostSource, r.CostSource)
	}
	fmt.Fprintf(tw, "%d tasks\t%d\t\t\t%s\t\t\t\t%s\t\n", tasks, total.Iterations,
		(time.Duration(total.DurationMS) * time.Millisecond).Round(time.Millisecond), state.FormatCost(total.CostUSD, total.CostSource))
	return tw.Flush()
}
