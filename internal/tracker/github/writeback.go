package github

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v84/github"

	"github.com/ralph-loop/ralph/internal/tracker"
)

// statusMarker starts ralph's one comment on an issue. It is how the
// comment is found again, after a retry or a crash, and edited rather
// than posted twice.
const statusMarker = "<!-- ralph:status -->"

// Started labels the issue ralph:in-progress and says in ralph's comment
// which run works on it.
func (c *Client) Started(ctx context.Context, u tracker.Update) error {
	n, err := issueNumber(u.Task.ID)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("%s\n🔄 ralph run `%s` is working on this issue.\n", statusMarker, u.RunID)
	if err := c.setLabels(ctx, n, []string{LabelInProgress}, []string{LabelDone, LabelFailed}); err != nil {
		return err
	}
	return c.upsertComment(ctx, n, body)
}

// Done labels the issue ralph:done and puts the commits, the receipt and
// the evidence in ralph's comment. The issue stays open: the pull
// request closes it (Closes #N).
func (c *Client) Done(ctx context.Context, u tracker.Update) error {
	n, err := issueNumber(u.Task.ID)
	if err != nil {
		return err
	}
	if err := c.upsertComment(ctx, n, doneComment(u)); err != nil {
		return err
	}
	return c.setLabels(ctx, n, []string{LabelDone}, []string{LabelInProgress, LabelFailed})
}

// Failed labels the issue ralph:failed and puts the last error in
// ralph's comment.
func (c *Client) Failed(ctx context.Context, u tracker.Update) error {
	n, err := issueNumber(u.Task.ID)
	if err != nil {
		return err
	}
	msg := u.Error
	if msg == "" {
		msg = u.Receipt.LastError
	}
	body := fmt.Sprintf("%s\n❌ ralph gave up on this issue in run `%s` after %s.\n\nLast error:\n\n```\n%s\n```\n",
		statusMarker, u.RunID, u.Receipt.Line(), strings.ReplaceAll(clip(msg, 4000), "```", "'''"))
	if err := c.upsertComment(ctx, n, body); err != nil {
		return err
	}
	return c.setLabels(ctx, n, []string{LabelFailed}, []string{LabelInProgress, LabelDone})
}

// Stopped takes the ralph:in-progress label off an issue the run left
// unfinished, and says so in ralph's comment; the next run takes it up
// again.
func (c *Client) Stopped(ctx context.Context, u tracker.Update) error {
	n, err := issueNumber(u.Task.ID)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("%s\n⏸ ralph run `%s` stopped (%s) before this issue was done; the next run takes it up again.\n",
		statusMarker, u.RunID, u.Status)
	if err := c.upsertComment(ctx, n, body); err != nil {
		return err
	}
	return c.setLabels(ctx, n, nil, []string{LabelInProgress})
}

func doneComment(u tracker.Update) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n✅ Done by ralph run `%s`.\n\n", statusMarker, u.RunID)
	r := u.Receipt
	if len(r.Commits) > 0 {
		short := make([]string, len(r.Commits))
		for i, c := range r.Commits {
			short[i] = tracker.ShortCommit(c)
		}
		fmt.Fprintf(&b, "- Commits: %s\n", strings.Join(short, ", "))
	}
	fmt.Fprintf(&b, "- Receipt: %s\n", r.Line())
	if r.Gates != "" {
		fmt.Fprintf(&b, "- Gates: %s\n", r.Gates)
	}
	if r.Guard != "" {
		fmt.Fprintf(&b, "- Guard: %s\n", r.Guard)
	}
	if r.Review != "" {
		fmt.Fprintf(&b, "- Review: %s\n", r.Review)
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// issueNumber reads a task id #N.
func issueNumber(id string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "#"))
	if err != nil || !strings.HasPrefix(id, "#") || n <= 0 {
		return 0, fmt.Errorf("task %q is not a GitHub issue (#N)", id)
	}
	return n, nil
}

// upsertComment makes ralph's comment on issue n say body: it edits the
// comment that carries the marker, posts one when there is none, and
// sends nothing when it already says so.
func (c *Client) upsertComment(ctx context.Context, n int, body string) error {
	what := fmt.Sprintf("commenting on %s#%d", c.Repo(), n)
	mine, err := c.findComment(ctx, n, what)
	if err != nil {
		return err
	}
	switch {
	case mine == nil:
		return c.call(ctx, what, func(ctx context.Context) (*gh.Response, error) {
			_, r, err := c.gh.Issues.CreateComment(ctx, c.owner, c.name, n, &gh.IssueComment{Body: new(body)})
			return r, err
		})
	case mine.GetBody() == body:
		return nil
	}
	return c.call(ctx, what, func(ctx context.Context) (*gh.Response, error) {
		_, r, err := c.gh.Issues.EditComment(ctx, c.owner, c.name, mine.GetID(), &gh.IssueComment{Body: new(body)})
		return r, err
	})
}

func (c *Client) findComment(ctx context.Context, n int, what string) (*gh.IssueComment, error) {
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		var page []*gh.IssueComment
		var resp *gh.Response
		if err := c.call(ctx, what, func(ctx context.Context) (*gh.Response, error) {
			var err error
			page, resp, err = c.gh.Issues.ListComments(ctx, c.owner, c.name, n, opts)
			return resp, err
		}); err != nil {
			return nil, err
		}
		for _, cm := range page {
			if strings.HasPrefix(cm.GetBody(), statusMarker) {
				return cm, nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}

// setLabels adds the labels of add the issue lacks and removes those of
// remove it has, and does nothing else: a rerun does not churn them.
func (c *Client) setLabels(ctx context.Context, n int, add, remove []string) error {
	what := fmt.Sprintf("labelling %s#%d", c.Repo(), n)
	c.mu.Lock()
	have, known := c.labels[n]
	c.mu.Unlock()
	if !known {
		if err := c.call(ctx, what, func(ctx context.Context) (*gh.Response, error) {
			is, r, err := c.gh.Issues.Get(ctx, c.owner, c.name, n)
			if err == nil {
				c.rememberLabels(n, is.Labels)
			}
			return r, err
		}); err != nil {
			return err
		}
		c.mu.Lock()
		have = c.labels[n]
		c.mu.Unlock()
	}
	var missing []string
	for _, l := range add {
		if !slices.Contains(have, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		if err := c.call(ctx, what, func(ctx context.Context) (*gh.Response, error) {
			ls, r, err := c.gh.Issues.AddLabelsToIssue(ctx, c.owner, c.name, n, missing)
			if err == nil {
				c.rememberLabels(n, ls)
			}
			return r, err
		}); err != nil {
			return err
		}
	}
	for _, l := range remove {
		if !slices.Contains(have, l) {
			continue
		}
		if err := c.call(ctx, what, func(ctx context.Context) (*gh.Response, error) {
			return c.gh.Issues.RemoveLabelForIssue(ctx, c.owner, c.name, n, l)
		}); err != nil {
			return err
		}
		c.mu.Lock()
		c.labels[n] = slices.DeleteFunc(slices.Clone(c.labels[n]), func(s string) bool { return s == l })
		c.mu.Unlock()
	}
	return nil
}
