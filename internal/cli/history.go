package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/state"
)

type historyOptions struct {
	f    *Factory
	JSON bool
	Last int
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
	w := opts.f.IO.Out
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
	for _, r := range recs {
		cost += r.CostUSD
		commit := r.Commit
		if len(commit) > 7 {
			commit = commit[:7]
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d/%d\t$%.4f\t%s\t%s\n", r.RunID, r.Iteration, r.TaskID, r.Outcome,
			(time.Duration(r.DurationMS) * time.Millisecond).Round(time.Millisecond), r.InputTokens, r.OutputTokens,
			r.CacheReadTokens, r.CacheWriteTokens, r.CostUSD, commit, truncate(r.Error, 60))
	}
	fmt.Fprintf(tw, "\t\t\t%d iterations\t\t\t\t\t$%.4f\t\t\n", len(recs), cost)
	return tw.Flush()
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
