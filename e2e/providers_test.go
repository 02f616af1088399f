package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/fakemodel"
	"github.com/ralph-loop/ralph/internal/state"
)

// TestProviders runs the real Claude Code and Codex CLIs against the
// fake model server through ralph's routes (docs/providers.md):
//
//   - quota_spent: claude hits a usage limit that resets in five hours;
//     with fallback = ["codex:fake-model"] the run switches to codex at
//     once, from the task that was cut off, and codex finishes the plan.
//   - reset_passes: claude's limit resets a minute away, while codex
//     works the first task (its gate waits past the reset); the second
//     task is claude's again.
//   - escalation_and_receipt: escalate = ["fake-model", "fake-model-big"],
//     escalate-after = 2: after two gate failures, the third attempt asks
//     the bigger model; then ralph report's figures are the history's,
//     added up by hand.
//   - task_model: a task's own model reaches the CLI (the model the
//     server was asked for), and a model outside allowed-models stops
//     the run before any agent call, naming the plan's line.
func TestProviders(t *testing.T) {
	t.Run("quota_spent", testQuotaSpent)
	t.Run("reset_passes", testResetPasses)
	t.Run("task_model", testTaskModel)
	t.Run("escalation_and_receipt", testEscalationAndReceipt)
}

// cliNamed is the harness's setup of the named CLI.
func cliNamed(t *testing.T, name string) agentCLI {
	t.Helper()
	for _, c := range agentCLIs() {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no CLI %s in the harness", name)
	return agentCLI{}
}

// withFallback makes p, a claude project, one with codex set up too and
// the keys of top (fallback, gates): ralph.toml's top-level keys first,
// then codex's table and the prices.
func withFallback(t *testing.T, p *project, top string) {
	t.Helper()
	codex := cliNamed(t, "codex")
	old := p.toml.String()
	head, prices, _ := strings.Cut(old, "\n[prices.")
	p.toml.Reset()
	codex.setup(p)
	p.toml.WriteString("\n[prices." + prices)
	p.write("ralph.toml", top+head+p.toml.String())
	p.git("commit", "-q", "-am", "codex stands in")
}

func testQuotaSpent(t *testing.T) {
	claude := cliNamed(t, "claude")
	// The fake model is one server for both providers: the limit is
	// claude's one request, not the server's for five hours.
	turns := append([]fakemodel.Turn{fakemodel.UsageLimit(time.Now().Add(5 * time.Hour)).WithoutRetry().Times(1)}, twoTasks()...)
	p := newProject(t, claude, turns...)
	withFallback(t, p, "fallback = [\"codex:fake-model\"]\n")
	r := p.run(runDeadline, "--max-iterations", "6", "--max-attempts", "2", "--timeout", iterTimeout, "--max-wait", "1m")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0: codex finishes the plan", r.code)
	}
	p.checkBothDone()
	if diff := cmp.Diff([]string{"US-001 claude rate_limited", "US-001 codex task_done", "US-002 codex task_done"},
		ranBy(p.history())); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if n := p.attempts("US-001"); n != 0 {
		t.Errorf("US-001 has %d attempts: a usage limit is no attempt", n)
	}
	if !strings.Contains(r.stdout+r.stderr, "codex") {
		t.Errorf("the run never said it switched to codex:\n%s", r.stdout)
	}
	if apis := p.apis(); !slices.Contains(apis, "anthropic") || !slices.Contains(apis, "responses") {
		t.Errorf("the fake model was asked through %v: want claude's API, then codex's", apis)
	}
}

