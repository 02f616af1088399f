package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/vcs"
	"github.com/ralph-loop/ralph/internal/worker"
)

// runRemoteStatus is `ralph status --remote`: the plan's tasks as the
// remote's run branch and claims tell them, from any clone.
func runRemoteStatus(ctx context.Context, opts *statusOptions) error {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	cfg, err := opts.f.ConfigUnapproved(dir)
	if err != nil {
		return err
	}
	remote := strings.TrimSpace(opts.Remote)
	if remote == "" {
		remote = cfg.Worker.Remote
	}
	plan, err := session.OpenPlan(dir, cfg.Tasks)
	if err != nil {
		return err
	}
	g, err := vcs.Open(ctx, dir, opts.f.Environ())
	if err != nil {
		return fmt.Errorf("status --remote needs a git clone of the workers' remote: %w", err)
	}
	branch := plan.Plan().Branch
	if branch == "" {
		if branch, err = g.Branch(ctx); err != nil {
			return fmt.Errorf("status --remote reads the plan's branchName or the branch checked out: %w", err)
		}
	}
	relPlan, err := state.RepoPath(g.Root, plan.Path())
	if err != nil {
		return err
	}
	l := &worker.Ledger{Git: g, Remote: remote, Branch: branch, Plan: relPlan}
	v, err := l.Fetch(ctx)
	if err != nil {
		return err
	}
	r := l.Status(v, time.Now())
	w := opts.f.IO.Out
	if opts.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	c := r.Counts
	fmt.Fprintf(w, "%s on %s at %s · %s: %d/%d done · %d claimed · %d expired · %d failed · %d ready · %d waiting\n",
		r.Branch, r.Remote, shortHash(r.Head), r.Plan, c[worker.TaskDone], len(r.Tasks), c[worker.TaskClaimed],
		c[worker.TaskExpired], c[worker.TaskFailed], c[worker.TaskReady], c[worker.TaskWaiting])
	for _, t := range r.Tasks {
		line := fmt.Sprintf("  %-8s %s %s", t.State, t.ID, t.Title)
		switch t.State {
		case worker.TaskClaimed:
			line += fmt.Sprintf(" · %s, lease %s left (since %s)", t.Worker, *t.LeaseLeft, t.Started.Local().Format("15:04:05"))
		case worker.TaskExpired:
			line += fmt.Sprintf(" · %s, lease ran out %s ago: the next worker takes it over", t.Worker, -*t.LeaseLeft)
		case worker.TaskFailed:
			if t.Worker != "" {
				line += fmt.Sprintf(" · by %s: %s (to try again: git push %s --delete %s)", t.Worker, t.Reason, r.Remote,
					l.ClaimRef(t.ID))
			}
		case worker.TaskWaiting:
			line += " · after " + strings.Join(t.DependsOn, ", ")
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

func shortHash(h string) string { return h[:min(len(h), 12)] }
