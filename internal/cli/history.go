package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/receipt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/ui"
)

type historyOptions struct {
	f      *Factory
	JSON   bool
	Last   int
	By     string
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
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the history records, one JSON object per line (with --by, the receipt as one object)")
	cmd.Flags().IntVarP(&opts.Last, "last", "n", 0, "only the last `N` iterations")
	cmd.Flags().StringVar(&opts.By, "by", "", "the receipt instead, one row per `VIEW` (task, model or agent): what ralph report prints")
	cmd.Flags().BoolVar(&opts.ByTask, "by-task", false, "deprecated: the same as --by task")
	return cmd
}

func runHistory(opts *historyOptions) error {
	if opts.ByTask && opts.By == "" {
		opts.By = string(receipt.ByTask)
	}
	var by receipt.By
	if opts.By != "" {
		var err error
		if by, err = receipt.ParseBy(opts.By); err != nil {
			return usageError(err)
		}
	}
	recs, err := readHistory(opts.f)
	if err != nil {
		return err
	}
	if opts.Last > 0 && len(recs) > opts.Last {
		recs = recs[len(recs)-opts.Last:]
	}
	if by != "" {
		return printReport(opts.f, receipt.Build(recs, by), opts.JSON)
	}
	w := ui.TextWriter{W: opts.f.IO.Out} // what the agent wrote, as text
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
	var total receipt.Cost
	for _, r := range recs {
		line := receipt.LineCost(r)
		total.Plus(line)
		commit := r.Commit
		if len(commit) > 7 {
			commit = commit[:7]
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d/%d\t%s\t%s\t%s\n", r.RunID, r.Iteration, r.TaskID, r.Outcome,
			(time.Duration(r.DurationMS) * time.Millisecond).Round(time.Millisecond), r.InputTokens, r.OutputTokens,
			r.CacheReadTokens, r.CacheWriteTokens, receipt.FormatCost(line), commit, truncate(r.Error, 60))
	}
	fmt.Fprintf(tw, "\t\t\t%s\t\t\t\t\t%s\t\t\n", countLine(recs), receipt.FormatCost(total))
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