func testResetPasses(t *testing.T) {
	claude := cliNamed(t, "claude")
	// Claude Code says a reset to the minute: on a whole minute, at
	// least 20 s away.
	now := time.Now()
	reset := now.Truncate(time.Minute).Add(time.Minute)
	if reset.Sub(now) < 20*time.Second {
		reset = reset.Add(time.Minute)
	}
	// The fake model is one server for both providers: the limit is
	// claude's one request, not the server's until the reset.
	turns := append([]fakemodel.Turn{fakemodel.UsageLimit(reset).WithoutRetry().Times(1)}, twoTasks()...)
	p := newProject(t, claude, turns...)
	// The gate waits, once codex made done-1.txt, until claude's limit has
	// reset: the reset passes during codex's task.
	gate := fmt.Sprintf(`if [ -e done-1.txt ] && [ ! -e done-2.txt ]; then while [ "$(date +%%s)" -lt %d ]; do sleep 1; done; fi`, reset.Unix()+2)
	withFallback(t, p, fmt.Sprintf("fallback = [\"codex:fake-model\"]\ngates.commands = [%q]\n", gate))
	r := p.run(runDeadline+2*time.Minute, "--max-iterations", "6", "--max-attempts", "2", "--timeout", iterTimeout, "--max-wait", "3m")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0", r.code)
	}
	p.checkBothDone()
	if diff := cmp.Diff([]string{"US-001 claude rate_limited", "US-001 codex task_done", "US-002 claude task_done"},
		ranBy(p.history())); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if h := p.history(); len(h) == 3 && h[2].StartedAt.Before(reset) {
		t.Errorf("claude's task started at %s, before its limit reset at %s", h[2].StartedAt.Format(time.TimeOnly), reset.Format(time.TimeOnly))
	}
}

func testTaskModel(t *testing.T) {
	claude := cliNamed(t, "claude")
	p := newProject(t, claude, twoTasks()...)
	// US-002 names its own model; the run's is Claude Code's default.
	p.write("prd.json", strings.Replace(prdJSON, `"id": "US-002",`, `"id": "US-002", "model": "fake-model-big",`, 1))
	p.git("commit", "-q", "-am", "US-002 on a bigger model")
	r := p.run(runDeadline, "--max-iterations", "4", "--max-attempts", "2", "--timeout", iterTimeout)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0", r.code)
	}
	hist := p.history()
	if len(hist) != 2 || hist[1].Model != "fake-model-big" || hist[0].Model == "fake-model-big" {
		t.Fatalf("history models %v: want US-002 alone on fake-model-big", models(hist))
	}
	asked := false
	for _, req := range p.server.Requests() {
		asked = asked || req.Model == "fake-model-big"
	}
	if !asked {
		t.Errorf("no request to the fake model asked for fake-model-big: the task's model did not reach the CLI")
	}

	// A model the config does not allow: the run stops before any agent
	// call, naming the plan's line.
	q := newProject(t, claude, twoTasks()...)
	q.write("prd.json", strings.Replace(prdJSON, `"id": "US-002",`, "\"id\": \"US-002\",\n      \"model\": \"opus\",", 1))
	q.write("ralph.toml", "allowed-models = [\"fake-model\"]\n"+q.toml.String())
	q.git("commit", "-q", "-am", "US-002 on opus")
	r = q.run(runDeadline, "--max-iterations", "4", "--timeout", iterTimeout)
	if r.code != 1 || !strings.Contains(r.stderr, "prd.json:") || !strings.Contains(r.stderr, `"opus"`) {
		t.Errorf("exit %d, stderr %q: want 1 and the plan's line naming opus", r.code, r.stderr)
	}
	if n := len(q.server.Requests()); n != 0 {
		t.Errorf("%d requests reached the model: a refused model stops the run before any agent call", n)
	}
}

// ranBy is each history line's task, agent and outcome.
func ranBy(hist []state.Record) []string {
	out := make([]string, 0, len(hist))
	for _, h := range hist {
		out = append(out, h.TaskID+" "+h.Agent+" "+string(h.Outcome))
	}
	return out
}

func models(hist []state.Record) []string {
	out := make([]string, 0, len(hist))
	for _, h := range hist {
		out = append(out, h.TaskID+":"+h.Model)
	}
	return out
}

// apis are the APIs the fake model was asked through, in order, once
// each.
func (p *project) apis() []string {
	var out []string
	for _, r := range p.server.Requests() {
		if !r.Side && (len(out) == 0 || out[len(out)-1] != r.API) {
			out = append(out, r.API)
		}
	}
	return out
}

