package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/state"
)

type statusOptions struct {
	f    *Factory
	JSON bool
}

func newCmdStatus(f *Factory, runF func(*statusOptions) error) *cobra.Command {
	opts := &statusOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the current or last run: status, iteration, task, totals",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runStatus(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print state.json")
	return cmd
}

func runStatus(opts *statusOptions) error {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	store, err := state.Open(dir)
	if err != nil {
		return err
	}
	st, err := store.LoadState()
	if err != nil {
		return err
	}
	w := opts.f.IO.Out
	if opts.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	if st.RunID == "" {
		_, err := fmt.Fprintln(w, "no run yet: start one with `ralph run`")
		return err
	}
	t := st.Totals
	fmt.Fprintf(w, "run        %s (pid %d)\n", st.RunID, st.PID)
	fmt.Fprintf(w, "status     %s", st.Status)
	if st.Message != "" {
		fmt.Fprintf(w, ": %s", st.Message)
	}
	fmt.Fprintln(w)
	if st.WaitingUntil != nil {
		fmt.Fprintf(w, "waiting    until %s\n", st.WaitingUntil.Local().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "plan       %s\n", st.Plan)
	fmt.Fprintf(w, "agent      %s %s\n", st.Agent, st.Model)
	fmt.Fprintf(w, "iteration  %d", st.Iteration)
	if st.CurrentTask != "" {
		fmt.Fprintf(w, " (task %s)", st.CurrentTask)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "started    %s, updated %s\n", st.StartedAt.Local().Format(time.RFC3339), st.UpdatedAt.Local().Format(time.RFC3339))
	fmt.Fprintf(w, "tasks      %d done, %d failed this run\n", t.TasksDone, t.TasksFailed)
	fmt.Fprintf(w, "tokens     %d in, %d out, %d cache read, %d cache write\n", t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheWriteTokens)
	_, err = fmt.Fprintf(w, "cost       $%.4f over %s\n", t.CostUSD, (time.Duration(t.DurationMS) * time.Millisecond).Round(time.Millisecond))
	return err
}
