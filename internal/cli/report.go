package cli

import (
	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/receipt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/ui"
)

type reportOptions struct {
	f    *Factory
	By   string
	JSON bool
}

func newCmdReport(f *Factory, runF func(*reportOptions) error) *cobra.Command {
	opts := &reportOptions{f: f}
	cmd := &cobra.Command{
		Use:   "report",
		Short: "The receipt: per task what it took and cost, whether it was verified; the cost per verified task",
		Long: `Adds up the project's history into a receipt. Per task: its attempts, the agents and
models that worked on it (its reviewers included), tokens, cost, whether it was verified (it
ended done, its gates passed, the guard found nothing the task did not ask for, and the
reviewer said SHIP where one ran) and how its last iteration ended. Then the totals: the
cost of every run in the history, and the cost per verified task (that cost divided by the
tasks verified; n/a with none). A cost ralph cannot know (a model without a price, an agent
that reports no usage) is shown as unknown, never as $0, and makes the totals "at least".

--by model and --by agent put the same figures per model or per agent: a reviewer's share
goes to the reviewer's model and agent. --json prints one JSON object (docs/concepts.md, Receipts
documents its shape).`,
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runReport(opts)
		},
	}
	cmd.Flags().StringVar(&opts.By, "by", string(receipt.ByTask), "one row per `VIEW`: task, model or agent")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the receipt as one JSON object")
	return cmd
}

func runReport(opts *reportOptions) error {
	by, err := receipt.ParseBy(opts.By)
	if err != nil {
		return usageError(err)
	}
	recs, err := readHistory(opts.f)
	if err != nil {
		return err
	}
	return printReport(opts.f, receipt.Build(recs, by), opts.JSON)
}

// readHistory reads the project's history.jsonl.
func readHistory(f *Factory) ([]state.Record, error) {
	dir, err := f.ProjectDir()
	if err != nil {
		return nil, err
	}
	store, err := state.Open(dir)
	if err != nil {
		return nil, err
	}
	return store.History()
}

func printReport(f *Factory, rep receipt.Report, asJSON bool) error {
	w := ui.TextWriter{W: f.IO.Out} // task ids and models are the agent's text
	if asJSON {
		return rep.WriteJSON(w)
	}
	return rep.WriteText(w)
}
