package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/redact"
	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/ui"
)

type logsOptions struct {
	f         *Factory
	Iteration int
	Run       string
	Follow    bool
	// Poll is how often follow mode looks for new output.
	Poll time.Duration
}

const logsLong = `Show what the agent did in one iteration: its messages, one line per
tool call with its key argument, tool output cut to a few lines, errors,
and the tokens and cost at the end. The raw output is decoded the way the
iteration's agent writes it (history says which agent ran).

ITER defaults to the latest iteration of the latest run (--run picks
another run); a run that ended without an iteration, started again on a
plan already done, leaves that to the run before it. With -f, new output
is shown as it arrives, then the next iterations, until the run ends (or
Ctrl-C).`

func newCmdLogs(f *Factory, runF func(*logsOptions) error) *cobra.Command {
	opts := &logsOptions{f: f, Poll: 200 * time.Millisecond}
	cmd := &cobra.Command{
		Use:   "logs [ITER]",
		Short: "Show an iteration's agent output, readably; -f follows a running loop",
		Long:  logsLong,
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 1 {
				n, err := strconv.Atoi(a[0])
				if err != nil || n < 1 {
					return usageError(fmt.Errorf("ITER: want an iteration number (1 or more), got %q", a[0]))
				}
				opts.Iteration = n
			}
			if runF != nil {
				return runF(opts)
			}
			return runLogs(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Run, "run", "", "the run `ID` (default: the latest)")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "follow the running loop: new output, then the next iterations")
	return cmd
}

// logView is one iteration being shown.
type logView struct {
	dir, runID string
	iteration  int
	store      *state.Store
	agents     map[string]config.AgentConfig
	color      bool
	w          io.Writer
}

func runLogs(ctx context.Context, opts *logsOptions) error {
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
	recs, err := store.History()
	if err != nil {
		return err
	}
	// An agent's output may hold a secret it printed.
	out := redact.NewWriter(opts.f.IO.Out)
	defer func() { _ = out.Flush() }()
	v := &logView{dir: dir, store: store, w: out,
		color: opts.f.IO.TTY && session.Getenv(opts.f.Environ(), "NO_COLOR") == ""}
	if cfg, err := opts.f.ConfigUnapproved(dir); err == nil {
		// Only the command agent's output dialect is read from it; a broken
		// config must not hide the logs.
		v.agents = cfg.Agents
	}
	v.runID = cmp.Or(opts.Run, st.RunID)
	if opts.Run == "" && st.Iteration == 0 && !state.Live(st.Status) {
		// A run that ended without an iteration (run again on a done
		// plan) has no output: the latest run's logs are those of the
		// last run that had some. The header names that run.
		v.runID = cmp.Or(lastRunWithOutput(recs), v.runID)
	}
	if v.runID == "" {
		return errors.New("no run yet: start one with `ralph run`")
	}
	v.iteration = opts.Iteration
	if v.iteration == 0 {
		v.iteration = latestIteration(v.runID, st, recs)
		if v.iteration == 0 {
			return fmt.Errorf("run %s has no iteration yet", v.runID)
		}
	}
	path := session.TranscriptPath(dir, v.runID, v.iteration)
	if _, err := os.Stat(path); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// An end review round has no agent of its own: its reviewers'
		// outputs are the iteration's.
		if reviews := reviewTranscripts(path); len(reviews) > 0 && !opts.Follow {
			return v.showReviews(reviews, recs, st)
		}
		return fmt.Errorf("no output of iteration %d in run %s (%s)", v.iteration, v.runID, path)
	}
	if !opts.Follow {
		return v.show(path, recs, st)
	}
	return v.follow(ctx, opts.Poll, recs, st)
}

