// Package fakegithub is a fake GitHub REST API on 127.0.0.1, a test
// fixture like the fake model server: repositories with issues, labels,
// comments, milestones, pull requests, check runs and their logs, and
// review comments; ETags with 304 answers; primary rate-limit headers and
// a secondary limit (403 with Retry-After) that tests switch on. Its
// clock is injectable, so rate-limit resets need no sleeping.
//
// It serves the paths of a GitHub Enterprise server (/api/v3/..., and
// /api/graphql for the draft mutations), which is how clients are pointed
// at it: the base URL is URL() + "/api/v3/".
package fakegithub

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	srv *http.Server
	ln  net.Listener

	mu     sync.Mutex
	now    func() time.Time
	tokens map[string][]string // token → scopes
	repos  map[string]*Repo
	nextID int64
	// Rate limit: Limit requests per window; Remaining left until Reset.
	limit, remaining int
	reset            time.Time
	window           time.Duration
	secondary        int // next requests answered with a secondary limit
	secondaryWrites  int // next writes answered so
	retryAfter       time.Duration
	requests         []Request
	down             bool // connections are dropped: the network is gone
	// HeadSHA, when set, gives a branch's head commit for pull requests.
	headSHA func(branch string) string
	// defaultChecks are the check runs of a commit nobody set any for.
	defaultChecks func(sha string) []CheckRun
}

// Request is one request the fake answered.
type Request struct {
	Method, Path string
	Status       int
	// Authorization is whether the request carried a token.
	Authorization bool
}

// Repo is one repository's state.
type Repo struct {
	Owner, Name   string
	DefaultBranch string
	Issues        []*Issue
	Milestones    []Milestone
	Comments      []*Comment // issue comments
	Pulls         []*Pull
	Review        []*ReviewComment
	Checks        map[string][]CheckRun // by commit
	Logs          map[int64]string      // check run (job) id → log
}

// Issue is an issue.
type Issue struct {
	Number    int      `json:"number"`
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	State     string   `json:"state"`
	Labels    []string `json:"-"`
	Milestone int      `json:"-"`
	Assignee  string   `json:"-"`
}

// Milestone is a milestone.
type Milestone struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
}

// Comment is an issue comment.
type Comment struct {
	ID    int64
	Issue int
	Body  string
	User  string
}

// Pull is a pull request.
type Pull struct {
	Number      int
	NodeID      string
	Title, Body string
	Head, Base  string
	Draft       bool
	State       string
}

// ReviewComment is a review comment on a pull request.
type ReviewComment struct {
	ID        int64
	Pull      int
	InReplyTo int64
	User      string
	Path      string
	Line      int
	Body      string
}

// CheckRun is a check run on a commit.
type CheckRun struct {
	ID         int64
	Name       string
	Status     string // queued, in_progress, completed
	Conclusion string // success, failure, ...
	Summary    string
	Log        string
	// PendingReads is how many reads see the run in_progress before it
	// completes as Status and Conclusion say.
	PendingReads int
}

// Options configure a new Server.
type Options struct {
	// Tokens maps each accepted token to its scopes; a request with
	// another token gets 401.
	Tokens map[string][]string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// RateLimit is the requests per window (default 5000) and Window its
	// length (default an hour).
	RateLimit int
	Window    time.Duration
	// HeadSHA gives a branch's head commit for pull requests (a test reads
	// its bare remote); nil leaves it empty.
	HeadSHA func(branch string) string
	// DefaultChecks are the check runs of a commit nobody set any for.
	DefaultChecks func(sha string) []CheckRun
}

// Start starts a fake on 127.0.0.1; Close stops it.
func Start(opts Options) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RateLimit == 0 {
		opts.RateLimit = 5000
	}
	if opts.Window == 0 {
		opts.Window = time.Hour
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, now: opts.Now, tokens: opts.Tokens, repos: map[string]*Repo{}, nextID: 1000,
		limit: opts.RateLimit, remaining: opts.RateLimit, window: opts.Window, reset: opts.Now().Add(opts.Window),
		headSHA: opts.HeadSHA, defaultChecks: opts.DefaultChecks}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the server's address, http://127.0.0.1:PORT.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// APIURL is the base URL clients use: URL() + "/api/v3/".
func (s *Server) APIURL() string { return s.URL() + "/api/v3/" }

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// AddRepo creates a repository and returns it; change it under Lock.
func (s *Server) AddRepo(owner, name string) *Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &Repo{Owner: owner, Name: name, DefaultBranch: "main", Checks: map[string][]CheckRun{}, Logs: map[int64]string{}}
	s.repos[owner+"/"+name] = r
	return r
}

