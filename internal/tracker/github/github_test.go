package github_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/fakegithub"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/tracker"
	"github.com/ralph-loop/ralph/internal/tracker/github"
)

const token = "ghp_secret_test_token_1234567890"

// clock is the fake's and the client's time; Sleep moves it on.
type clock struct {
	mu    sync.Mutex
	t     time.Time
	slept []time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept = append(c.slept, d)
	return nil
}

type fixture struct {
	srv   *fakegithub.Server
	repo  *fakegithub.Repo
	clock *clock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := &clock{t: time.Now()}
	srv, err := fakegithub.Start(fakegithub.Options{
		Tokens: map[string][]string{token: {"repo"}, "ghp_readonly": {"read:org"}},
		Now:    clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &fixture{srv: srv, repo: srv.AddRepo("acme", "app"), clock: clk}
}

func (f *fixture) client(t *testing.T, mod ...func(*github.Options)) *github.Client {
	t.Helper()
	opts := github.Options{Repo: "acme/app", Token: token, BaseURL: f.srv.APIURL(), Query: github.Query{Label: "ralph"},
		CacheDir: t.TempDir(), Now: f.clock.Now, Sleep: f.clock.Sleep}
	for _, m := range mod {
		m(&opts)
	}
	c, err := github.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIssuesBecomeTasks(t *testing.T) {
	f := newFixture(t)
	body := "Make login work.\n\n## Acceptance criteria\n- the form posts\n- errors show\n\n## Notes\n- not a criterion\n\n" +
		"- [ ] a task-list item\n\n```\n- [ ] in a fence: an example\nDepends on #99\n```\nDepends on #1, #2 and #7\n"
	f.srv.AddIssue(f.repo, "Set up", "Blocked by #3", "ralph", "priority:low")
	f.srv.AddIssue(f.repo, "Not ours", "", "bug")
	f.srv.AddIssue(f.repo, "  Login\n page ", body, "ralph", "priority:high", "ralph:done")
	c := f.client(t)
	tasks, err := c.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []task.Task{
		{ID: "#1", Title: "Set up", Description: "Blocked by #3\n\nhttps://github.example/acme/app/issues/1",
			Priority: 4, DependsOn: []string{"#3"}, Status: task.StatusOpen},
		{ID: "#3", Title: "Login page", Description: strings.TrimSpace(body) + "\n\nhttps://github.example/acme/app/issues/3",
			Priority: 2, DependsOn: []string{"#1", "#2", "#7"}, Status: task.StatusDone,
			Criteria: []string{"the form posts", "errors show", "a task-list item"}},
	}
	if diff := cmp.Diff(want, tasks); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
}

func TestConditionalRequests(t *testing.T) {
	f := newFixture(t)
	f.srv.AddIssue(f.repo, "One", "", "ralph")
	c := f.client(t)
	for range 2 {
		if _, err := c.Tasks(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// A new client on the same cache directory: the ETags outlive a run.
	dir := t.TempDir()
	for range 2 {
		c := f.client(t, func(o *github.Options) { o.CacheDir = dir })
		if _, err := c.Tasks(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var notModified int
	for _, r := range f.srv.Requests() {
		if r.Status == http.StatusNotModified {
			notModified++
		}
	}
	// The second read of the repository and of the issues, twice.
	if notModified != 4 {
		t.Errorf("%d answers were 304, want 4: %+v", notModified, f.srv.Requests())
	}
}

func TestWriteBackIsIdempotent(t *testing.T) {
	f := newFixture(t)
	n := f.srv.AddIssue(f.repo, "One", "", "ralph")
	ctx := t.Context()
	c := f.client(t)
	tasks, err := c.Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u := tracker.Update{Task: tasks[0], RunID: "run-1"}
	for range 2 {
		if err := c.Started(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	u.Receipt = tracker.Receipt{Iterations: 2, Duration: 90 * time.Second, Tokens: 12345, CostUSD: 0.42,
		Commits: []string{"0123456789abcdef"}, Gates: "go test ./... ok 1.2s"}
	if err := c.Done(ctx, u); err != nil {
		t.Fatal(err)
	}
	writes := f.srv.Writes()
	// A crash and a rerun: a new client (no memory of labels) does it again.
	if err := f.client(t).Done(ctx, u); err != nil {
		t.Fatal(err)
	}
	if got := f.srv.Writes(); got != writes {
		t.Errorf("the repeated Done wrote %d times", got-writes)
	}
	f.srv.Do(func() {
		if len(f.repo.Comments) != 1 {
			t.Fatalf("%d comments, want 1", len(f.repo.Comments))
		}
		body := f.repo.Comments[0].Body
		for _, want := range []string{"run-1", "0123456789ab", "2 iterations, 1m30s, 12.3k tokens, $0.42", "go test ./... ok 1.2s"} {
			if !strings.Contains(body, want) {
				t.Errorf("comment lacks %q:\n%s", want, body)
			}
		}
		is := f.repo.Issues[n-1]
		if want := []string{"ralph", "ralph:done"}; !slices.Equal(is.Labels, want) {
			t.Errorf("labels %v, want %v", is.Labels, want)
		}
	})
	if err := c.Failed(ctx, tracker.Update{Task: tasks[0], RunID: "run-2", Error: "tests fail"}); err != nil {
		t.Fatal(err)
	}
	f.srv.Do(func() {
		if len(f.repo.Comments) != 1 || !strings.Contains(f.repo.Comments[0].Body, "tests fail") {
			t.Errorf("comments after Failed: %+v", f.repo.Comments)
		}
		if want := []string{"ralph", "ralph:failed"}; !slices.Equal(f.repo.Issues[n-1].Labels, want) {
			t.Errorf("labels %v, want %v", f.repo.Issues[n-1].Labels, want)
		}
	})
}

func TestRateLimitsAreWaitedOut(t *testing.T) {
	f := newFixture(t)
	f.srv.AddIssue(f.repo, "One", "", "ralph")
	var waits []string
	c := f.client(t, func(o *github.Options) {
		o.Waiting = func(until time.Time, why string) { waits = append(waits, why) }
	})
	f.srv.SecondaryLimit(1, 30*time.Second)
	if _, err := c.Tasks(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.srv.ExhaustRateLimit(0)
	if _, err := c.Tasks(t.Context()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"GitHub secondary rate limit", "GitHub rate limit"}; !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	f.clock.mu.Lock()
	slept := f.clock.slept
	f.clock.mu.Unlock()
	if len(slept) != 2 || slept[0] < 30*time.Second || slept[1] < 30*time.Minute {
		t.Errorf("slept %v: want Retry-After, then until the hourly reset", slept)
	}
	// Never hammered: one refused request per limit.
	var refused int
	for _, r := range f.srv.Requests() {
		if r.Status == http.StatusForbidden {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d requests refused, want 2", refused)
	}
}

func TestRateLimitBeyondMaxWait(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, func(o *github.Options) { o.MaxWait = time.Minute })
	f.srv.ExhaustRateLimit(0)
	_, err := c.Tasks(t.Context())
	if err == nil || !strings.Contains(err.Error(), "longer than max-wait") {
		t.Fatalf("err = %v, want a wait beyond max-wait", err)
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	_, err := f.client(t, func(o *github.Options) { o.Repo = "acme/nope" }).Tasks(ctx)
	if err == nil || !strings.Contains(err.Error(), "repository acme/nope not found") || !tracker.IsPermanent(err) {
		t.Errorf("missing repository: %v", err)
	}
	_, err = f.client(t, func(o *github.Options) { o.Token = "ghp_wrong_token_abcdef" }).Tasks(ctx)
	if err == nil || !strings.Contains(err.Error(), "refused the token") || strings.Contains(err.Error(), "ghp_wrong") {
		t.Errorf("bad token: %v", err)
	}
	n := f.srv.AddIssue(f.repo, "One", "", "ralph")
	ro := f.client(t, func(o *github.Options) { o.Token = "ghp_readonly" })
	tasks, err := ro.Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = ro.Started(ctx, tracker.Update{Task: tasks[0], RunID: "r"})
	if err == nil || !strings.Contains(err.Error(), "needs the scope repo") {
		t.Errorf("token without scope: %v", err)
	}
	f.srv.Do(func() {
		if len(f.repo.Comments) != 0 || len(f.repo.Issues[n-1].Labels) != 1 {
			t.Errorf("a refused write changed the issue: %+v %v", f.repo.Comments, f.repo.Issues[n-1].Labels)
		}
	})
	if _, err := github.New(github.Options{Repo: "acme"}); err == nil {
		t.Error("a repository without an owner was accepted")
	}
}

func TestHugeAndOddBodies(t *testing.T) {
	f := newFixture(t)
	huge := strings.Repeat("é log line\n", 100_000) // ~1.2 MB (the CLI script has 5 MB)
	odd := "<details><summary>x</summary>\n\n- [ ] hidden?\n</details>\n\n~~~\nDepends on #5\n~~~\n| a | b |\n|---|---|\n\x00\u202e"
	f.srv.AddIssue(f.repo, "Huge", huge, "ralph")
	f.srv.AddIssue(f.repo, "Odd", odd, "ralph")
	tasks, err := f.client(t).Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d := tasks[0].Description; len(d) > 40<<10 || !strings.Contains(d, "read the rest at") {
		t.Errorf("huge body: description of %d bytes", len(d))
	}
	if len(tasks[1].DependsOn) != 0 || !slices.Equal(tasks[1].Criteria, []string{"hidden?"}) {
		t.Errorf("odd body: deps %v criteria %v", tasks[1].DependsOn, tasks[1].Criteria)
	}
}

func TestSnapshotKeepsWorkOffline(t *testing.T) {
	f := newFixture(t)
	f.srv.AddIssue(f.repo, "One", "", "ralph")
	f.srv.AddIssue(f.repo, "Two", "Depends on #1", "ralph")
	ctx := t.Context()
	path := t.TempDir() + "/github.json"
	c := f.client(t)
	if warn, err := tracker.Sync(ctx, c, path); err != nil || warn != "" {
		t.Fatal(warn, err)
	}
	file, err := task.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := file.SetStatus("#1", task.StatusDone); err != nil {
		t.Fatal(err)
	}
	// The network goes away: the snapshot stands, with the work done.
	_ = f.srv.Close()
	warn, err := tracker.Sync(ctx, f.client(t), path)
	if err != nil || !strings.Contains(warn, "working from the snapshot") {
		t.Fatalf("offline sync: %q %v", warn, err)
	}
	p, err := task.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Plan().Tasks; got[0].Status != task.StatusDone || !slices.Equal(got[1].DependsOn, []string{"#1"}) {
		t.Errorf("snapshot tasks %+v", got)
	}
}

func TestSnapshotRefusesACycle(t *testing.T) {
	f := newFixture(t)
	f.srv.AddIssue(f.repo, "One", "Depends on #2", "ralph")
	f.srv.AddIssue(f.repo, "Two", "Blocked by #1", "ralph")
	path := t.TempDir() + "/github.json"
	_, err := tracker.Sync(t.Context(), f.client(t), path)
	if err == nil || !strings.Contains(err.Error(), "#1") || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("err = %v, want a cycle naming the issues", err)
	}
	if _, statErr := task.Load(path); statErr == nil {
		t.Error("an invalid snapshot was written")
	}
}

func TestPullRequestOpenedOnceAndFeedback(t *testing.T) {
	clk := &clock{t: time.Now()}
	srv, err := fakegithub.Start(fakegithub.Options{Tokens: map[string][]string{token: {"repo"}}, Now: clk.Now,
		HeadSHA: func(string) string { return "abc1234def" }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	repo := srv.AddRepo("acme", "app")
	f := &fixture{srv: srv, repo: repo, clock: clk}
	ctx := t.Context()
	c := f.client(t)
	pr := github.PullRequest{Head: "ralph/run", Title: "ralph: 2 tasks", Body: "Closes #1", Draft: true}
	res, err := c.OpenOrUpdate(ctx, pr)
	if err != nil || !res.Created || !res.Draft {
		t.Fatalf("open: %+v %v", res, err)
	}
	pr.Body, pr.Draft = "Closes #1\nCloses #2", false
	for range 2 {
		again, err := c.OpenOrUpdate(ctx, pr)
		if err != nil || again.Created || again.Number != res.Number {
			t.Fatalf("update: %+v %v", again, err)
		}
	}
	srv.Do(func() {
		if len(repo.Pulls) != 1 || repo.Pulls[0].Draft || !slices.Equal(repo.Pulls[0].ClosesIssues(), []int{1, 2}) {
			t.Errorf("pulls: %+v", repo.Pulls[0])
		}
	})
	srv.SetChecks(repo, "abc1234def", fakegithub.CheckRun{Name: "ci / test", Status: "completed", Conclusion: "failure",
		Log: strings.Repeat("noise\n", 2000) + "--- FAIL: TestLogin\n"},
		fakegithub.CheckRun{Name: "lint", Status: "completed", Conclusion: "success"})
	id := srv.AddReviewComment(repo, res.Number, "alice", "login.go", 12, "Handle the empty password.")
	fb, err := c.PullFeedback(ctx, res.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.Failing) != 1 || !strings.HasSuffix(fb.Failing[0].LogTail, "--- FAIL: TestLogin\n") || len(fb.Failing[0].LogTail) > 5000 {
		t.Errorf("failing checks: %+v", fb.Failing)
	}
	tasks := github.FeedbackTasks(fb)
	if len(tasks) != 2 || tasks[0].ID != "check-ci-test-abc1234" || tasks[1].ID != "comment-"+itoa(id) {
		t.Errorf("feedback tasks: %+v", tasks)
	}
	for range 2 {
		if err := c.Reply(ctx, res.Number, id, "0123abcd"); err != nil {
			t.Fatal(err)
		}
	}
	fb, err = c.PullFeedback(ctx, res.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.Comments) != 0 {
		t.Errorf("an answered comment is still feedback: %+v", fb.Comments)
	}
	srv.Do(func() {
		if len(repo.Review) != 2 {
			t.Errorf("%d review comments, want the comment and one reply", len(repo.Review))
		}
	})
	for _, r := range srv.Requests() {
		if strings.HasPrefix(r.Path, "/logs/") && r.Authorization {
			t.Error("the token was sent to the log address")
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestErrorsNeverCarryTheToken(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, func(o *github.Options) { o.BaseURL = "http://127.0.0.1:1/" + token + "/api/v3/" })
	_, err := c.Tasks(t.Context())
	if err == nil {
		t.Fatal("no error from an unreachable server")
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("the error carries the token: %v", err)
	}
	if errors.Unwrap(err) == nil {
		t.Errorf("the error does not wrap its cause: %v", err)
	}
}

func TestQueryByMilestoneAndAssignee(t *testing.T) {
	f := newFixture(t)
	for _, is := range []struct {
		title, assignee string
		milestone       int
	}{{"in v1, mine", "ann", 1}, {"in v1, bob's", "bob", 1}, {"in v2, mine", "ann", 2}, {"none", "", 0}} {
		n := f.srv.AddIssue(f.repo, is.title, "", "ralph")
		f.srv.Do(func() {
			f.repo.Issues[n-1].Assignee, f.repo.Issues[n-1].Milestone = is.assignee, is.milestone
		})
	}
	f.srv.Do(func() {
		f.repo.Milestones = []fakegithub.Milestone{{Number: 1, Title: "v1.0"}, {Number: 2, Title: "v2.0"}}
	})
	titles := func(q github.Query) []string {
		t.Helper()
		tasks, err := f.client(t, func(o *github.Options) { o.Query = q }).Tasks(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tk := range tasks {
			out = append(out, tk.Title)
		}
		return out
	}
	if got, want := titles(github.Query{Label: "ralph", Milestone: "V1.0", Assignee: "ann"}), []string{"in v1, mine"}; !slices.Equal(got, want) {
		t.Errorf("milestone by title and assignee: %v, want %v", got, want)
	}
	if got, want := titles(github.Query{Milestone: "2"}), []string{"in v2, mine"}; !slices.Equal(got, want) {
		t.Errorf("milestone by number: %v, want %v", got, want)
	}
	if got := titles(github.Query{}); len(got) != 4 {
		t.Errorf("no query: %v, want every open issue", got)
	}
	_, err := f.client(t, func(o *github.Options) { o.Query = github.Query{Milestone: "v9"} }).Tasks(t.Context())
	if err == nil || !strings.Contains(err.Error(), `milestone "v9": no open milestone of acme/app has that title`) {
		t.Errorf("unknown milestone: %v", err)
	}
}

// An agent:* and a model:* label name the task's own agent and model,
// which the snapshot keeps; two of one kind, or a name of two words,
// stop the sync with an error naming the issue and the labels, and no
// snapshot is written.
func TestAgentAndModelLabels(t *testing.T) {
	f := newFixture(t)
	f.srv.AddIssue(f.repo, "One", "", "ralph", "agent:codex", "Model:gpt-5.1-codex")
	f.srv.AddIssue(f.repo, "Two", "", "ralph", "model:opus")
	f.srv.AddIssue(f.repo, "Three", "", "ralph", "agent-of-change")
	tasks, err := f.client(t).Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	for _, tk := range tasks {
		got[tk.ID] = [2]string{tk.Agent, tk.Model}
	}
	want := map[string][2]string{"#1": {"codex", "gpt-5.1-codex"}, "#2": {"", "opus"}, "#3": {"", ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agents and models (-want +got):\n%s", diff)
	}
	path := t.TempDir() + "/github.json"
	if _, err := tracker.Sync(t.Context(), f.client(t), path); err != nil {
		t.Fatal(err)
	}
	snap, err := task.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if tk, _ := snap.Plan().Task("#1"); tk.Agent != "codex" || tk.Model != "gpt-5.1-codex" || tk.AgentLine == 0 {
		t.Errorf("snapshot task #1: %+v", tk)
	}

	f.srv.AddIssue(f.repo, "Four", "", "ralph", "model:opus", "model:sonnet", "agent:codex")
	f.srv.AddIssue(f.repo, "Five", "", "ralph", "agent:claude code")
	_, err = f.client(t).Tasks(t.Context())
	if err == nil || !tracker.IsPermanent(err) {
		t.Fatalf("err = %v, want a permanent error", err)
	}
	for _, want := range []string{
		`#4: labels "model:opus", "model:sonnet": an issue names one model; remove all but one`,
		`#5: label "agent:claude code": want one word after "agent:", such as agent:codex`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	fresh := t.TempDir() + "/github.json"
	if _, err := tracker.Sync(t.Context(), f.client(t), fresh); err == nil {
		t.Error("Sync took issues with two model labels")
	}
	if _, err := task.Load(fresh); err == nil {
		t.Error("a snapshot was written")
	}
	// A snapshot already there does not stand in for labels to mend.
	if warn, err := tracker.Sync(t.Context(), f.client(t), path); err == nil {
		t.Errorf("Sync kept the snapshot (%q): the labels need mending", warn)
	}
}
