package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/fakemodel"
	"github.com/ralph-loop/ralph/internal/state"
)

// TestAgents runs, for each installed CLI, full `ralph run` loops against
// the fake model server:
//
//   - tasks_done: the model calls the CLI's shell tool to create a file,
//     then says TASK_DONE; twice, one task each. Both tasks end done with
//     their files, and history has the tokens: all of them, and no more
//     than the model reported (cache reads are part of the input).
//   - rate_limit: every request gets HTTP 429. Each iteration is a limit
//     (rate_limited), never a failed attempt, and the run stops with
//     exit 3 (--max-wait 1s, or --max-iterations 2 when the CLI reports
//     Retry-After 1s and ralph waits it out).
//   - usage_limit_waits: a usage limit holds until a reset 20-80 s away;
//     ralph waits for the reset (or the CLI does), then both tasks get
//     done.
//   - hang_timeout: the model never answers; ralph's --timeout stops the
//     CLI's whole process group and nothing of it survives.
//
// Run one CLI with -run 'TestAgents/codex'.
func TestAgents(t *testing.T) {
	for _, cli := range agentCLIs() {
		t.Run(cli.name, func(t *testing.T) {
			t.Parallel()
			t.Run("tasks_done", func(t *testing.T) { testTasksDone(t, cli) })
			t.Run("rate_limit", func(t *testing.T) { testRateLimit(t, cli) })
			t.Run("usage_limit_waits", func(t *testing.T) { testUsageLimitWaits(t, cli) })
			t.Run("hang_timeout", func(t *testing.T) { testHang(t, cli) })
			if cli.name == "claude" {
				t.Run("overloaded_529", func(t *testing.T) { testOverloaded(t, cli) })
			}
		})
	}
}

func doneText(n string) string { return "Created done-" + n + ".txt. <promise>TASK_DONE</promise>" }

// twoTasks is the model's side of a run that does both tasks.
func twoTasks() []fakemodel.Turn {
	return []fakemodel.Turn{
		fakemodel.Shell("touch done-1.txt"), fakemodel.Text(doneText("1")),
		fakemodel.Shell("touch done-2.txt"), fakemodel.Text(doneText("2")),
	}
}

// Limits of one run. An iteration that hangs is stopped by --timeout;
// the deadline stops ralph itself should it hang.
const (
	iterTimeout = "100s"
	runDeadline = 4 * time.Minute
)

func testTasksDone(t *testing.T, cli agentCLI) {
	t.Helper()
	p := newProject(t, cli, twoTasks()...)
	r := p.run(runDeadline, "--max-iterations", "4", "--max-attempts", "2", "--timeout", iterTimeout)
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	p.checkBothDone()
	hist := p.history()
	if diff := cmp.Diff([]string{"task_done", "task_done"}, outcomes(hist)); diff != "" {
		t.Errorf("history outcomes (-want +got):\n%s", diff)
	}
	for _, h := range hist {
		t.Logf("iteration %d (%s): %d in, %d out, %d cache read, %d cache write tokens; $%.4f; %.1f%% of context",
			h.Iteration, h.TaskID, h.InputTokens, h.OutputTokens, h.CacheReadTokens, h.CacheWriteTokens, h.CostUSD, h.ContextUsedPercent)
		if h.InputTokens <= 0 || h.OutputTokens <= 0 {
			t.Errorf("iteration %d (%s): tokens in %d, out %d: want both recorded", h.Iteration, h.TaskID, h.InputTokens, h.OutputTokens)
		}
		if h.Agent != cli.name {
			t.Errorf("iteration %d: agent %q, want %q", h.Iteration, h.Agent, cli.name)
		}
		// Every receipt has a cost and says where it comes from: the
		// CLI's own, or the price table's estimate of its tokens.
		// (Claude Code may report $0 for a model it has no price for.)
		if h.CostSource != state.CostReported && (h.CostSource != state.CostEstimated || h.CostUSD <= 0) {
			t.Errorf("iteration %d: cost $%.6f, cost_source %q: want a reported or estimated cost", h.Iteration, h.CostUSD, h.CostSource)
		}
	}
	p.checkShellRan(2)
	p.checkTokens(hist)
}

// checkTokens checks that ralph did not record more tokens than the model
// reported: the cache reads are part of the input the server counted, not
// on top of it.
func (p *project) checkTokens(hist []state.Record) {
	p.t.Helper()
	var in, out int64
	for _, r := range p.server.Requests() {
		in += int64(r.InputTokens)
		out += int64(r.OutputTokens)
	}
	var gotIn, gotOut int64
	for _, h := range hist {
		gotIn += h.InputTokens + h.CacheReadTokens + h.CacheWriteTokens
		gotOut += h.OutputTokens
	}
	if gotIn > in || gotOut > out {
		p.t.Errorf("history has %d input tokens (cache included) and %d output tokens; the model reported only %d and %d: tokens counted twice",
			gotIn, gotOut, in, out)
	}
}

// checkBothDone checks the plan and the files of a run that did both
// tasks.
func (p *project) checkBothDone() {
	p.t.Helper()
	if diff := cmp.Diff(map[string]bool{"US-001": true, "US-002": true}, p.passes()); diff != "" {
		p.t.Errorf("prd.json passes (-want +got):\n%s", diff)
	}
	for _, f := range []string{"done-1.txt", "done-2.txt"} {
		if !p.exists(f) {
			p.t.Errorf("%s does not exist: the agent's shell tool did not run", f)
		}
	}
}