// Do runs f with the server's state locked, for a test to read or change
// it.
func (s *Server) Do(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// AddIssue adds an open issue and returns its number.
func (s *Server) AddIssue(r *Repo, title, body string, labels ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.number(r)
	r.Issues = append(r.Issues, &Issue{Number: n, Title: title, Body: body, State: "open", Labels: labels})
	return n
}

// number is the next issue or pull request number of r.
func (s *Server) number(r *Repo) int {
	n := 1
	for _, is := range r.Issues {
		n = max(n, is.Number+1)
	}
	for _, p := range r.Pulls {
		n = max(n, p.Number+1)
	}
	return n
}

// SetChecks sets the check runs of commit sha; each gets an id, and its
// Log is served as the job's log.
func (s *Server) SetChecks(r *Repo, sha string, runs ...CheckRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range runs {
		s.nextID++
		runs[i].ID = s.nextID
		r.Logs[runs[i].ID] = runs[i].Log
	}
	r.Checks[sha] = runs
}

// AddReviewComment adds a review comment to pull request pull.
func (s *Server) AddReviewComment(r *Repo, pull int, user, path string, line int, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	r.Review = append(r.Review, &ReviewComment{ID: s.nextID, Pull: pull, User: user, Path: path, Line: line, Body: body})
	return s.nextID
}

// SecondaryLimit answers the next n requests with a secondary rate limit
// (403, Retry-After: after).
func (s *Server) SecondaryLimit(n int, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secondary, s.retryAfter = n, after
}

// SecondaryLimitWrites answers the next n writes (not GET) with a
// secondary rate limit (403, Retry-After: after), as GitHub does to
// clients that create content too fast.
func (s *Server) SecondaryLimitWrites(n int, after time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secondaryWrites, s.retryAfter = n, after
}

// ExhaustRateLimit leaves remaining requests in the current window.
func (s *Server) ExhaustRateLimit(remaining int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remaining = remaining
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Writes counts the requests that changed something (not GET).
func (s *Server) Writes() int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method != http.MethodGet && r.Status < 300 {
			n++
		}
	}
	return n
}

// response is what a handler answers.
type response struct {
	status int
	body   any
	header http.Header
}

// SetDown drops every connection while down is true, as a network that
// went away does.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	status := s.serveLocked(w, req)
	s.requests = append(s.requests, Request{Method: req.Method, Path: req.URL.Path, Status: status,
		Authorization: req.Header.Get("Authorization") != ""})
}

func (s *Server) serveLocked(w http.ResponseWriter, req *http.Request) int {
	if id, ok := strings.CutPrefix(req.URL.Path, "/logs/"); ok {
		// The signed log address: no token wanted (or sent).
		for _, r := range s.repos {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				if l, ok := r.Logs[n]; ok {
					w.Header().Set("Content-Type", "text/plain")
					_, _ = w.Write([]byte(l))
					return 200
				}
			}
		}
		http.NotFound(w, req)
		return 404
	}
	now := s.now()
	if !now.Before(s.reset) {
		s.remaining, s.reset = s.limit, now.Add(s.window)
	}
	h := w.Header()
	setRate := func() {
		h.Set("X-RateLimit-Limit", strconv.Itoa(s.limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(s.remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(s.reset.Unix(), 10))
		h.Set("X-RateLimit-Resource", "core")
	}
	token := strings.TrimPrefix(strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "), "token ")
	scopes, known := s.tokens[token]
	if !known {
		setRate()
		return writeJSON(w, req, 401, map[string]string{"message": "Bad credentials"})
	}
	h.Set("X-OAuth-Scopes", strings.Join(scopes, ", "))
	if s.secondary > 0 || s.secondaryWrites > 0 && req.Method != http.MethodGet {
		if s.secondary > 0 {
			s.secondary--
		} else {
			s.secondaryWrites--
		}
		setRate()
		h.Set("Retry-After", strconv.Itoa(int(s.retryAfter/time.Second)))
		return writeJSON(w, req, 403, map[string]string{"message": "You have exceeded a secondary rate limit.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"})
	}
	if s.remaining <= 0 {
		setRate()
		return writeJSON(w, req, 403, map[string]string{"message": "API rate limit exceeded"})
	}
	resp := s.route(req, scopes)
	s.remaining--
	setRate()
	maps.Copy(h, resp.header)
	if resp.status == http.StatusFound || resp.status == http.StatusNoContent {
		w.WriteHeader(resp.status)
		return resp.status
	}
	data, err := json.Marshal(resp.body)
	if err != nil {
		return writeJSON(w, req, 500, map[string]string{"message": err.Error()})
	}
	if req.Method == http.MethodGet && resp.status == 200 {
		sum := sha256.Sum256(data)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		h.Set("ETag", etag)
		if req.Header.Get("If-None-Match") == etag {
			// Refund: this answer is free, as on GitHub.
			s.remaining++
			setRate()
			w.WriteHeader(http.StatusNotModified)
			return http.StatusNotModified
		}
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(resp.status)
	_, _ = w.Write(data)
	return resp.status
}

func writeJSON(w http.ResponseWriter, _ *http.Request, status int, v any) int {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(data)
	return status
}

func errorResp(status int, msg string) response {
	return response{status: status, body: map[string]string{"message": msg}}
}

func okResp(v any) response { return response{status: 200, body: v} }

// Counts says how many of each thing the repository has, for tests that
// check a rerun duplicated nothing.
func (r *Repo) Counts() string {
	return fmt.Sprintf("issues=%d comments=%d pulls=%d review=%d", len(r.Issues), len(r.Comments), len(r.Pulls), len(r.Review))
}
