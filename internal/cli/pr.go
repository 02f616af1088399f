package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/tracker"
)

type prOptions struct {
	f    *Factory
	Plan string
}

const prLong = `Push the run branch and open, or update, its one pull request.

PLAN is the plan the run worked on (default: the tasks key of ralph.toml,
then discovery); a github:OWNER/REPO plan is read from its snapshot in
.ralph/, without asking GitHub for the issues again.

The branch goes to github.remote (origin) without force: when someone
pushed to it meanwhile, the push is refused and nothing else happens. The
pull request is found by its head branch, so running this again edits it
instead of opening another. Its body lists every task of the plan with
its commit, receipt (iterations, time, tokens, cost), gates and review
verdict, and "Closes #N" for each done issue of a github: plan. It is a
draft while tasks remain open or failed. With a github: plan, what a run
could not write back to its issues (GitHub was away) is written first.

The repository is the github: plan's, else github.repo, else the one the
remote's URL names. The token is GITHUB_TOKEN, GH_TOKEN or gh auth token.`

func newCmdPR(f *Factory, runF func(*prOptions) error) *cobra.Command {
	opts := &prOptions{f: f}
	return &cobra.Command{
		Use:   "pr [PLAN]",
		Short: "Push the run branch and open or update its pull request",
		Long:  prLong,
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) == 1 {
				opts.Plan = a[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return runPR(cmd.Context(), opts)
		},
	}
}

func runPR(ctx context.Context, opts *prOptions) error {
	res, err := session.PullRequest(ctx, opts.f.Host, opts.Plan)
	if err != nil {
		return err
	}
	printPR(opts.f, res)
	return nil
}

func printPR(f *Factory, res tracker.PullResult) {
	verb, draft := "updated", ""
	if res.Created {
		verb = "opened"
	}
	if res.Draft {
		draft = " (draft: tasks remain)"
	}
	fmt.Fprintf(f.IO.Out, "pull request #%d %s: %s%s\n", res.Number, verb, res.URL, draft)
}
