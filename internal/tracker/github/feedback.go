package github

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v84/github"

	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/tracker"
)

// replyMarker starts ralph's reply to a review comment: a comment with
// such a reply is answered, and is not a task again.
const replyMarker = "<!-- ralph:reply -->"

// logTail is how much of a failing check's log a task carries.
const logTail = 4 << 10

// PullFeedback is what a pull request asks of its branch, as GitHub says
// it.
type PullFeedback struct {
	Number  int
	Branch  string
	HeadSHA string
	// Failing are the completed check runs of the head commit that did
	// not succeed; Pending counts those not completed yet.
	Failing []Check
	Pending int
	// Comments are the review comments no one has answered yet.
	Comments []ReviewComment
}

// Check is one failing check run.
type Check struct {
	ID         int64
	Name       string
	Conclusion string
	Summary    string
	// LogTail is the end of its log, where GitHub has one.
	LogTail string
	URL     string
}

// ReviewComment is one unanswered review comment.
type ReviewComment struct {
	ID   int64
	User string
	Path string
	Line int
	Body string
	URL  string
}

// Feedback is pull request n's failing checks and unanswered review
// comments as tasks (FeedbackTasks), for the tracker interface.
func (c *Client) Feedback(ctx context.Context, n int) (tracker.Feedback, error) {
	fb, err := c.PullFeedback(ctx, n)
	if err != nil {
		return tracker.Feedback{}, err
	}
	return tracker.Feedback{Branch: fb.Branch, Tasks: FeedbackTasks(fb), Pending: fb.Pending}, nil
}

// Answer replies to the review comment behind task id (comment-ID) with
// the commit that addressed it; a check's task needs no answer.
func (c *Client) Answer(ctx context.Context, n int, id, commit string) error {
	num, ok := strings.CutPrefix(id, "comment-")
	if !ok {
		return nil
	}
	cid, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return fmt.Errorf("task %q names no review comment", id)
	}
	return c.Reply(ctx, n, cid, commit)
}

