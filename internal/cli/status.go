package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/receipt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/ui"
)

type statusOptions struct {
	f    *Factory
	JSON bool
	// Remote names the remote whose workers to report (--remote), " "
	// for the configured one; "" reports the local run.
	Remote string
}

func newCmdStatus(f *Factory, runF func(*statusOptions) error) *cobra.Command {
	opts := &statusOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the current or last run: status, iteration, task, totals",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			if opts.Remote != "" {
				return runRemoteStatus(cmd.Context(), opts)
			}
			return runStatus(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print state.json")
	cmd.Flags().StringVar(&opts.Remote, "remote", "", "the workers on the remote `NAME` (default: worker.remote): which task is claimed by whom, lease left, done, failed")
	cmd.Flags().Lookup("remote").NoOptDefVal = " "
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
	report := statusReport{State: st}
	if state.Live(st.Status) {
		// state.json says a run is going: the lock says whether one is.
		held, err := store.Held()
		if err != nil {
			return err
		}
		if !held {
			report = crashedReport(st)
			st = report.State
		}
	}
	if st.RunID != "" {
		recs, err := store.History()
		if err != nil {
			return err
		}
		report.Evidence = runEvidence(recs, st.RunID)
	}
	w := ui.TextWriter{W: opts.f.IO.Out} // what the agent wrote, as text
	if opts.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
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
	for _, q := range st.Pending() {
		fmt.Fprintf(w, "question   %s asks: %s\n           (answer with `ralph answer TEXT`)\n", q.Task, strings.Join(strings.Fields(q.Text), " "))
	}
	fmt.Fprintf(w, "plan       %s\n", st.Plan)
	fmt.Fprintf(w, "agent      %s %s\n", st.Agent, st.Model)
	if st.Sandbox != nil {
		fmt.Fprintf(w, "sandbox    %s\n", st.Sandbox)
	}
	fmt.Fprintf(w, "iteration  %d", st.Iteration)
	if st.CurrentTask != "" {
		fmt.Fprintf(w, " (task %s)", st.CurrentTask)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "started    %s, updated %s\n", st.StartedAt.Local().Format(time.RFC3339), st.UpdatedAt.Local().Format(time.RFC3339))
	fmt.Fprintf(w, "tasks      %d done, %d failed this run\n", t.TasksDone, t.TasksFailed)
	fmt.Fprintf(w, "tokens     %d in, %d out, %d cache read, %d cache write\n", t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheWriteTokens)
	_, err = fmt.Fprintf(w, "cost       %s%s over %s\n", state.FormatCost(t.CostUSD, t.CostSource), costNote(t.CostSource),
		(time.Duration(t.DurationMS) * time.Millisecond).Round(time.Millisecond))
	for i, name := range slices.Sorted(maps.Keys(st.Quota)) {
		label := ""
		if i == 0 {
			label = "quota"
		}
		if _, err = fmt.Fprintf(w, "%-10s %s %s\n", label, name, st.Quota[name]); err != nil {
			return err
		}
	}
	for i, e := range report.Evidence {
		label := ""
		if i == 0 {
			label = "checked"
		}
		if _, err = fmt.Fprintf(w, "%-10s %s: %s\n", label, e.TaskID, e.line()); err != nil {
			return err
		}
	}
	return err
}

// costNote says how a total cost was arrived at, when the agent did not
// report all of it.
func costNote(source string) string {
	switch source {
	case state.CostEstimated:
		return " (estimated from tokens)"
	case state.CostUnknown:
		return " (some tokens of a model without a price)"
	}
	return ""
}

// taskEvidence is what checked one task the run finished.
type taskEvidence struct {
	TaskID string                `json:"task_id"`
	Gates  []state.GateRun       `json:"gates,omitempty"`
	Guard  *state.GuardEvidence  `json:"guard,omitempty"`
	Review *state.ReviewEvidence `json:"review,omitempty"`
}

func (e taskEvidence) line() string {
	if s := receipt.EvidenceLine(e.Gates, e.Guard, e.Review); s != "" {
		return s
	}
	return "no gates, guard or reviewer"
}

// runEvidence lists the evidence of the tasks run runID finished, in the
// order they were done.
func runEvidence(recs []state.Record, runID string) []taskEvidence {
	var out []taskEvidence
	for _, r := range recs {
		if r.RunID != runID || (r.Outcome != state.OutcomeTaskDone && r.Outcome != state.OutcomePlanDone) {
			continue
		}
		out = append(out, taskEvidence{TaskID: r.TaskID, Gates: r.Gates, Guard: r.Guard, Review: r.Review})
	}
	return out
}

// statusReport is what status --json prints: state.json, and for a run
// that died without saying so, status "crashed" with what state.json
// said and the processes it left that are still running.
type statusReport struct {
	state.State
	// RecordedStatus is the status state.json holds, when Status says
	// something else.
	RecordedStatus string `json:"recorded_status,omitempty"`
	// Leftovers are the live processes a crashed run started.
	Leftovers []leftover `json:"leftovers,omitempty"`
	// Evidence is what checked each task the run finished.
	Evidence []taskEvidence `json:"evidence,omitempty"`
}

type leftover struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
}

// crashedReport is the status of a run that state.json says is live while
// no run holds the lock: it was killed (kill -9, the OOM killer, a CI
// cancel), crashed, or the machine went down, and could not say so.
func crashedReport(st state.State) statusReport {
	r := statusReport{State: st, RecordedStatus: st.Status}
	r.Status = state.StatusCrashed
	var b strings.Builder
	fmt.Fprintf(&b, "the run stopped unexpectedly (pid %d was killed or crashed, or the machine went down)", st.PID)
	if st.Iteration > 0 && st.CurrentTask != "" {
		fmt.Fprintf(&b, " during iteration %d (task %s)", st.Iteration, st.CurrentTask)
	}
	b.WriteString("; `ralph run` continues the plan")
	switch {
	case len(st.Accepting) > 0:
		// Its checks had passed: the next run marks and commits it.
		fmt.Fprintf(&b, " and first finishes accepting %s", strings.Join(st.Accepting, ", "))
	case st.Iteration > 0 && st.CurrentTask != "":
		b.WriteString(" and records that iteration as interrupted")
	}
	if left := proc.Survivors(st.RunID); len(left) > 0 {
		for _, l := range left {
			r.Leftovers = append(r.Leftovers, leftover{PID: l.Pid, Command: l.Command})
		}
		fmt.Fprintf(&b, "; %d of its processes still run, which it stops first: %s", len(left), describe(left))
	}
	r.Message = b.String()
	return r
}

// describe lists processes: "node server.js (pid 4242), sleep 60 (pid 4243)".
func describe(procs []proc.Leftover) string {
	s := make([]string, len(procs))
	for i, p := range procs {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
