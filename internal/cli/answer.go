package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/serve"
	"github.com/ralph-loop/ralph/internal/state"
)

type answerOptions struct {
	f    *Factory
	Run  string
	Task string
	Text string
}

const answerLong = `Answer the question an agent asked (<promise>QUESTION</promise>): the
answer goes into the next prompt of the question's task. RUN is a run id
(ralph serve lists them) or a project directory; default: the project
here. A live run gets it at once through its control channel
(.ralph/run.sock); otherwise it is kept in .ralph/state.json for the next
run. --task picks the question when several wait.`

func newCmdAnswer(f *Factory, runF func(*answerOptions) error) *cobra.Command {
	opts := &answerOptions{f: f}
	cmd := &cobra.Command{
		Use:   "answer [RUN] TEXT",
		Short: "Answer an agent's question",
		Long:  answerLong,
		Args:  args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 2 {
				opts.Run = a[0]
			}
			opts.Text = strings.TrimSpace(a[len(a)-1])
			if opts.Text == "" {
				return usageError(errors.New("TEXT: empty answer"))
			}
			if runF != nil {
				return runF(opts)
			}
			return runAnswer(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Task, "task", "", "answer the question of task `ID` (default: the oldest waiting)")
	return cmd
}

func runAnswer(ctx context.Context, opts *answerOptions) error {
	dir, err := answerDir(opts)
	if err != nil {
		return err
	}
	st, err := readStateAt(dir)
	if err != nil {
		return err
	}
	pending := st.Pending()
	var q *state.Question
	for i := range pending {
		if opts.Task == "" || pending[i].Task == opts.Task {
			q = &pending[i]
			break
		}
	}
	if q == nil {
		return fmt.Errorf("no question is waiting for an answer in %s", dir)
	}
	sock := serve.SocketPath(dir)
	if _, err := os.Stat(sock); err == nil {
		err := serve.Send(ctx, sock, serve.Command{Verb: serve.VerbAnswer, Task: q.Task, Text: opts.Text, By: "cli"})
		if err == nil {
			fmt.Fprintf(opts.f.IO.Out, "answered %s's question; the run takes it into the next prompt\n", q.Task)
			return nil
		}
	}
	if _, err := serve.AnswerOnDisk(dir, q.Task, opts.Text, "cli"); err != nil {
		return err
	}
	fmt.Fprintf(opts.f.IO.Out, "answered %s's question; the next ralph run takes it into the prompt\n", q.Task)
	return nil
}

// answerDir is the project RUN names: a directory, or a run id of the
// registry; the project here without it.
func answerDir(opts *answerOptions) (string, error) {
	if opts.Run == "" {
		return opts.f.ProjectDir()
	}
	if fi, err := os.Stat(opts.Run); err == nil && fi.IsDir() {
		return filepath.Abs(opts.Run)
	}
	for _, e := range serve.Registered(serve.StateDir(opts.f.Environ())) {
		if e.RunID == opts.Run {
			return e.Dir, nil
		}
	}
	return "", fmt.Errorf("RUN %q: neither a directory nor a live run's id", opts.Run)
}

func readStateAt(dir string) (state.State, error) {
	store, err := state.Open(dir)
	if err != nil {
		return state.State{}, err
	}
	return store.LoadState()
}