// checkShellRan checks that the model's shell calls went out n times and
// that each came back as a tool result.
func (p *project) checkShellRan(n int) {
	p.t.Helper()
	calls, results := 0, 0
	for _, r := range p.server.Requests() {
		if strings.HasPrefix(r.Answer, "shell ") && strings.Contains(r.Answer, " via ") {
			calls++
		}
		if r.ToolResult && !r.Side {
			results++
		}
	}
	if calls != n || results < n {
		p.t.Errorf("the model called the shell tool %d times and saw %d tool results; want %d of each", calls, results, n)
	}
}

func testRateLimit(t *testing.T, cli agentCLI) {
	t.Helper()
	// Without retry: each CLI's own backoff would take minutes. With
	// Retry-After 1s a CLI that reports it makes ralph wait a second and
	// try again; one that does not leaves ralph a backoff of a minute or
	// more, beyond --max-wait. Either way: limits until the iterations run
	// out or the wait is too long, exit 3, no attempt counted.
	p := newProject(t, cli, fakemodel.RateLimit(time.Second).WithoutRetry().Always())
	r := p.run(runDeadline, "--max-iterations", "2", "--timeout", iterTimeout, "--max-wait", "1s")
	if r.code != 3 {
		t.Errorf("exit %d, want 3 (a limit stopped the run)", r.code)
	}
	got := outcomes(p.history())
	if len(got) == 0 || slices.ContainsFunc(got, func(o string) bool { return o != "rate_limited" }) {
		t.Errorf("history outcomes %v, want only rate_limited", got)
	}
	if diff := cmp.Diff(map[string]bool{"US-001": false, "US-002": false}, p.passes()); diff != "" {
		t.Errorf("prd.json passes (-want +got):\n%s", diff)
	}
	if n := p.attempts("US-001"); n != 0 {
		t.Errorf("US-001 has %d attempts: a limit must not count as one", n)
	}
}

// testOverloaded: a 529 overloaded answer (without the CLI's own retries)
// is a transient error: ralph backs off and retries the same task without
// counting an attempt, and the run then does both tasks.
func testOverloaded(t *testing.T, cli agentCLI) {
	t.Helper()
	turns := append([]fakemodel.Turn{fakemodel.Overloaded().WithoutRetry()}, twoTasks()...)
	p := newProject(t, cli, turns...)
	r := p.run(runDeadline, "--max-iterations", "5", "--max-attempts", "1", "--timeout", iterTimeout)
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	if diff := cmp.Diff([]string{"transient_error", "task_done", "task_done"}, outcomes(p.history())); diff != "" {
		t.Errorf("history outcomes (-want +got):\n%s", diff)
	}
	p.checkBothDone()
}

// attempts reads a task's failed attempts from state.json.
func (p *project) attempts(id string) int {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, ".ralph", "state.json"))
	if err != nil {
		p.t.Fatalf("state.json: %v", err)
	}
	var st struct {
		Tasks map[string]struct {
			Attempts int `json:"attempts"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		p.t.Fatalf("state.json: %v", err)
	}
	return st.Tasks[id].Attempts
}

func testUsageLimitWaits(t *testing.T, cli agentCLI) {
	t.Helper()
	// CLIs say reset times to the minute ("resets 7pm", "try again at
	// 8:11 AM"): the reset is on a whole minute, at least 20 s away. The
	// limit holds until then.
	now := time.Now()
	reset := now.Truncate(time.Minute).Add(time.Minute)
	if reset.Sub(now) < 20*time.Second {
		reset = reset.Add(time.Minute)
	}
	turns := append([]fakemodel.Turn{fakemodel.UsageLimit(reset).WithoutRetry()}, twoTasks()...)
	p := newProject(t, cli, turns...)
	r := p.run(runDeadline+2*time.Minute, "--max-iterations", "6", "--max-attempts", "2", "--timeout", iterTimeout, "--max-wait", "3m")
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	p.checkBothDone()
	hist := p.history()
	limited := 0
	for limited < len(hist) && hist[limited].Outcome == "rate_limited" {
		limited++
	}
	if diff := cmp.Diff([]string{"task_done", "task_done"}, outcomes(hist[limited:])); diff != "" {
		t.Fatalf("history outcomes %v: want rate_limited iterations, then two task_done (-want +got of the rest):\n%s", outcomes(hist), diff)
	}
	switch {
	case limited == 0:
		// The CLI waited out the limit itself (OpenCode honours
		// Retry-After): ralph never saw it.
		t.Logf("%s waited for the reset itself", cli.name)
		if hist[0].EndedAt.Before(reset) {
			t.Errorf("the first task was done at %s, before the limit reset at %s", hist[0].EndedAt.Format(time.TimeOnly), reset.Format(time.TimeOnly))
		}
	case hist[limited].StartedAt.Before(reset):
		t.Errorf("the retry started at %s, before the limit reset at %s", hist[limited].StartedAt.Format(time.TimeOnly), reset.Format(time.TimeOnly))
	}
	if n := p.attempts("US-001"); n != 0 {
		t.Errorf("US-001 has %d attempts: a limit must not count as one", n)
	}
}

func testHang(t *testing.T, cli agentCLI) {
	t.Helper()
	p := newProject(t, cli, fakemodel.Hang().Always())
	r := p.run(runDeadline, "--max-iterations", "1", "--timeout", "20s")
	if r.code != 3 {
		t.Errorf("exit %d, want 3 (iteration limit with tasks open)", r.code)
	}
	if got := outcomes(p.history()); !slices.Equal(got, []string{"timeout"}) && !slices.Equal(got, []string{"idle_timeout"}) {
		t.Errorf("history outcomes %v, want [timeout]", got)
	}
	// The CLI died with its connection: the server saw the client go.
	deadline := time.Now().Add(5 * time.Second)
	for {
		gone := slices.ContainsFunc(p.server.Requests(), func(r fakemodel.Request) bool {
			return strings.HasSuffix(r.Answer, "(client gave up)")
		})
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no hung request ended with its client gone")
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}
