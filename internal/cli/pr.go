package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/tracker"
	"github.com/ralph-loop/ralph/internal/vcs"
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
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	cfg, err := opts.f.Config(dir)
	if err != nil {
		return err
	}
	if opts.Plan != "" {
		cfg.Tasks = opts.Plan
	}
	ctx = opts.f.withPrograms(ctx, cfg, dir)
	plan, err := openPlan(dir, cfg.Tasks)
	if err != nil {
		return err
	}
	// The pre-push hook runs in the sandbox: it may run code the agent
	// wrote.
	sb, err := chooseSandbox(ctx, opts.f, cfg, dir)
	if err != nil {
		return err
	}
	defer sb.close()
	defer sb.closeHomes()
	store, err := state.Open(dir)
	if err != nil {
		return err
	}
	var prs tracker.PullRequests // nil: the repository prRepo names
	if isTrackerPlan(cfg.Tasks) {
		gh, err := newGitHub(ctx, opts.f, dir, cfg, strings.TrimPrefix(cfg.Tasks, trackerPrefix), nil)
		if err != nil {
			return err
		}
		// What the run could not write back to the issues, first.
		newWriteBack(ctx, gh, store, "", func(e loop.Event) {
			fmt.Fprintln(opts.f.IO.ErrOut, "ralph: warning:", e.Message)
		}).reconcile(plan.Plan())
		prs = gh
	}
	res, err := publishPR(ctx, opts.f, dir, cfg, plan.Plan(), store, prs, sb.gates())
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

// prRepo is OWNER/REPO of the pull request: the github: plan's, else
// github.repo, else what the remote's URL names.
func prRepo(ctx context.Context, cfg config.Config, git *vcs.Git) (string, error) {
	if isTrackerPlan(cfg.Tasks) {
		return strings.TrimPrefix(cfg.Tasks, trackerPrefix), nil
	}
	if cfg.GitHub.Repo != "" {
		return cfg.GitHub.Repo, nil
	}
	url, err := git.RemoteURL(ctx, cfg.GitHub.Remote)
	if err != nil {
		return "", err
	}
	if m := remoteRepo.FindStringSubmatch(url); m != nil {
		return m[1] + "/" + m[2], nil
	}
	return "", fmt.Errorf("remote %s (%s) names no GitHub repository: set github.repo = \"OWNER/REPO\" in ralph.toml", cfg.GitHub.Remote, url)
}

// remoteRepo reads OWNER/REPO from git@HOST:OWNER/REPO.git and
// https://HOST/OWNER/REPO(.git).
var remoteRepo = regexp.MustCompile(`^(?:[a-z+]+://[^/]+/|[^@/]+@[^:]+:)([^/]+)/([^/]+?)(?:\.git)?/?$`)

// publishPR pushes the current branch and opens or updates its pull
// request. prs is the tracker to use; nil connects to the GitHub
// repository prRepo names. The user's pre-push hook runs in hooks, the
// run's sandbox (nil: none). Nothing is opened when the push fails.
func publishPR(ctx context.Context, f *Factory, dir string, cfg config.Config, plan *task.Plan, store *state.Store,
	prs tracker.PullRequests, hooks proc.Wrapper) (tracker.PullResult, error) {
	git, err := vcs.Open(ctx, dir, f.Environ())
	if err != nil {
		return tracker.PullResult{}, fmt.Errorf("%s; run `git init` and commit the work first "+
			"(--allow-no-repo lets `ralph run` work without a repository, not a pull request)",
			noRepoMessage(err, "a pull request needs a git repository"))
	}
	git.Hooks = hooks
	branch, err := git.Branch(ctx)
	if err != nil {
		return tracker.PullResult{}, err
	}
	if prs == nil {
		repo, err := prRepo(ctx, cfg, git)
		if err != nil {
			return tracker.PullResult{}, err
		}
		if prs, err = newGitHub(ctx, f, dir, cfg, repo, nil); err != nil {
			return tracker.PullResult{}, err
		}
	}
	if err := prs.CheckWrite(ctx); err != nil {
		return tracker.PullResult{}, err
	}
	if branch == cfg.GitHub.Base {
		return tracker.PullResult{}, fmt.Errorf("on %s, the pull request's base: a pull request needs the run's own branch", branch)
	}
	if err := git.Push(ctx, cfg.GitHub.Remote, branch); err != nil {
		return tracker.PullResult{}, err
	}
	history, err := store.History()
	if err != nil {
		return tracker.PullResult{}, err
	}
	st, err := store.LoadState()
	if err != nil {
		return tracker.PullResult{}, err
	}
	body, open := prBody(plan, history, st, isTrackerPlan(cfg.Tasks))
	name := plan.Name
	if name == "" {
		name = branch
	}
	title := fmt.Sprintf("ralph: %s", name)
	return prs.OpenOrUpdate(ctx, tracker.PullRequest{Head: branch, Base: cfg.GitHub.Base, Title: title, Body: body, Draft: open > 0})
}