func testEscalationAndReceipt(t *testing.T) {
	claude := cliNamed(t, "claude")
	// Three attempts at US-001 (two turns each), then US-002.
	var turns []fakemodel.Turn
	for i := range 3 {
		turns = append(turns, fakemodel.Shell(fmt.Sprintf("echo %d > done-1.txt", i+1)), fakemodel.Text(doneText("1")))
	}
	turns = append(turns, fakemodel.Shell("touch done-2.txt"), fakemodel.Text(doneText("2")))
	p := newProject(t, claude, turns...)
	// The gate fails the first two attempts (done-1.txt says 1, then 2)
	// and passes the third's (3).
	gate := `! grep -qs '^[12]$' done-1.txt`
	p.write("ralph.toml", fmt.Sprintf("model = \"fake-model\"\nescalate = [\"fake-model\", \"fake-model-big\"]\nescalate-after = 2\ngates.commands = [%q]\n", gate)+p.toml.String())
	p.git("commit", "-q", "-am", "escalate")
	r := p.run(runDeadline+time.Minute, "--max-iterations", "6", "--max-attempts", "3", "--timeout", iterTimeout)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0", r.code)
	}
	hist := p.history()
	if diff := cmp.Diff([]string{"US-001:fake-model", "US-001:fake-model", "US-001:fake-model-big", "US-002:fake-model"}, models(hist)); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
	var big int
	for _, req := range p.server.Requests() {
		if req.Model == "fake-model-big" {
			big++
		}
	}
	if big == 0 {
		t.Errorf("no request asked for fake-model-big: the third attempt did not climb the ladder")
	}

	// The receipt, against the history added up by hand.
	rep := p.ralph(t.Context(), "report", "--json")
	if rep.code != 0 {
		t.Fatalf("ralph report --json: exit %d: %s", rep.code, rep.stderr)
	}
	var got struct {
		Rows []struct {
			TaskID     string   `json:"task_id"`
			Iterations int      `json:"iterations"`
			Attempts   int      `json:"attempts"`
			Models     []string `json:"models"`
			Verified   *bool    `json:"verified"`
		} `json:"rows"`
		Totals struct {
			Tasks, TasksVerified, Iterations int
			InputTokens                      int64    `json:"input_tokens"`
			OutputTokens                     int64    `json:"output_tokens"`
			USD                              *float64 `json:"cost_usd"`
			PerVerifiedTask                  *float64 `json:"cost_per_verified_task_usd"`
		} `json:"totals"`
	}
	if err := json.Unmarshal([]byte(rep.stdout), &got); err != nil {
		t.Fatalf("ralph report --json: %v\n%s", err, rep.stdout)
	}
	var in, out int64
	var usd float64
	for _, h := range hist {
		in, out, usd = in+h.InputTokens, out+h.OutputTokens, usd+h.CostUSD
	}
	if got.Totals.InputTokens != in || got.Totals.OutputTokens != out || got.Totals.USD == nil || !near(*got.Totals.USD, usd) {
		t.Errorf("totals: %d in, %d out, $%v; the history adds up to %d, %d, $%.6f", got.Totals.InputTokens, got.Totals.OutputTokens, got.Totals.USD, in, out, usd)
	}
	if got.Totals.PerVerifiedTask == nil || !near(*got.Totals.PerVerifiedTask, usd/2) {
		t.Errorf("cost per verified task %v, want $%.6f (two tasks verified)", got.Totals.PerVerifiedTask, usd/2)
	}
	if len(got.Rows) != 2 || got.Rows[0].Iterations != 3 || !slices.Equal(got.Rows[0].Models, []string{"fake-model", "fake-model-big"}) ||
		got.Rows[0].Verified == nil || !*got.Rows[0].Verified {
		t.Errorf("US-001's row %+v: want 3 iterations on fake-model and fake-model-big, verified", got.Rows)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
