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
)

// TestAgents runs, for each installed CLI, full `ralph run` loops against
// the fake model server:
//
//   - tasks_done: the model calls the CLI's shell tool to create a file,
//     then says TASK_DONE; twice, one task each. Both tasks end done with
//     their files, and history has the tokens.
//   - rate_limit: every request gets HTTP 429. The iteration is a limit
//     (rate_limited), not a failed attempt, and --max-wait 1s stops the
//     run with exit 3.
//   - usage_limit_waits: the first request hits a usage limit that resets
//     in under a minute and a half; ralph waits for the reset, then both
//     tasks get done.
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
		if h.InputTokens <= 0 || h.OutputTokens <= 0 {
			t.Errorf("iteration %d (%s): tokens in %d, out %d: want both recorded", h.Iteration, h.TaskID, h.InputTokens, h.OutputTokens)
		}
		if h.Agent != cli.name {
			t.Errorf("iteration %d: agent %q, want %q", h.Iteration, h.Agent, cli.name)
		}
	}
	p.checkShellRan(2)
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
	// Without retry: each CLI's own backoff would take minutes.
	p := newProject(t, cli, fakemodel.RateLimit(time.Second).WithoutRetry().Always())
	r := p.run(runDeadline, "--max-iterations", "4", "--timeout", iterTimeout, "--max-wait", "1s")
	if r.code != 3 {
		t.Errorf("exit %d, want 3 (a limit stopped the run)", r.code)
	}
	if !strings.Contains(r.stderr+r.stdout, "max-wait") {
		t.Errorf("ralph did not say the wait exceeded --max-wait")
	}
	hist := p.history()
	if diff := cmp.Diff([]string{"rate_limited"}, outcomes(hist)); diff != "" {
		t.Errorf("history outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"US-001": false, "US-002": false}, p.passes()); diff != "" {
		t.Errorf("prd.json passes (-want +got):\n%s", diff)
	}
	if n := p.attempts("US-001"); n != 0 {
		t.Errorf("US-001 has %d attempts: a limit must not count as one", n)
	}
	if p.server.Pending() != 1 {
		t.Error("the 429 turn was used up")
	}
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
	// CLIs say reset times to the minute ("resets 7pm", "try again at
	// 8:11 AM"): the reset is on a whole minute, at least 20 s away.
	now := time.Now()
	reset := now.Truncate(time.Minute).Add(time.Minute)
	if reset.Sub(now) < 20*time.Second {
		reset = reset.Add(time.Minute)
	}
	turns := append([]fakemodel.Turn{fakemodel.UsageLimit(reset).WithoutRetry()}, twoTasks()...)
	p := newProject(t, cli, turns...)
	r := p.run(runDeadline+2*time.Minute, "--max-iterations", "5", "--max-attempts", "2", "--timeout", iterTimeout, "--max-wait", "3m")
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	p.checkBothDone()
	hist := p.history()
	if diff := cmp.Diff([]string{"rate_limited", "task_done", "task_done"}, outcomes(hist)); diff != "" {
		t.Fatalf("history outcomes (-want +got):\n%s", diff)
	}
	if next := hist[1].StartedAt; next.Before(reset) {
		t.Errorf("the retry started at %s, before the limit reset at %s", next.Format(time.TimeOnly), reset.Format(time.TimeOnly))
	}
	if n := p.attempts("US-001"); n != 0 {
		t.Errorf("US-001 has %d attempts: a limit must not count as one", n)
	}
}

func testHang(t *testing.T, cli agentCLI) {
	p := newProject(t, cli, fakemodel.Hang().Always())
	r := p.run(runDeadline, "--max-iterations", "1", "--timeout", "25s")
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
