// Package github is the GitHub tracker: open issues of a repository as a
// plan (github:OWNER/REPO), write-back to them, one pull request per run
// branch, and that pull request's failing checks and review comments as
// feedback. It talks to the REST API through google/go-github; GitHub
// Enterprise through a base URL.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v84/github"

	"github.com/ralph-loop/ralph/internal/tracker"
)

// Query selects the issues that are the plan: open ones with all of it.
type Query struct {
	Label     string
	Milestone string // a title, a number, "*" or "none"
	Assignee  string
}

// Options configure a Client.
type Options struct {
	// Repo is OWNER/REPO.
	Repo  string
	Token string
	// BaseURL is the API's address: empty for github.com, or a GitHub
	// Enterprise server's (https://HOST/api/v3/).
	BaseURL string
	Query   Query
	// CacheDir keeps the ETags of earlier answers across runs; empty keeps
	// them for the Client's life only.
	CacheDir string
	// MaxWait bounds one wait for a rate limit to reset; 0 is no bound.
	MaxWait time.Duration
	// Now and Sleep are the clock; nil is the real one.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Waiting, when set, is told of each rate-limit wait before it starts.
	Waiting func(until time.Time, why string)
	// Transport, when set, carries the requests (tests).
	Transport http.RoundTripper
}

// Client is a connection to one repository.
type Client struct {
	opts         Options
	owner, name  string
	gh           *gh.Client
	mu           sync.Mutex
	labels       map[int][]string // each issue's labels as last seen
	milestoneNum string           // the query's milestone, resolved
	// waitedUntil is the end of the last rate-limit wait, by opts.Now.
	waitedUntil time.Time
}

// The tracker interfaces the GitHub client implements.
var (
	_ tracker.Tracker      = (*Client)(nil)
	_ tracker.PullRequests = (*Client)(nil)
)

// ParseRepo splits OWNER/REPO, with or without a github: prefix.
func ParseRepo(s string) (owner, name string, err error) {
	s = strings.TrimPrefix(s, "github:")
	owner, name, ok := strings.Cut(s, "/")
	if !ok || owner == "" || name == "" || strings.ContainsAny(name, "/ ") || strings.ContainsAny(owner, " ") {
		return "", "", fmt.Errorf("%q: want github:OWNER/REPO", s)
	}
	return owner, name, nil
}

// New returns a client of opts.Repo. It sends nothing.
func New(opts Options) (*Client, error) {
	owner, name, err := ParseRepo(opts.Repo)
	if err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	base := opts.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := &http.Client{Transport: &etagCache{base: base, dir: opts.CacheDir}, Timeout: 2 * time.Minute}
	c := gh.NewClient(hc)
	if opts.Token != "" {
		c = c.WithAuthToken(opts.Token)
	}
	if opts.BaseURL != "" {
		base := strings.TrimSuffix(opts.BaseURL, "/") + "/"
		if c, err = c.WithEnterpriseURLs(base, base); err != nil {
			return nil, fmt.Errorf("github base URL: %w", err)
		}
	}
	return &Client{opts: opts, owner: owner, name: name, gh: c, labels: map[int][]string{}}, nil
}

// OnWait sets who hears of rate-limit waits (Options.Waiting), for a
// client made before its listener was.
func (c *Client) OnWait(f func(until time.Time, why string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts.Waiting = f
}

// Name is the plan as the user writes it.
func (c *Client) Name() string { return "github:" + c.owner + "/" + c.name }

// Repo is OWNER/REPO.
func (c *Client) Repo() string { return c.owner + "/" + c.name }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// maxRateWaits bounds the waits for one request: GitHub that keeps
// answering "limited" after its own reset is not waited on forever.
const maxRateWaits = 5

// call runs one API request, waiting out GitHub's rate limits: the
// primary one until its reset, a secondary one for its Retry-After (a
// minute when it gives none), never sooner, and never longer than
// MaxWait. Errors are made readable and never carry the token.
func (c *Client) call(ctx context.Context, what string, fn func(ctx context.Context) (*gh.Response, error)) error {
	c.mu.Lock()
	waited := !c.waitedUntil.IsZero() && !c.opts.Now().Before(c.waitedUntil)
	c.mu.Unlock()
	if waited {
		// go-github refuses requests before the reset it saw, by the real
		// clock; we waited by ours (the same one, outside tests).
		ctx = context.WithValue(ctx, gh.BypassRateLimitCheck, true)
	}
	for waits := 0; ; waits++ {
		_, err := fn(ctx)
		if err == nil {
			return nil
		}
		until, why, limited := c.rateLimited(err)
		if !limited || ctx.Err() != nil {
			return c.explain(what, err)
		}
		if waits >= maxRateWaits {
			return c.redact(fmt.Errorf("%s: %s, still after %d waits", what, why, waits))
		}
		d := max(until.Sub(c.opts.Now()), 0) + time.Second
		if c.opts.MaxWait > 0 && d > c.opts.MaxWait {
			return c.redact(fmt.Errorf("%s: %s until %s, longer than max-wait %s", what, why,
				until.UTC().Format(time.RFC3339), c.opts.MaxWait))
		}
		c.mu.Lock()
		waiting := c.opts.Waiting
		c.mu.Unlock()
		if waiting != nil {
			waiting(until, "GitHub "+why)
		}
		if err := c.opts.Sleep(ctx, d); err != nil {
			return err
		}
		c.mu.Lock()
		c.waitedUntil = c.opts.Now()
		c.mu.Unlock()
		ctx = context.WithValue(ctx, gh.BypassRateLimitCheck, true)
	}
}

// rateLimited reports whether err is a rate limit and when it lifts.
func (c *Client) rateLimited(err error) (until time.Time, why string, ok bool) {
	var primary *gh.RateLimitError
	if errors.As(err, &primary) {
		return primary.Rate.Reset.Time, "rate limit", true
	}
	var secondary *gh.AbuseRateLimitError
	if errors.As(err, &secondary) {
		d := time.Minute
		if secondary.RetryAfter != nil && *secondary.RetryAfter >= 0 {
			d = *secondary.RetryAfter
		}
		return c.opts.Now().Add(d), "secondary rate limit", true
	}
	return time.Time{}, "", false
}

// explain turns an API error into one that says what to do. Missing
// repositories and refused tokens are Permanent: a snapshot does not
// stand in for them.
func (c *Client) explain(what string, err error) error {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		status := er.Response.StatusCode
		msg := er.Message
		switch {
		case status == http.StatusUnauthorized:
			return c.permanent(fmt.Errorf("%s: GitHub refused the token (401 %s): set GITHUB_TOKEN or GH_TOKEN to a valid token, or log in with gh auth login", what, msg))
		case status == http.StatusNotFound && strings.Contains(what, "repository"):
			return c.permanent(fmt.Errorf("%s: repository %s not found, or the token cannot see it (404)", what, c.Repo()))
		case status == http.StatusNotFound:
			return c.permanent(fmt.Errorf("%s: not found (404 %s)", what, msg))
		case status == http.StatusForbidden:
			return c.permanent(fmt.Errorf("%s: the token lacks the permission (403 %s)%s", what, msg, scopes(er.Response)))
		case status == http.StatusUnprocessableEntity:
			return c.redact(fmt.Errorf("%s: GitHub rejected it (422 %s%s)", what, msg, fieldErrors(er)))
		}
		return c.redact(fmt.Errorf("%s: GitHub answered %d %s", what, status, msg))
	}
	return c.redact(fmt.Errorf("%s: %w", what, err))
}