// PullFeedback reads pull request n: its branch, the check runs of its head
// commit, with the tail of each failing one's log, and the review
// comments that have no reply (ralph's replies carry a marker; anyone
// else's reply also counts as an answer).
func (c *Client) PullFeedback(ctx context.Context, n int) (PullFeedback, error) {
	pr, err := c.Pull(ctx, n)
	if err != nil {
		return PullFeedback{}, err
	}
	fb := PullFeedback{Number: n, Branch: pr.GetHead().GetRef(), HeadSHA: pr.GetHead().GetSHA()}
	opts := &gh.ListCheckRunsOptions{Filter: new("latest"), ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		var res *gh.ListCheckRunsResults
		var resp *gh.Response
		if err := c.call(ctx, "reading the checks of "+short(fb.HeadSHA), func(ctx context.Context) (*gh.Response, error) {
			var err error
			res, resp, err = c.gh.Checks.ListCheckRunsForRef(ctx, c.owner, c.name, fb.HeadSHA, opts)
			return resp, err
		}); err != nil {
			return fb, err
		}
		for _, cr := range res.CheckRuns {
			switch {
			case cr.GetStatus() != "completed":
				fb.Pending++
			case cr.GetConclusion() == "success" || cr.GetConclusion() == "neutral" || cr.GetConclusion() == "skipped":
			default:
				fb.Failing = append(fb.Failing, c.failing(ctx, cr))
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	comments, err := c.reviewComments(ctx, n)
	if err != nil {
		return fb, err
	}
	answered := map[int64]bool{}
	for _, cm := range comments {
		if id := cm.GetInReplyTo(); id != 0 {
			answered[id] = true
		}
	}
	for _, cm := range comments {
		if cm.GetInReplyTo() != 0 || answered[cm.GetID()] {
			continue
		}
		fb.Comments = append(fb.Comments, ReviewComment{ID: cm.GetID(), User: cm.GetUser().GetLogin(),
			Path: cm.GetPath(), Line: cm.GetLine(), Body: cm.GetBody(), URL: cm.GetHTMLURL()})
	}
	return fb, nil
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func (c *Client) failing(ctx context.Context, cr *gh.CheckRun) Check {
	ch := Check{ID: cr.GetID(), Name: cr.GetName(), Conclusion: cr.GetConclusion(), URL: cr.GetHTMLURL()}
	out := cr.GetOutput()
	ch.Summary = strings.TrimSpace(strings.Join([]string{out.GetTitle(), out.GetSummary(), out.GetText()}, "\n"))
	// A check run of GitHub Actions is a job: its log is the job's.
	var logURL string
	if err := c.call(ctx, "finding the log of check "+ch.Name, func(ctx context.Context) (*gh.Response, error) {
		u, r, err := c.gh.Actions.GetWorkflowJobLogs(ctx, c.owner, c.name, cr.GetID(), 3)
		if u != nil {
			logURL = u.String()
		}
		return r, err
	}); err == nil && logURL != "" {
		if text, err := fetchText(ctx, &http.Client{Timeout: time.Minute, Transport: c.opts.Transport}, logURL, logTail); err == nil {
			ch.LogTail = text
		}
	}
	return ch
}

func (c *Client) reviewComments(ctx context.Context, n int) ([]*gh.PullRequestComment, error) {
	var all []*gh.PullRequestComment
	opts := &gh.PullRequestListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		var page []*gh.PullRequestComment
		var resp *gh.Response
		if err := c.call(ctx, fmt.Sprintf("reading the review comments of %s#%d", c.Repo(), n), func(ctx context.Context) (*gh.Response, error) {
			var err error
			page, resp, err = c.gh.PullRequests.ListComments(ctx, c.owner, c.name, n, opts)
			return resp, err
		}); err != nil {
			return nil, err
		}
		all = append(all, page...)
		if resp.NextPage == 0 {
			return all, nil
		}
		opts.Page = resp.NextPage
	}
}

// Reply answers review comment id on pull request n with the commit that
// addressed it, once: a reply of ralph's already there is left alone.
func (c *Client) Reply(ctx context.Context, n int, id int64, commit string) error {
	comments, err := c.reviewComments(ctx, n)
	if err != nil {
		return err
	}
	for _, cm := range comments {
		if cm.GetInReplyTo() == id && strings.HasPrefix(cm.GetBody(), replyMarker) {
			return nil
		}
	}
	body := fmt.Sprintf("%s\nAddressed in %s.", replyMarker, commit)
	return c.call(ctx, fmt.Sprintf("replying to review comment %d", id), func(ctx context.Context) (*gh.Response, error) {
		_, r, err := c.gh.PullRequests.CreateCommentInReplyTo(ctx, c.owner, c.name, n, body, id)
		return r, err
	})
}

// FeedbackTasks turns feedback into tasks: one per failing check (its id
// names the commit it failed on, so the same check failing again after a
// fix is a new task) and one per unanswered review comment.
func FeedbackTasks(fb PullFeedback) []task.Task {
	var tasks []task.Task
	for _, ch := range fb.Failing {
		desc := fmt.Sprintf("The check %q failed (%s) on commit %s of pull request #%d. Make it pass.", ch.Name, ch.Conclusion, short(fb.HeadSHA), fb.Number)
		if ch.Summary != "" {
			desc += "\n\nSummary:\n" + clip(ch.Summary, logTail)
		}
		if ch.LogTail != "" {
			desc += "\n\nEnd of its log:\n\n```\n" + strings.ReplaceAll(ch.LogTail, "```", "'''") + "\n```"
		}
		tasks = append(tasks, task.Task{ID: "check-" + slug(ch.Name) + "-" + short(fb.HeadSHA),
			Title: "Fix the failing check " + oneLine(ch.Name), Description: desc, Status: task.StatusOpen})
	}
	for _, cm := range fb.Comments {
		where := cm.Path
		if cm.Line > 0 {
			where += ":" + strconv.Itoa(cm.Line)
		}
		desc := fmt.Sprintf("Review comment by %s on %s:\n\n%s", cm.User, where, clip(cm.Body, maxDescription))
		tasks = append(tasks, task.Task{ID: "comment-" + strconv.FormatInt(cm.ID, 10),
			Title: "Address the review comment on " + where, Description: desc, Status: task.StatusOpen})
	}
	return tasks
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
	}
	return strings.Trim(b.String(), "-")
}
