package route

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/task"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// got is the part of a choice the tables compare.
type got struct {
	Agent, Model string
	Rung         int
	StandIn      bool
	Blocked      bool
}

func pick(c Choice) got {
	return got{Agent: c.Agent, Model: c.Model, Rung: c.Rung, StandIn: c.StandIn(), Blocked: c.Blocked}
}

// TestStart: a task starts on, strongest first, the command line's
// --agent/--model, the task's own, the run's config; a bare model belongs
// to the task's agent, else the run's, and never goes to another agent.
func TestStart(t *testing.T) {
	t.Parallel()
	run := Config{Agent: "claude", Model: "sonnet"}
	for _, tc := range []struct {
		name string
		cfg  Config
		task task.Task
		want got
	}{
		{"the run's agent and model", run, task.Task{}, got{Agent: "claude", Model: "sonnet"}},
		{"the task's model, on the run's agent", run, task.Task{Model: "opus"}, got{Agent: "claude", Model: "opus"}},
		{"the task's agent: the run's model is not carried to it", run, task.Task{Agent: "codex"}, got{Agent: "codex"}},
		{"the task's agent and model", run, task.Task{Agent: "codex", Model: "gpt-5"}, got{Agent: "codex", Model: "gpt-5"}},
		{"the task naming the run's agent keeps the run's model", run, task.Task{Agent: "claude"}, got{Agent: "claude", Model: "sonnet"}},
		{"--agent over the task's agent; the task's model stays with its agent",
			Config{Agent: "claude", Model: "sonnet", CLIAgent: "gemini"}, task.Task{Agent: "codex", Model: "gpt-5"}, got{Agent: "gemini"}},
		{"--agent naming the run's agent keeps the run's model",
			Config{Agent: "claude", Model: "sonnet", CLIAgent: "claude"}, task.Task{Agent: "codex"}, got{Agent: "claude", Model: "sonnet"}},
		{"--agent: a bare task model belongs to the run's agent, not --agent's",
			Config{Agent: "claude", CLIAgent: "gemini"}, task.Task{Model: "opus"}, got{Agent: "gemini"}},
		{"--model over the task's model", Config{Agent: "claude", Model: "sonnet", CLIModel: "haiku"}, task.Task{Model: "opus"},
			got{Agent: "claude", Model: "haiku"}},
		{"--agent and --model over everything", Config{Agent: "claude", Model: "sonnet", CLIAgent: "codex", CLIModel: "o3"},
			task.Task{Agent: "gemini", Model: "pro"}, got{Agent: "codex", Model: "o3"}},
		{"no model anywhere: the agent's default", Config{Agent: "claude"}, task.Task{}, got{Agent: "claude"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, pick(New(tc.cfg).For(tc.task, 0, t0))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestEscalate: the ladder starts after the task's starting model when it
// is a rung, else at the first rung; each escalate-after failed attempts
// climb one rung; the top rung is where it stays; agent:model rungs move
// the task to that agent.
func TestEscalate(t *testing.T) {
	t.Parallel()
	ladder := Config{Agent: "claude", Escalate: []string{"sonnet", "opus"}, EscalateAfter: 1}
	for _, tc := range []struct {
		name   string
		cfg    Config
		task   task.Task
		failed int
		want   got
	}{
		{"no failure: the starting model", ladder, task.Task{}, 0, got{Agent: "claude"}},
		{"not a rung: one failure climbs to the first rung", ladder, task.Task{}, 1, got{Agent: "claude", Model: "sonnet", Rung: 1}},
		{"not a rung: two failures, the second", ladder, task.Task{}, 2, got{Agent: "claude", Model: "opus", Rung: 2}},
		{"the top rung holds", ladder, task.Task{}, 7, got{Agent: "claude", Model: "opus", Rung: 2}},
		{"a rung: the ladder is the rungs after it", ladder, task.Task{Model: "sonnet"}, 1, got{Agent: "claude", Model: "opus", Rung: 1}},
		{"the top rung: no ladder left", ladder, task.Task{Model: "opus"}, 3, got{Agent: "claude", Model: "opus"}},
		{"the run's model is a rung", Config{Agent: "claude", Model: "sonnet", Escalate: []string{"sonnet", "opus"}}, task.Task{}, 1,
			got{Agent: "claude", Model: "opus", Rung: 1}},
		{"escalate-after 2: one failure stays", Config{Agent: "claude", Escalate: []string{"opus"}, EscalateAfter: 2}, task.Task{}, 1,
			got{Agent: "claude"}},
		{"escalate-after 2: two failures climb", Config{Agent: "claude", Escalate: []string{"opus"}, EscalateAfter: 2}, task.Task{}, 2,
			got{Agent: "claude", Model: "opus", Rung: 1}},
		{"bare rungs are models of the task's agent", Config{Agent: "claude", Escalate: []string{"gpt-5"}}, task.Task{Agent: "codex"}, 1,
			got{Agent: "codex", Model: "gpt-5", Rung: 1}},
		{"an agent:model rung moves the task", Config{Agent: "claude", Escalate: []string{"opus", "codex:gpt-5"}}, task.Task{}, 2,
			got{Agent: "codex", Model: "gpt-5", Rung: 2}},
		{"a task's agent:model start is a rung", Config{Agent: "claude", Escalate: []string{"codex:o3", "codex:gpt-5"}},
			task.Task{Agent: "codex", Model: "o3"}, 1, got{Agent: "codex", Model: "gpt-5", Rung: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, pick(New(tc.cfg).For(tc.task, tc.failed, t0))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestEachTaskClimbsItsOwnLadder: the rung follows the task's own failed
// attempts, whatever another task's.
func TestEachTaskClimbsItsOwnLadder(t *testing.T) {
	t.Parallel()
	r := New(Config{Agent: "claude", Escalate: []string{"sonnet", "opus"}})
	if c := r.For(task.Task{ID: "A"}, 2, t0); c.Model != "opus" {
		t.Errorf("A after 2 failures: %s, want opus", c.Model)
	}
	if c := r.For(task.Task{ID: "B"}, 0, t0); c.Model != "" || c.Rung != 0 {
		t.Errorf("B after none: %q rung %d, want the default on rung 0", c.Model, c.Rung)
	}
}

// TestFailover: while an agent's limit lasts, the first usable agent of
// fallback stands in, with the model its entry names; none usable blocks
// until the first reset; a task started on a stand-in finishes there, and
// the next task goes back to the first agent whose limit has reset.
func TestFailover(t *testing.T) {
	t.Parallel()
	cfg := Config{Agent: "claude", Model: "sonnet", Fallback: []string{"codex:gpt-5", "gemini"}}
	a, b := task.Task{ID: "A"}, task.Task{ID: "B"}

	r := New(cfg)
	r.Limit("claude", t0.Add(5*time.Hour))
	c := r.For(a, 0, t0)
	if diff := cmp.Diff(got{Agent: "codex", Model: "gpt-5", StandIn: true}, pick(c)); diff != "" {
		t.Errorf("claude limited (-want +got):\n%s", diff)
	}
	if !c.Until.Equal(t0.Add(5*time.Hour)) || c.For != "claude" || !strings.Contains(c.Why, "codex stands in for claude") {
		t.Errorf("stand-in: until %v, for %q, why %q", c.Until, c.For, c.Why)
	}

	r.Limit("codex", t0.Add(time.Hour))
	if diff := cmp.Diff(got{Agent: "gemini", StandIn: true}, pick(r.For(a, 0, t0))); diff != "" {
		t.Errorf("claude and codex limited: the next of the list, its default model (-want +got):\n%s", diff)
	}
	r.Limit("gemini", t0.Add(2*time.Hour))
	c = r.For(a, 0, t0)
	if diff := cmp.Diff(got{Agent: "claude", Model: "sonnet", Blocked: true}, pick(c)); diff != "" {
		t.Errorf("all limited (-want +got):\n%s", diff)
	}
	if !c.Until.Equal(t0.Add(time.Hour)) {
		t.Errorf("all limited: until %v, want the first reset %v", c.Until, t0.Add(time.Hour))
	}

	// Codex resets first and takes task A; claude resets while A runs.
	later := t0.Add(90 * time.Minute)
	if got := r.For(a, 0, later).Agent; got != "codex" {
		t.Errorf("after codex's reset: %s, want codex", got)
	}
	end := t0.Add(6 * time.Hour)
	if c := r.For(a, 1, end); c.Agent != "codex" || !strings.Contains(c.Why, "until the task ends") {
		t.Errorf("A again after claude's reset: %s (%s), want codex: a task finishes on its stand-in", c.Agent, c.Why)
	}
	if c := r.For(b, 0, end); c.Agent != "claude" || c.StandIn() {
		t.Errorf("the next task: %s, want claude again", c.Agent)
	}
}

// TestFailoverUnavailable: an agent found not installed is passed over.
func TestFailoverUnavailable(t *testing.T) {
	t.Parallel()
	r := New(Config{Agent: "claude", Fallback: []string{"codex", "gemini"}})
	r.Limit("claude", t0.Add(time.Hour))
	r.Unavailable("codex", "not installed")
	if got := r.For(task.Task{ID: "A"}, 0, t0).Agent; got != "gemini" {
		t.Errorf("codex unavailable: %s, want gemini", got)
	}
	r.Unavailable("gemini", "not logged in")
	if c := r.For(task.Task{ID: "A"}, 0, t0); !c.Blocked || !c.Until.Equal(t0.Add(time.Hour)) {
		t.Errorf("none usable: blocked %v until %v, want blocked until claude's reset", c.Blocked, c.Until)
	}
}

// TestStandInModel: on a stand-in, rung k uses the k-th escalate entry
// naming it (its last when it has fewer), else its fallback entry's
// model, else its default; a bare model never goes to it.
func TestStandInModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		escalate  []string
		fallback  []string
		taskModel string
		failed    int
		want      string
	}{
		{"rung 0: the fallback entry's model", []string{"sonnet", "opus"}, []string{"codex:gpt-5"}, "", 0, "gpt-5"},
		{"rung 0, a bare entry: its default, not the task's model", []string{"sonnet", "opus"}, []string{"codex"}, "haiku", 0, ""},
		{"rung 1: the first escalate entry naming it", []string{"sonnet", "opus", "codex:o3", "codex:gpt-5"}, []string{"codex:mini"}, "", 1, "o3"},
		{"rung 2: the second", []string{"sonnet", "opus", "codex:o3", "codex:gpt-5"}, []string{"codex:mini"}, "", 2, "gpt-5"},
		{"rung 3: its last when it has fewer", []string{"sonnet", "opus", "haiku", "codex:o3"}, []string{"codex:mini"}, "", 3, "o3"},
		{"escalated, no entry naming it: its fallback model", []string{"sonnet", "opus"}, []string{"codex:mini"}, "", 2, "mini"},
		{"escalated, nothing: its default, not the rung's model", []string{"sonnet", "opus"}, []string{"codex"}, "", 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := New(Config{Agent: "claude", Escalate: tc.escalate, Fallback: tc.fallback})
			r.Limit("claude", t0.Add(time.Hour))
			c := r.For(task.Task{ID: "A", Model: tc.taskModel}, tc.failed, t0)
			if c.Agent != "codex" || c.Model != tc.want {
				t.Errorf("%s:%s, want codex:%s", c.Agent, c.Model, tc.want)
			}
		})
	}
}

// TestCheck: a task may name the run's agent, fallback's, escalate's and
// allowed-agents, any model unless allowed-models narrows them, and no
// ladder it cannot climb to the top of within max-attempts; each error
// names the file, the line, the task and the field.
func TestCheck(t *testing.T) {
	t.Parallel()
	cfg := Config{Agent: "claude", Fallback: []string{"codex"}, Escalate: []string{"sonnet", "gemini:pro"},
		AllowedAgents: []string{"amp"}, MaxAttempts: 3, EscalateAfter: 1}
	for _, tc := range []struct {
		name string
		cfg  Config
		task task.Task
		want string // "" for none
	}{
		{"the run's agent", cfg, task.Task{Agent: "claude"}, ""},
		{"a fallback", cfg, task.Task{Agent: "codex"}, ""},
		{"escalate's agent", cfg, task.Task{Agent: "gemini"}, ""},
		{"allowed-agents", cfg, task.Task{Agent: "amp"}, ""},
		{"--agent's", Config{Agent: "claude", CLIAgent: "kiro"}, task.Task{Agent: "kiro"}, ""},
		{"another agent", cfg, task.Task{Agent: "cursor"},
			`prd.json:7: task T-1: agent "cursor" is not allowed: a task may name claude, codex, gemini, amp`},
		{"any model", cfg, task.Task{Model: "anything"}, ""},
		{"allowed-models", Config{Agent: "claude", AllowedModels: []string{"opus"}}, task.Task{Model: "opus"}, ""},
		{"outside allowed-models", Config{Agent: "claude", AllowedModels: []string{"opus", "sonnet"}}, task.Task{Model: "o3"},
			`prd.json:7: task T-1: model "o3" is not in allowed-models (opus, sonnet)`},
		{"a ladder that fits", cfg, task.Task{}, ""},
		{"a ladder too long", Config{Agent: "claude", Escalate: []string{"sonnet", "opus"}, EscalateAfter: 2, MaxAttempts: 4}, task.Task{},
			"prd.json:7: task T-1: starting on claude, it would fail before its top rung: escalate-after 2 × 2 rungs of escalate (sonnet, opus) needs max-attempts 5 or more, and max-attempts is 4"},
		{"a shorter ladder from a rung fits", Config{Agent: "claude", Escalate: []string{"sonnet", "opus"}, EscalateAfter: 2, MaxAttempts: 4},
			task.Task{Model: "sonnet"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tk := tc.task
			tk.ID, tk.Line = "T-1", 7
			err := New(tc.cfg).Check("prd.json", tk)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check = %v, want none", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("Check = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCheckPlan: every open task is checked; a done one is not.
func TestCheckPlan(t *testing.T) {
	t.Parallel()
	p := &task.Plan{Path: "plan.md", Tasks: []task.Task{
		{ID: "1", Line: 3, Agent: "cursor", Status: task.StatusDone},
		{ID: "2", Line: 5, Agent: "cursor"},
		{ID: "3", Line: 9, Model: "o3"},
	}}
	err := New(Config{Agent: "claude", AllowedModels: []string{"opus"}}).CheckPlan(p)
	if err == nil {
		t.Fatal("CheckPlan = nil")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "plan.md:5: task 2: agent") || !strings.HasPrefix(lines[1], "plan.md:9: task 3: model") {
		t.Errorf("CheckPlan =\n%v\nwant tasks 2 and 3, one a line", err)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Agent: "claude"}, "claude"},
		{Config{Agent: "claude", Model: "sonnet", Escalate: []string{"sonnet", "opus"}, EscalateAfter: 1, Fallback: []string{"codex", "gemini"}},
			"claude:sonnet → opus after 1 failure; on a usage limit: codex, gemini"},
		{Config{Agent: "claude", Escalate: []string{"sonnet", "opus", "codex:gpt-5"}, EscalateAfter: 2},
			"claude → sonnet → opus → codex:gpt-5 after 2 failures each"},
		{Config{Agent: "claude", CLIAgent: "codex", Fallback: []string{"claude:opus"}}, "codex; on a usage limit: claude:opus"},
	} {
		if got := New(tc.cfg).Describe(); got != tc.want {
			t.Errorf("Describe = %q, want %q", got, tc.want)
		}
	}
}

func TestAgents(t *testing.T) {
	t.Parallel()
	r := New(Config{Agent: "claude", CLIAgent: "amp", Fallback: []string{"codex", "claude:opus"}, Escalate: []string{"opus", "gemini:pro"},
		AllowedAgents: []string{"kiro", "codex"}})
	if diff := cmp.Diff([]string{"amp", "claude", "codex", "gemini", "kiro"}, r.Agents()); diff != "" {
		t.Errorf("Agents (-want +got):\n%s", diff)
	}
}

// TestStartRemembersNothing: Start is who a task starts on, whatever is
// limited, and changes nothing For remembers.
func TestStartRemembersNothing(t *testing.T) {
	t.Parallel()
	r := New(Config{Agent: "claude", Fallback: []string{"codex"}})
	r.Limit("claude", t0.Add(time.Hour))
	if c := r.Start(task.Task{ID: "A"}); c.Agent != "claude" || c.StandIn() {
		t.Errorf("Start = %+v, want claude", c)
	}
	if c := r.For(task.Task{ID: "A"}, 0, t0); c.Agent != "codex" {
		t.Errorf("For = %s, want codex", c.Agent)
	}
}

// TestFromConfig: the run's rule from its config and command line; the
// reviewer's from [review], its fallback the run's while it is the run's
// agent.
func TestFromConfig(t *testing.T) {
	t.Parallel()
	c := config.Defaults()
	c.Agent, c.Model = "claude", "sonnet"
	c.Fallback, c.Escalate, c.EscalateAfter, c.MaxAttempts = []string{"codex"}, []string{"opus"}, 1, 3
	r := New(FromConfig(c, "", "haiku"))
	if got := r.Describe(); got != "claude:haiku → opus after 1 failure; on a usage limit: codex" {
		t.Errorf("run's rule: %q", got)
	}
	if got := New(ForReview(c)).Describe(); got != "claude; on a usage limit: codex" {
		t.Errorf("reviewer's rule, review.agent empty: %q", got)
	}
	c.Review.Agent, c.Review.Model = "gemini", "pro"
	if got := New(ForReview(c)).Describe(); got != "gemini:pro" {
		t.Errorf("reviewer's rule, review.agent gemini: %q", got)
	}
}