func fieldErrors(er *gh.ErrorResponse) string {
	var parts []string
	for _, e := range er.Errors {
		parts = append(parts, strings.TrimSpace(e.Resource+" "+e.Field+" "+e.Code+" "+e.Message))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

// scopes says which OAuth scopes the request needed and the token has,
// where GitHub tells.
func scopes(resp *http.Response) string {
	want, have := resp.Header.Get("X-Accepted-OAuth-Scopes"), resp.Header.Get("X-OAuth-Scopes")
	if want == "" {
		return ""
	}
	return fmt.Sprintf("; it needs the scope %s and has %q", want, have)
}

func (c *Client) permanent(err error) error {
	return &tracker.Permanent{Err: c.redact(err)}
}

// redact removes the token from an error's text. go-github's errors do
// not carry it; this holds whatever a transport or proxy puts there.
func (c *Client) redact(err error) error {
	if err == nil || c.opts.Token == "" || !strings.Contains(err.Error(), c.opts.Token) {
		return err
	}
	return &redacted{msg: strings.ReplaceAll(err.Error(), c.opts.Token, "[token]"), err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// Access is what the token may do in the repository.
type Access struct {
	// Push: the token may write (labels, comments, pull requests).
	Push bool
	// Scopes are a classic token's OAuth scopes, as GitHub lists them;
	// empty for fine-grained tokens, which have none.
	Scopes string
	// DefaultBranch is the repository's.
	DefaultBranch string
	// Unknown: GitHub did not say (an app's token); Push is assumed.
	Unknown bool
}

// Access reads the repository to learn what the token may do there. It
// changes nothing.
func (c *Client) Access(ctx context.Context) (Access, error) {
	var a Access
	err := c.call(ctx, "reading repository "+c.Repo(), func(ctx context.Context) (*gh.Response, error) {
		repo, r, err := c.gh.Repositories.Get(ctx, c.owner, c.name)
		if err != nil {
			return r, err
		}
		// The permissions are the user's; a classic token's scopes can
		// narrow them (a fine-grained token has no scopes header).
		p := repo.GetPermissions()
		a.Push = p.GetPush() || p.GetAdmin() || p.GetMaintain()
		if p == nil {
			// An app's token (GitHub Actions' GITHUB_TOKEN) gets no
			// permissions here: its first write says whether it may.
			a.Push, a.Unknown = true, true
		}
		a.DefaultBranch = repo.GetDefaultBranch()
		if h, ok := r.Header["X-Oauth-Scopes"]; ok {
			a.Scopes = strings.Join(h, ", ")
			var scopes []string
			for s := range strings.SplitSeq(a.Scopes, ",") {
				scopes = append(scopes, strings.TrimSpace(s))
			}
			a.Push = a.Push && (slices.Contains(scopes, "repo") || !repo.GetPrivate() && slices.Contains(scopes, "public_repo"))
		}
		return r, nil
	})
	return a, err
}

// CheckWrite returns an error when the token may not write to the
// repository, before anything is written: a run that cannot write back
// stops before it starts, not halfway.
func (c *Client) CheckWrite(ctx context.Context) error {
	a, err := c.Access(ctx)
	if err != nil {
		return err
	}
	if !a.Push {
		scopes := ""
		if a.Scopes != "" {
			scopes = fmt.Sprintf(" (its scopes: %s)", a.Scopes)
		}
		return c.permanent(fmt.Errorf("the token cannot write to %s%s: labels, comments and pull requests need the repo scope, or a fine-grained token with issues and pull requests write access", c.Repo(), scopes))
	}
	return nil
}