// reviewTranscripts are the reviewers' outputs beside an iteration's
// transcript path (iter-NNN.review-K.out), in the order they were
// started.
func reviewTranscripts(path string) []string {
	prefix := strings.TrimSuffix(path, ".out") + ".review-"
	files, err := filepath.Glob(prefix + "*.out")
	if err != nil {
		return nil
	}
	k := func(f string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f, prefix), ".out"))
		return n
	}
	files = slices.DeleteFunc(files, func(f string) bool { return k(f) == 0 })
	slices.SortFunc(files, func(a, b string) int { return k(a) - k(b) })
	return files
}

// showReviews shows an end review round: each reviewer's output in turn
// (decoded as its agent writes, when the round's reviewers were all one
// agent), then the round's outcome.
func (v *logView) showReviews(files []string, recs []state.Record, st state.State) error {
	rec, found := record(recs, v.runID, v.iteration)
	fmt.Fprintln(v.w, v.header(rec, found, st))
	name := ""
	if found && rec.EndReview != nil {
		for i, r := range rec.EndReview.Reviewers {
			if i > 0 && r.Agent != name {
				name = ""
				break
			}
			name = r.Agent
		}
	}
	var last agent.Result
	for i, path := range files {
		fmt.Fprintf(v.w, "── reviewer %d of %d ──\n", i+1, len(files))
		tw := ui.NewTranscriptWriter(v.w, decoderFor(name, v.agents, fileHead(path)), ui.TranscriptOptions{Color: v.color})
		res, err := render(tw, path)
		if err != nil {
			return err
		}
		last = res
	}
	return v.verdict(rec, found, last)
}

// latestIteration is the run's last iteration: the current one for the
// run in state.json, else the last one history has.
func latestIteration(runID string, st state.State, recs []state.Record) int {
	if st.RunID == runID {
		return st.Iteration
	}
	n := 0
	for _, r := range recs {
		if r.RunID == runID {
			n = max(n, r.Iteration)
		}
	}
	return n
}

// lastRunWithOutput is the run of history's last iteration; "" when
// there is none.
func lastRunWithOutput(recs []state.Record) string {
	if len(recs) == 0 {
		return ""
	}
	return recs[len(recs)-1].RunID
}

// record finds the history line of an iteration.
func record(recs []state.Record, runID string, iteration int) (state.Record, bool) {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].RunID == runID && recs[i].Iteration == iteration {
			return recs[i], true
		}
	}
	return state.Record{}, false
}

// header names the iteration, its task, agent and outcome.
func (v *logView) header(rec state.Record, found bool, st state.State) string {
	parts := []string{fmt.Sprintf("iteration %d", v.iteration)}
	agentName := rec.Agent
	if !found && st.RunID == v.runID {
		agentName = st.Agent
		if st.CurrentTask != "" {
			parts = append(parts, st.CurrentTask)
		}
		parts = append(parts, agentName, "running")
	} else {
		parts = append(parts, rec.TaskID, agentName, string(rec.Outcome))
	}
	parts = slices.DeleteFunc(append(parts, "run "+v.runID), func(s string) bool { return s == "" })
	return ui.Text("── " + strings.Join(parts, " · ") + " ──")
}

// writer returns the transcript writer for the iteration's agent.
func (v *logView) writer(path string, rec state.Record, found bool, st state.State) *ui.TranscriptWriter {
	name := rec.Agent
	if !found && st.RunID == v.runID {
		name = st.Agent
	}
	return ui.NewTranscriptWriter(v.w, decoderFor(name, v.agents, fileHead(path)), ui.TranscriptOptions{Color: v.color})
}

func (v *logView) show(path string, recs []state.Record, st state.State) error {
	rec, found := record(recs, v.runID, v.iteration)
	fmt.Fprintln(v.w, v.header(rec, found, st))
	res, err := render(v.writer(path, rec, found, st), path)
	if err != nil {
		return err
	}
	return v.verdict(rec, found, res)
}

// render writes the transcript at path through tw, whole, and returns
// what its decoder made of it.
func render(tw *ui.TranscriptWriter, path string) (agent.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return agent.Result{}, err
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return agent.Result{}, err
	}
	if err := tw.Close(); err != nil {
		return agent.Result{}, err
	}
	return tw.Result(), nil
}