// prBody lists every task with its commit, receipt, gates and review
// verdict, and closes the done issues of a GitHub plan. open counts the
// tasks not done (open or failed).
func prBody(plan *task.Plan, history []state.Record, st state.State, issues bool) (body string, open int) {
	var closes strings.Builder
	var rows []string
	done, failed := 0, 0
	for _, t := range plan.Tasks {
		r := tracker.ReceiptOf(history, t.ID)
		status := "open"
		switch {
		case t.Status == task.StatusDone:
			status = "✅ done"
			done++
			if issues && strings.HasPrefix(t.ID, "#") {
				fmt.Fprintf(&closes, "Closes %s\n", t.ID)
			}
		case t.Status == task.StatusFailed || st.Tasks[t.ID].Failed:
			status = "❌ failed"
			failed++
		}
		commit := ""
		if n := len(r.Commits); n > 0 {
			commit = tracker.ShortCommit(r.Commits[n-1])
		}
		receipt := ""
		if r.Iterations > 0 {
			receipt = r.Line()
		}
		rows = append(rows, fmt.Sprintf("| %s %s | %s | %s | %s | %s | %s |\n", cell(t.ID), cell(t.Title), status, commit, receipt, cell(r.Gates), cell(r.Review)))
	}
	open = len(plan.Tasks) - done
	head := fmt.Sprintf("ralph: %d of %d tasks done", done, len(plan.Tasks))
	if failed > 0 {
		head += fmt.Sprintf(", %d failed", failed)
	}
	var b strings.Builder
	b.WriteString(head + ".\n\n| Task | Status | Commit | Receipt | Gates | Review |\n|---|---|---|---|---|---|\n")
	// GitHub refuses a body over 65536 characters: a long plan's table is
	// cut, never the Closes lines.
	room := maxPRBody - b.Len() - closes.Len() - 100
	for i, row := range rows {
		if len(row) > room {
			fmt.Fprintf(&b, "\n… and %d more tasks (`ralph tasks list`).\n", len(rows)-i)
			break
		}
		b.WriteString(row)
		room -= len(row)
	}
	if closes.Len() > 0 {
		b.WriteString("\n" + closes.String())
	}
	return b.String(), open
}

// maxPRBody is below GitHub's limit of 65536 characters on a pull
// request's body, counting bytes.
const maxPRBody = 60000

