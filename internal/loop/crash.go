package loop

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/state"
)

// recoverCrashed finishes what a run that died during its iterations
// (killed with -9, the OOM killer, a crash, the machine going down) left
// half done, before anything else runs: it reconciles the plan and the
// commits with what the dead run decided (reconcile), then writes the
// history lines it could not write, one per iteration that was running.
// The run holds the lock by now, so a state.json that still says the last
// run is live was left by one that died. So was one that ended inside an
// acceptance (a history line it could not write: a full disk). It returns
// what to tell the user, "" when the last run ended properly.
func (r *runner) recoverCrashed(ctx context.Context, prev state.State) (string, error) {
	live := state.Live(prev.Status)
	if (!live && len(prev.Accepting) == 0) || prev.RunID == "" {
		return "", nil
	}
	msg := fmt.Sprintf("the last run (%s) stopped unexpectedly", prev.RunID)
	if !live {
		msg = fmt.Sprintf("the last run (%s) failed (%s)", prev.RunID, prev.Message)
	}
	tasks := strings.Split(prev.CurrentTask, ",")
	if prev.Iteration == 0 || prev.CurrentTask == "" {
		return msg + " before its first iteration", nil
	}
	hist, err := r.deps.Store.History()
	if err != nil {
		return "", err
	}
	recorded := map[int]bool{}
	for _, rec := range hist {
		if rec.RunID == prev.RunID {
			recorded[rec.Iteration] = true
		}
	}
	// The iterations without a line; the running tasks (several with
	// --parallel) were the last ones started. Which number each of
	// several had is not recorded: they are paired in order.
	var missing []int
	for n := 1; n <= prev.Iteration; n++ {
		if !recorded[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > len(tasks) {
		missing = missing[len(missing)-len(tasks):]
	}
	unfinished := tasks[:len(missing)]
	rc, err := r.reconcile(ctx, prev, unfinished)
	if err != nil {
		return "", err
	}
	r.held, r.heldWhy = rc.held, rc.heldWhy
	if len(missing) == 0 {
		// It died after its last line, between iterations.
		return msg + fmt.Sprintf(" after iteration %d", prev.Iteration) + rc.note(), nil
	}
	var what []string
	interrupted := 0
	for i, n := range missing {
		rec := r.crashedRecord(prev, n, tasks[i])
		desc := fmt.Sprintf("iteration %d (task %s)", n, rec.TaskID)
		if hash, ok := rc.finished[rec.TaskID]; ok {
			rec.Outcome, rec.Commit = state.OutcomeTaskDone, hash
			rec.Error = strings.Replace(rec.Error, "during this iteration", "while it finished this task (its checks had passed)", 1) +
				"; the next run marked it done and committed it"
			desc = fmt.Sprintf("iteration %d (task %s, which it had accepted: finished)", n, rec.TaskID)
		} else {
			interrupted++
		}
		if err := r.deps.Store.AppendHistory(rec); err != nil {
			return "", err
		}
		what = append(what, desc)
	}
	msg += " during " + strings.Join(what, ", ")
	switch {
	case interrupted == len(missing):
		msg += "; recorded as interrupted"
	case interrupted > 0:
		msg += "; the others recorded as interrupted"
	}
	return msg + rc.note(), nil
}

// crashedRecord is the history line of iteration n of the dead run prev,
// on task id. Its times come from the iteration's files: the prompt is
// written as it starts, the transcript as the agent speaks.
func (r *runner) crashedRecord(prev state.State, n int, id string) state.Record {
	rec := state.Record{RunID: prev.RunID, Iteration: n, TaskID: id, Attempt: prev.Tasks[id].Attempts + 1, Agent: prev.Agent, Model: prev.Model,
		StartedAt: prev.UpdatedAt, ExitCode: -1, Outcome: state.OutcomeInterrupted,
		Error: fmt.Sprintf("ralph stopped unexpectedly during this iteration (pid %d was killed or crashed, "+
			"or the machine went down); recorded by the next run", prev.PID)}
	if prev.CurrentAgent != "" {
		rec.Agent, rec.Model = prev.CurrentAgent, prev.CurrentModel
	}
	if !state.Live(prev.Status) {
		rec.Error = fmt.Sprintf("ralph failed during this iteration (%s); recorded by the next run", prev.Message)
	}
	if promptPath, outPath, err := r.deps.Store.IterationFiles(prev.RunID, n); err == nil {
		if fi, err := os.Stat(promptPath); err == nil {
			rec.StartedAt = fi.ModTime()
		}
		rec.EndedAt = rec.StartedAt
		if fi, err := os.Stat(outPath); err == nil && fi.ModTime().After(rec.StartedAt) {
			rec.EndedAt = fi.ModTime()
		}
	}
	if rec.EndedAt.IsZero() {
		rec.EndedAt = rec.StartedAt
	}
	rec.DurationMS = rec.EndedAt.Sub(rec.StartedAt).Round(time.Millisecond).Milliseconds()
	return rec
}