// verdict says how ralph judged the iteration, from its history line.
func (v *logView) verdict(rec state.Record, found bool, res agent.Result) error {
	if !found {
		return nil
	}
	line := "── " + string(rec.Outcome)
	if rec.Commit != "" {
		line += " · commit " + rec.Commit[:min(7, len(rec.Commit))]
	}
	if rec.Error != "" && rec.Error != res.ErrorText {
		line += ": " + rec.Error
	}
	_, err := fmt.Fprintln(v.w, ui.Text(line)) // a QUESTION's or a failure's text is the agent's
	return err
}

// follow shows the iteration as it grows, then each next one, until the
// run ends or ctx is done.
func (v *logView) follow(ctx context.Context, poll time.Duration, recs []state.Record, st state.State) error {
	for {
		path := session.TranscriptPath(v.dir, v.runID, v.iteration)
		rec, found := record(recs, v.runID, v.iteration)
		fmt.Fprintln(v.w, v.header(rec, found, st))
		next, err := v.followOne(ctx, poll, path, rec, found, st)
		if err != nil || !next {
			return err
		}
		v.iteration++
		if recs, err = v.store.History(); err != nil {
			return err
		}
		if st, err = v.store.LoadState(); err != nil {
			return err
		}
	}
}

// followOne shows one iteration's output as it grows. It returns whether
// the run went on to a next iteration.
func (v *logView) followOne(ctx context.Context, poll time.Duration, path string, rec state.Record, found bool, st state.State) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	tw := v.writer(path, rec, found, st)
	for {
		n, err := io.Copy(tw, f)
		if err != nil {
			return false, err
		}
		cur, err := v.store.LoadState()
		if err != nil {
			return false, err
		}
		over, next := iterationOver(cur, v.runID, v.iteration)
		if over {
			// The transcript is closed before state moves on: what is left
			// is all there is.
			if _, err := io.Copy(tw, f); err != nil {
				return false, err
			}
			if err := tw.Close(); err != nil {
				return false, err
			}
			if recs, err := v.store.History(); err == nil {
				rec, found := record(recs, v.runID, v.iteration)
				if err := v.verdict(rec, found, tw.Result()); err != nil {
					return false, err
				}
			}
			if next {
				waitFile(ctx, poll, session.TranscriptPath(v.dir, v.runID, v.iteration+1))
				return ctx.Err() == nil, nil
			}
			return false, nil
		}
		if n > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return false, tw.Close()
		case <-time.After(poll):
		}
	}
}

// iterationOver reads state.json: the iteration is over once the run has
// moved past it or ended; next says a later iteration of the run started.
func iterationOver(st state.State, runID string, iteration int) (over, next bool) {
	switch {
	case st.RunID != runID:
		return true, false
	case st.Iteration > iteration:
		return true, true
	case st.Status != state.StatusRunning && st.Status != state.StatusWaiting:
		return true, false
	case st.PID > 0 && syscall.Kill(st.PID, 0) == syscall.ESRCH:
		// The run died without saying so (kill -9).
		return true, false
	}
	return false, false
}

// waitFile waits for a file to appear, or ctx to end.
func waitFile(ctx context.Context, poll time.Duration, path string) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
		}
	}
}

// fileHead returns the first bytes of a file, to tell JSON output from
// text when the agent is unknown.
func fileHead(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 512)
	n, _ := io.ReadFull(f, b)
	return bytes.TrimSpace(b[:n])
}

// decoderFor returns the decoder of the named agent, with the output
// dialect the config gives it; for an agent ralph does not know (the
// demo's), JSON lines are read as Claude's stream-json, anything else as
// text (agent.TranscriptDecoder).
func decoderFor(name string, agents map[string]config.AgentConfig, head []byte) agent.Decoder {
	return agent.TranscriptDecoder(name, agents[name].Output, head)
}
