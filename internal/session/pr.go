package session

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/tracker"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// prRepo is OWNER/REPO of the pull request: the github: plan's, else
// github.repo, else what the remote's URL names.
func prRepo(ctx context.Context, cfg config.Config, git *vcs.Git) (string, error) {
	if IsTrackerPlan(cfg.Tasks) {
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
func publishPR(ctx context.Context, f *Host, dir string, cfg config.Config, plan *task.Plan, store *state.Store,
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
	body, open := prBody(plan, history, st, IsTrackerPlan(cfg.Tasks))
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
func prFeedback(ctx context.Context, opts *Options) error {
	ctx, dir, cfg, err := opts.project(ctx)
	if err != nil {
		return err
	}
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
		runErr := run(ctx, &round)
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

// PullRequest pushes the run branch of the plan (the config's when plan
// is "") and opens, or updates, its one pull request.
func PullRequest(ctx context.Context, f *Host, planName string) (tracker.PullResult, error) {
	dir, err := f.ProjectDir()
	if err != nil {
		return tracker.PullResult{}, err
	}
	cfg, err := f.Config(dir)
	if err != nil {
		return tracker.PullResult{}, err
	}
	if planName != "" {
		cfg.Tasks = planName
	}
	ctx = f.withPrograms(ctx, cfg, dir)
	plan, err := OpenPlan(dir, cfg.Tasks)
	if err != nil {
		return tracker.PullResult{}, err
	}
	// The pre-push hook runs in the sandbox: it may run code the agent
	// wrote.
	sb, err := chooseSandbox(ctx, f, cfg, dir)
	if err != nil {
		return tracker.PullResult{}, err
	}
	defer sb.close()
	defer sb.closeHomes()
	store, err := state.Open(dir)
	if err != nil {
		return tracker.PullResult{}, err
	}
	var prs tracker.PullRequests // nil: the repository prRepo names
	if IsTrackerPlan(cfg.Tasks) {
		gh, err := newGitHub(ctx, f, dir, cfg, strings.TrimPrefix(cfg.Tasks, trackerPrefix), nil)
		if err != nil {
			return tracker.PullResult{}, err
		}
		// What the run could not write back to the issues, first.
		newWriteBack(ctx, gh, store, "", func(e loop.Event) {
			fmt.Fprintln(f.IO.ErrOut, "ralph: warning:", e.Message)
		}).reconcile(plan.Plan())
		prs = gh
	}
	return publishPR(ctx, f, dir, cfg, plan.Plan(), store, prs, sb.gates())
}
