package github

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v84/github"

	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/tracker"
)

// PullRequest is the tracker's: what a run's pull request should say.
type PullRequest = tracker.PullRequest

// PullResult is the tracker's: the pull request after OpenOrUpdate.
type PullResult = tracker.PullResult

// OpenOrUpdate makes the one open pull request from pr.Head say pr: it
// finds it by its head branch and edits its title and body when they
// differ, or opens it (a draft when pr.Draft) when there is none. Run
// again, it changes nothing.
func (c *Client) OpenOrUpdate(ctx context.Context, pr PullRequest) (PullResult, error) {
	existing, err := c.FindPull(ctx, pr.Head)
	if err != nil {
		return PullResult{}, err
	}
	what := "updating the pull request of " + pr.Head
	if existing != nil {
		res := PullResult{Number: existing.GetNumber(), URL: existing.GetHTMLURL(), Draft: existing.GetDraft()}
		if existing.GetTitle() != pr.Title || existing.GetBody() != pr.Body {
			err := c.call(ctx, what, func(ctx context.Context) (*gh.Response, error) {
				_, r, err := c.gh.PullRequests.Edit(ctx, c.owner, c.name, existing.GetNumber(),
					&gh.PullRequest{Title: new(pr.Title), Body: new(pr.Body)})
				return r, err
			})
			if err != nil {
				return res, err
			}
		}
		if existing.GetDraft() != pr.Draft {
			if err := c.setDraft(ctx, existing.GetNodeID(), pr.Draft); err != nil {
				return res, err
			}
			res.Draft = pr.Draft
		}
		return res, nil
	}
	base := pr.Base
	if base == "" {
		if base, err = c.DefaultBranch(ctx); err != nil {
			return PullResult{}, err
		}
	}
	var created *gh.PullRequest
	err = c.call(ctx, "opening a pull request from "+pr.Head, func(ctx context.Context) (*gh.Response, error) {
		var r *gh.Response
		var err error
		created, r, err = c.gh.PullRequests.Create(ctx, c.owner, c.name, &gh.NewPullRequest{
			Title: new(pr.Title), Head: new(pr.Head), Base: &base, Body: new(pr.Body), Draft: new(pr.Draft)})
		return r, err
	})
	if err != nil {
		return PullResult{}, err
	}
	return PullResult{Number: created.GetNumber(), URL: created.GetHTMLURL(), Created: true, Draft: created.GetDraft()}, nil
}

// FindPull returns the open pull request from branch head, or nil.
func (c *Client) FindPull(ctx context.Context, head string) (*gh.PullRequest, error) {
	var found *gh.PullRequest
	err := c.call(ctx, "looking for the pull request of "+head, func(ctx context.Context) (*gh.Response, error) {
		prs, r, err := c.gh.PullRequests.List(ctx, c.owner, c.name, &gh.PullRequestListOptions{
			State: "open", Head: c.owner + ":" + head, ListOptions: gh.ListOptions{PerPage: 10}})
		for _, p := range prs {
			if p.GetHead().GetRef() == head {
				found = p
				break
			}
		}
		return r, err
	})
	return found, err
}

// Pull returns pull request n.
func (c *Client) Pull(ctx context.Context, n int) (*gh.PullRequest, error) {
	var pr *gh.PullRequest
	err := c.call(ctx, fmt.Sprintf("reading pull request %s#%d", c.Repo(), n), func(ctx context.Context) (*gh.Response, error) {
		var r *gh.Response
		var err error
		pr, r, err = c.gh.PullRequests.Get(ctx, c.owner, c.name, n)
		return r, err
	})
	return pr, err
}

// DefaultBranch is the repository's default branch.
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	var branch string
	err := c.call(ctx, "reading repository "+c.Repo(), func(ctx context.Context) (*gh.Response, error) {
		repo, r, err := c.gh.Repositories.Get(ctx, c.owner, c.name)
		branch = repo.GetDefaultBranch()
		return r, err
	})
	if branch == "" && err == nil {
		branch = "main"
	}
	return branch, err
}

// setDraft turns a pull request into a draft or marks it ready for
// review. The REST API cannot; GraphQL's two mutations can.
func (c *Client) setDraft(ctx context.Context, nodeID string, draft bool) error {
	mutation := "markPullRequestReadyForReview"
	if draft {
		mutation = "convertPullRequestToDraft"
	}
	q := map[string]any{
		"query":     fmt.Sprintf("mutation($id: ID!) { %s(input: {pullRequestId: $id}) { pullRequest { isDraft } } }", mutation),
		"variables": map[string]any{"id": nodeID},
	}
	return c.call(ctx, "changing the pull request's draft state", func(ctx context.Context) (*gh.Response, error) {
		req, err := c.gh.NewRequest(http.MethodPost, c.graphqlURL(), q)
		if err != nil {
			return nil, err
		}
		var out struct {
			Errors []struct{ Message string } `json:"errors"`
		}
		r, err := c.gh.Do(ctx, req, &out)
		if err == nil && len(out.Errors) > 0 {
			err = fmt.Errorf("GraphQL %s: %s", mutation, out.Errors[0].Message)
		}
		return r, err
	})
}

// graphqlURL is api.github.com/graphql, or an Enterprise server's
// /api/graphql next to its /api/v3/.
func (c *Client) graphqlURL() string {
	base := c.gh.BaseURL.String()
	if strings.HasSuffix(base, "/api/v3/") {
		return strings.TrimSuffix(base, "v3/") + "graphql"
	}
	return base + "graphql"
}

// fetchText reads a URL without the token: a check's log lives on another
// host, behind a signed address, which must not see the credential.
func fetchText(ctx context.Context, client *http.Client, url string, limit int64) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s", resp.Status)
	}
	// Keep the tail, in bounded memory (a job's log runs to megabytes):
	// a failing step prints its error last.
	tail := proc.NewTail(int(limit))
	if _, err := io.Copy(tail, resp.Body); err != nil {
		return "", err
	}
	return tail.String(), nil
}