// cell makes text safe in a markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// prFeedback is `ralph run --pr-feedback N`: rounds of reading the pull
// request's failing checks and unanswered review comments as tasks,
// running the loop on them, pushing, and answering each comment with the
// commit that addressed it, until the checks are green and no comment is
// left, or a limit stops the loop.
func prFeedback(ctx context.Context, opts *runOptions) error {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	cfg, err := runConfig(opts, dir)
	if err != nil {
		return err
	}
	ctx = opts.f.withPrograms(ctx, cfg, dir)
	git, err := vcs.Open(ctx, dir, opts.f.Environ())
	if err != nil {
		return fmt.Errorf("--pr-feedback needs a git repository: %w", err)
	}
	// Each round's push runs the pre-push hook in the sandbox.
	sb, err := chooseSandbox(ctx, opts.f, cfg, dir)
	if err != nil {
		return err
	}
	defer sb.close()
	defer sb.closeHomes()
	git.Hooks = sb.gates()
	repo, err := prRepo(ctx, cfg, git)
	if err != nil {
		return err
	}
	gh, err := newGitHub(ctx, opts.f, dir, cfg, repo, nil)
	if err != nil {
		return err
	}
	// Checks can take a while to finish; poll, within max-wait, ten
	// times over it at least, and twice a minute at most.
	deadline := time.Now().Add(cfg.MaxWait.D())
	poll := min(30*time.Second, max(cfg.MaxWait.D()/10, 100*time.Millisecond))
	path := snapshotPath(dir, trackerPrefix+repo)
	path = strings.TrimSuffix(path, ".json") + fmt.Sprintf("-pr-%d.json", opts.PRFeedback)
	for round := 1; ; round++ {
		fb, err := gh.Feedback(ctx, opts.PRFeedback)
		if err != nil {
			return err
		}
		tasks := fb.Tasks
		branch, err := git.Branch(ctx)
		if err != nil {
			return err
		}
		if branch != fb.Branch {
			return fmt.Errorf("pull request #%d is branch %s; this is %s: check it out first", opts.PRFeedback, fb.Branch, branch)
		}
		if len(tasks) == 0 {
			if fb.Pending == 0 {
				fmt.Fprintf(opts.f.IO.Out, "pull request #%d: checks green, no comment left\n", opts.PRFeedback)
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: pull request #%d: %d checks still running after max-wait", loop.ErrLimit, opts.PRFeedback, fb.Pending)
			}
			fmt.Fprintf(opts.f.IO.ErrOut, "pull request #%d: waiting for %d checks\n", opts.PRFeedback, fb.Pending)
			if err := loop.Sleep(ctx, poll); err != nil {
				return err
			}
			continue
		}
		if round > max(cfg.MaxIterations, 1) {
			return fmt.Errorf("%w: pull request #%d still has feedback after %d rounds", loop.ErrLimit, opts.PRFeedback, round-1)
		}
		if _, err := tracker.Sync(ctx, staticSource{name: fmt.Sprintf("%s#%d", repo, opts.PRFeedback), tasks: tasks, branch: fb.Branch}, path); err != nil {
			return err
		}
		round := *opts
		round.Plan, round.PRFeedback = path, 0
		runErr := runRun(ctx, &round)
		if err := git.Push(ctx, cfg.GitHub.Remote, fb.Branch); err != nil {
			return err
		}
		if err := replyToComments(ctx, gh, dir, opts.PRFeedback, path); err != nil {
			return err
		}
		if runErr != nil {
			return runErr
		}
	}
}

// replyToComments answers each review comment whose task is done with the
// task's commit.
func replyToComments(ctx context.Context, prs tracker.PullRequests, dir string, pr int, path string) error {
	plan, err := task.Load(path)
	if err != nil {
		return err
	}
	store, err := state.Open(dir)
	if err != nil {
		return err
	}
	history, err := store.History()
	if err != nil {
		return err
	}
	for _, t := range plan.Plan().Tasks {
		if t.Status != task.StatusDone {
			continue
		}
		commits := tracker.ReceiptOf(history, t.ID).Commits
		commit := "the latest push"
		if len(commits) > 0 {
			commit = commits[len(commits)-1]
		}
		if err := prs.Answer(ctx, pr, t.ID, commit); err != nil {
			return err
		}
	}
	return nil
}

// staticSource is a fixed list of tasks as a tracker.Source.
type staticSource struct {
	name, branch string
	tasks        []task.Task
}

func (s staticSource) Name() string                               { return s.name }
func (s staticSource) Branch() string                             { return s.branch }
func (s staticSource) Tasks(context.Context) ([]task.Task, error) { return s.tasks, nil }
