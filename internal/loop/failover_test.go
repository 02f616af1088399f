package loop

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/route"
	"github.com/ralph-loop/ralph/internal/state"
)

// namedAgent is a scripted agent of a name, which keeps the model each
// run was asked for.
type namedAgent struct {
	scripted
	name   string
	models []string
}

func (a *namedAgent) Name() string { return a.name }

func (a *namedAgent) Run(ctx context.Context, req agent.Request, sink agent.Sink) (agent.Result, error) {
	a.models = append(a.models, req.Model)
	return a.scripted.Run(ctx, req, sink)
}

func named(name string, results ...agent.Result) *namedAgent {
	return &namedAgent{scripted: scripted{results: results}, name: name}
}

// usageLimit is a usage limit's result, resetting at reset.
func usageLimit(reset time.Time) agent.Result {
	return agent.Result{IsError: true, ErrorKind: agent.ErrorUsageLimit, ErrorText: "You've hit your limit", ResetAt: reset}
}

// routed runs the fixture's plan with a route of cfg over agents (the
// first the run's own), and returns the run's error and its events.
func (f *fixture) routed(t *testing.T, cfg route.Config, agents ...*namedAgent) ([]Event, error) {
	t.Helper()
	var events []Event
	deps := f.deps(func(e Event) { events = append(events, e) })
	deps.Agent = agents[0]
	deps.Agents = map[string]Agent{}
	for _, a := range agents {
		deps.Agents[a.name] = a
	}
	deps.Route = route.New(cfg)
	err := Run(t.Context(), f.opts, deps)
	return events, err
}

// ran is each history line's task, agent and outcome.
func (f *fixture) ran() []string {
	var out []string
	for _, r := range f.store.history {
		out = append(out, r.TaskID+":"+r.Agent+":"+string(r.Outcome))
	}
	return out
}

func switches(events []Event) []string {
	var out []string
	for _, e := range events {
		if e.Kind == EventAgentSwitched {
			out = append(out, e.From+"→"+e.To)
		}
	}
	return out
}

// TestFailoverFinishesThePlanOnAStandIn: claude hits a usage limit that
// resets in five hours; codex takes over the task that was cut off, at
// once, and finishes the plan; the limit is no attempt.
func TestFailoverFinishesThePlanOnAStandIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B", "C"})
	reset := f.clock.now.Add(5 * time.Hour)
	claude, codex := named("claude", usageLimit(reset)), named("codex", done())
	var current []string // state.json's, as each of codex's runs starts
	codex.before = func(int) { current = append(current, f.store.st.CurrentAgent+":"+f.store.st.CurrentModel) }
	events, err := f.routed(t, route.Config{Agent: "claude", Fallback: []string{"codex:gpt-5"}}, claude, codex)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A:claude:rate_limited", "A:codex:task_done", "B:codex:task_done", "C:codex:task_done"}
	if diff := cmp.Diff(want, f.ran()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"claude→codex"}, switches(events)); diff != "" {
		t.Errorf("switches (-want +got):\n%s", diff)
	}
	for _, e := range events {
		if e.Kind == EventAgentSwitched && (e.Until == nil || !e.Until.Equal(reset) || e.Task.ID != "A" || !strings.Contains(e.Message, "limited until")) {
			t.Errorf("agent_switched: until %v, task %v, %q; want claude's reset, task A", e.Until, e.Task, e.Message)
		}
	}
	if len(f.clock.sleeps) != 0 {
		t.Errorf("sleeps = %v, want none: the stand-in starts at once", f.clock.sleeps)
	}
	if diff := cmp.Diff([]string{"gpt-5", "gpt-5", "gpt-5"}, codex.models); diff != "" {
		t.Errorf("codex's models (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"codex:gpt-5", "codex:gpt-5", "codex:gpt-5"}, current); diff != "" {
		t.Errorf("state.json's current agent (-want +got):\n%s", diff)
	}
	if h := f.store.history[1]; h.Model != "gpt-5" {
		t.Errorf("history names model %q, want gpt-5", h.Model)
	}
	if a := f.store.st.Tasks["A"].Attempts; a != 0 {
		t.Errorf("A's attempts = %d, want 0: a usage limit is no attempt", a)
	}
}

// TestFailoverGoesBackAtTheNextTask: claude's limit resets while codex
// works on the task that was cut off; the next task is claude's again.
func TestFailoverGoesBackAtTheNextTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"})
	reset := f.clock.now.Add(20 * time.Second)
	claude, codex := named("claude", usageLimit(reset), done()), named("codex", done())
	codex.before = func(int) { f.clock.now = f.clock.now.Add(time.Minute) } // codex's task outlasts the limit
	events, err := f.routed(t, route.Config{Agent: "claude", Fallback: []string{"codex"}}, claude, codex)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A:claude:rate_limited", "A:codex:task_done", "B:claude:task_done"}
	if diff := cmp.Diff(want, f.ran()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"claude→codex", "codex→claude"}, switches(events)); diff != "" {
		t.Errorf("switches (-want +got):\n%s", diff)
	}
	for _, e := range events {
		if e.Kind == EventAgentSwitched && e.To == "claude" && (e.Message != "back to claude: its usage limit has reset" || e.Task.ID != "B") {
			t.Errorf("the switch back: %q on %v", e.Message, e.Task)
		}
	}
}

// TestFailoverKeepsATaskOnItsStandIn: a task the stand-in took finishes
// there, its limit reset or not.
func TestFailoverKeepsATaskOnItsStandIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"})
	reset := f.clock.now.Add(20 * time.Second)
	failed := agent.Result{FinalText: "<promise>TASK_FAILED</promise> tests fail"}
	claude, codex := named("claude", usageLimit(reset), done()), named("codex", failed, done())
	codex.before = func(int) { f.clock.now = f.clock.now.Add(time.Minute) }
	if _, err := f.routed(t, route.Config{Agent: "claude", Fallback: []string{"codex"}}, claude, codex); err != nil {
		t.Fatal(err)
	}
	want := []string{"A:claude:rate_limited", "A:codex:task_failed", "A:codex:task_done"}
	if diff := cmp.Diff(want, f.ran()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// TestEscalationAfterTwoGateFailures: with escalate-after 2, two failed
// gates move the task's third attempt to the next rung.
func TestEscalationAfterTwoGateFailures(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"})
	f.gate = &memGate{results: []bool{false, false, true}}
	claude := named("claude", done())
	cfg := route.Config{Agent: "claude", Model: "sonnet", Escalate: []string{"sonnet", "opus"}, EscalateAfter: 2, MaxAttempts: 3}
	events, err := f.routed(t, cfg, claude)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:gate_failed", "A:gate_failed", "A:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sonnet", "sonnet", "opus"}, claude.models); diff != "" {
		t.Errorf("models asked for (-want +got):\n%s", diff)
	}
	var models []string
	for _, r := range f.store.history {
		models = append(models, r.Model)
	}
	if diff := cmp.Diff([]string{"sonnet", "sonnet", "opus"}, models); diff != "" {
		t.Errorf("history's models (-want +got):\n%s", diff)
	}
	var on []string
	for _, e := range events {
		if e.Kind == EventIterationStarted {
			on = append(on, e.Message)
		}
	}
	if !strings.Contains(events[0].Message, "route claude:sonnet → opus after 2 failures") {
		t.Errorf("run_started = %q, want the route", events[0].Message)
	}
	want := []string{"on claude:sonnet", "on claude:sonnet", "on claude:opus (escalated to rung 1 of 1 after 2 failed attempts)"}
	if diff := cmp.Diff(want, on); diff != "" {
		t.Errorf("iteration_started (-want +got):\n%s", diff)
	}
}

// TestOutageIsRetriedOnTheSameAgent: a transient error is no usage
// limit: the same agent runs again, nobody stands in.
func TestOutageIsRetriedOnTheSameAgent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"})
	claude := named("claude", agent.Result{IsError: true, ErrorKind: agent.ErrorTransient, ErrorText: "529 overloaded"}, done())
	codex := named("codex", done())
	events, err := f.routed(t, route.Config{Agent: "claude", Fallback: []string{"codex"}}, claude, codex)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:claude:transient_error", "A:claude:task_done"}, f.ran()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if codex.calls != 0 || len(switches(events)) != 0 {
		t.Errorf("codex ran %d times, switches %v; want none", codex.calls, switches(events))
	}
}

// TestEveryAgentLimitedWaitsForTheFirstReset: with no stand-in left the
// run waits for the first reset, as long as --max-wait allows.
func TestEveryAgentLimitedWaitsForTheFirstReset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		maxWait time.Duration
		wantErr bool
	}{
		{"within max-wait", 2 * time.Hour, false},
		{"beyond max-wait", 30 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []string{"A"})
			f.opts.MaxWait = tc.maxWait
			now := f.clock.now
			claude := named("claude", usageLimit(now.Add(5*time.Hour)))
			codex := named("codex", usageLimit(now.Add(time.Hour)), done())
			_, err := f.routed(t, route.Config{Agent: "claude", Fallback: []string{"codex"}}, claude, codex)
			if tc.wantErr {
				if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "every agent that can run A is limited") {
					t.Fatalf("err = %v, want ErrLimit: every agent limited", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]time.Duration{time.Hour}, f.clock.sleeps); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
			want := []string{"A:claude:rate_limited", "A:codex:rate_limited", "A:codex:task_done"}
			if diff := cmp.Diff(want, f.ran()); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFallbackAfterWaitsFirst: fallback-after is waited before the
// switch; a limit that resets within it is waited out on the same agent.
func TestFallbackAfterWaitsFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		reset  time.Duration
		sleeps []time.Duration
		ran    []string
	}{
		{"a long limit: wait, then switch", 5 * time.Hour, []time.Duration{10 * time.Minute},
			[]string{"A:claude:rate_limited", "A:codex:task_done"}},
		{"a short one: wait it out", 5 * time.Minute, []time.Duration{5 * time.Minute},
			[]string{"A:claude:rate_limited", "A:claude:task_done"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []string{"A"})
			f.opts.FallbackAfter = 10 * time.Minute
			claude := named("claude", usageLimit(f.clock.now.Add(tc.reset)), done())
			codex := named("codex", done())
			if _, err := f.routed(t, route.Config{Agent: "claude", Fallback: []string{"codex"}}, claude, codex); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.sleeps, f.clock.sleeps); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ran, f.ran()); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnavailableStandInIsPassedOver: an agent the run finds not
// installed is skipped, with a warning.
func TestUnavailableStandInIsPassedOver(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"})
	claude := named("claude", usageLimit(f.clock.now.Add(5*time.Hour)))
	codex, gemini := named("codex", done()), named("gemini", done())
	var events []Event
	deps := f.deps(func(e Event) { events = append(events, e) })
	deps.Agent = claude
	deps.Agents = map[string]Agent{"claude": claude, "codex": codex, "gemini": gemini}
	deps.Route = route.New(route.Config{Agent: "claude", Fallback: []string{"codex", "gemini"}})
	deps.Available = func(name string) error {
		if name == "codex" {
			return errors.New("codex is not installed")
		}
		return nil
	}
	if err := Run(t.Context(), f.opts, deps); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:claude:rate_limited", "A:gemini:task_done"}, f.ran()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if !slicesContainsSub(f.warns, "codex cannot stand in for claude: codex is not installed") {
		t.Errorf("warnings = %q, want codex's", f.warns)
	}
}

// TestQuotaLineSwitchesBeforeQuotaAction: a protected window past its
// line is a usage limit to a run with a fallback: the stand-in starts at
// once, without the wait quota-action asks for.
func TestQuotaLineSwitchesBeforeQuotaAction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"})
	f.opts.QuotaReserve = 20
	reset := f.clock.now.Add(3 * time.Hour)
	claude := named("claude", quotaResult("five_hour", "allowed", 85, reset))
	codex := named("codex", done())
	events, err := f.routed(t, route.Config{Agent: "claude", Fallback: []string{"codex"}}, claude, codex)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:claude:task_done", "B:codex:task_done"}, f.ran()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if len(f.clock.sleeps) != 0 || len(switches(events)) != 1 {
		t.Errorf("sleeps %v, switches %v; want none and one", f.clock.sleeps, switches(events))
	}
	if q := f.store.st.Quota["five_hour"]; q.Agent != "claude" {
		t.Errorf("the window's agent = %q, want claude", q.Agent)
	}
}

// TestTaskNamingAnAgentNotAllowedFails: a task that comes to name an
// agent the config does not allow (an edit during the run) fails with the
// error, and the run goes on.
func TestTaskNamingAnAgentNotAllowedFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B", "C"})
	f.plan.p.Tasks[1].Line = 4
	claude := named("claude", done())
	claude.before = func(n int) {
		if n == 1 {
			f.plan.p.Tasks[1].Agent = "cursor"
		}
	}
	events, err := f.routed(t, route.Config{Agent: "claude"}, claude)
	if !errors.Is(err, ErrStuck) {
		t.Fatalf("err = %v, want ErrStuck: nothing left but a failed task", err)
	}
	if diff := cmp.Diff([]string{"A:claude:task_done", "C:claude:task_done"}, f.ran()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	var failed string
	for _, e := range events {
		if e.Kind == EventTaskFailed {
			failed = e.Message
		}
	}
	if !strings.Contains(failed, `/p/prd.json:4: task B: agent "cursor" is not allowed`) {
		t.Errorf("task_failed = %q", failed)
	}
	if ts := f.store.st.Tasks["B"]; !ts.Failed {
		t.Errorf("B's state = %+v, want failed", ts)
	}
}

// TestTaskOwnAgentRunsIt: a task that names an allowed agent runs on it,
// and the history says so; no switch is reported.
func TestTaskOwnAgentRunsIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"})
	f.plan.p.Tasks[1].Agent, f.plan.p.Tasks[1].Model = "codex", "o3"
	claude, codex := named("claude", done()), named("codex", done())
	events, err := f.routed(t, route.Config{Agent: "claude", Model: "sonnet", AllowedAgents: []string{"codex"}}, claude, codex)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:claude:task_done", "B:codex:task_done"}, f.ran()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if f.store.history[1].Model != "o3" || len(switches(events)) != 0 {
		t.Errorf("B's model %q, switches %v; want o3 and none", f.store.history[1].Model, switches(events))
	}
	if state.OutcomeTaskDone != f.store.history[0].Outcome || f.store.history[0].Model != "sonnet" {
		t.Errorf("A: %+v", f.store.history[0])
	}
}

func slicesContainsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestReviewerFailover: the reviewer's usage limit makes review.fallback's
// agent review the claim at once, with its model; the evidence names it.
func TestReviewerFailover(t *testing.T) {
	t.Parallel()
	f, _, trees := reviewFixture(t)
	claude := named("claude", usageLimit(f.clock.now.Add(5*time.Hour)))
	codex := named("codex", verdict("<promise>SHIP</promise>", 0.25))
	var events []Event
	deps := Deps{Agent: f.agent, Plan: f.plan, Store: f.store, Repo: f.repo, Now: f.clock.Now, Sleep: f.clock.Sleep,
		Jitter:   func(time.Duration) time.Duration { return 0 },
		Reviewer: claude, Trees: trees,
		Reviewers:   map[string]Agent{"claude": claude, "codex": codex},
		ReviewRoute: route.New(route.Config{Agent: "claude", Model: "m", Fallback: []string{"codex:o3"}}),
		Emit:        func(e Event) { events = append(events, e) }}
	if err := Run(t.Context(), f.opts, deps); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"A:task_done"}, f.outcomes()); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	rev := f.store.history[0].Review
	if rev == nil || rev.Verdict != "SHIP" || rev.Agent != "codex" || rev.Model != "o3" {
		t.Errorf("review evidence = %+v, want SHIP by codex/o3", rev)
	}
	if diff := cmp.Diff([]string{"claude→codex"}, switches(events)); diff != "" {
		t.Errorf("switches (-want +got):\n%s", diff)
	}
	if len(f.clock.sleeps) != 0 || codex.models[0] != "o3" {
		t.Errorf("sleeps %v, codex's model %q; want none and o3", f.clock.sleeps, codex.models[0])
	}
}

// renamed is an agent under another name.
type renamed struct {
	Agent
	name string
}

func (a renamed) Name() string { return a.name }

// TestParallelFailover: with --parallel, the workers' tasks cut off by
// claude's limit start again on codex, and the history says who ran each.
func TestParallelFailover(t *testing.T) {
	t.Parallel()
	clock := &syncClock{fakeClock: fakeClock{now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}}
	f := newParFixture(t, ids("A", "B")...)
	both := barrier(f.agent, 2)
	f.agent.work = both // the limits come once both run
	claude := renamed{&limitAgent{treeAgent: f.agent, reset: clock.now.Add(5 * time.Hour)}, "claude"}
	codex := renamed{&treeAgent{}, "codex"}
	opts := Options{Dir: "/repo", Commit: true, MaxAttempts: 3, MaxWait: time.Hour}
	deps := Deps{Agent: claude, Plan: f.plan, Store: f.store, Repo: f.main, Now: clock.Now, Sleep: clock.Sleep,
		Jitter: func(time.Duration) time.Duration { return 0 },
		Agents: map[string]Agent{"claude": claude, "codex": codex},
		Route:  route.New(route.Config{Agent: "claude", Fallback: []string{"codex"}}),
		Emit:   func(e Event) { f.mu.Lock(); f.events = append(f.events, e); f.mu.Unlock() }}
	err := RunParallel(t.Context(), opts, deps, Parallel{Workers: 2, Worktrees: f.trees, Root: "/repo", Dir: "/repo/.ralph/worktrees"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, r := range f.store.history {
		got[r.TaskID] = append(got[r.TaskID], r.Agent+":"+string(r.Outcome))
	}
	want := map[string][]string{"A": {"claude:rate_limited", "codex:task_done"}, "B": {"claude:rate_limited", "codex:task_done"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if len(clock.sleeps) != 0 {
		t.Errorf("sleeps = %v, want none", clock.sleeps)
	}
}

// TestPreviewNamesTheRoutedAgent: --dry-run shows the agent and model
// the task starts on, and the rule.
func TestPreviewNamesTheRoutedAgent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"})
	f.plan.p.Tasks[0].Agent, f.plan.p.Tasks[0].Model = "codex", "o3"
	claude, codex := named("claude", done()), named("codex", done())
	deps := f.deps(nil)
	deps.Agent, deps.Agents = claude, map[string]Agent{"claude": claude, "codex": codex}
	deps.Route = route.New(route.Config{Agent: "claude", Fallback: []string{"codex"}})
	next, err := Preview(f.opts, deps)
	if err != nil {
		t.Fatal(err)
	}
	if next.Request.Model != "o3" || next.Route != "claude; on a usage limit: codex" || next.Why != "the task's" {
		t.Errorf("preview: model %q, route %q, why %q", next.Request.Model, next.Route, next.Why)
	}
	if codex.calls != 0 || claude.calls != 0 {
		t.Error("a preview ran an agent")
	}
	f.plan.p.Tasks[0].Agent = "cursor"
	if _, err := Preview(f.opts, deps); err == nil || !strings.Contains(err.Error(), `agent "cursor" is not allowed`) {
		t.Errorf("a task naming an agent not allowed: %v", err)
	}
}

// TestCrashedStandInIsRecordedAsItsOwn: the line of a run that died while
// a stand-in worked names the stand-in, not the run's agent.
func TestCrashedStandInIsRecordedAsItsOwn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.store.st = state.State{RunID: "dead-run", Status: state.StatusRunning, Agent: "claude", Model: "opus",
		Iteration: 1, CurrentTask: "A", CurrentAgent: "codex", CurrentModel: "gpt-5", PID: 4242, UpdatedAt: f.clock.now}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if h := f.store.history[0]; h.Agent != "codex" || h.Model != "gpt-5" || h.Outcome != state.OutcomeInterrupted {
		t.Errorf("the dead run's line: %s:%s %s, want codex:gpt-5 interrupted", h.Agent, h.Model, h.Outcome)
	}
}

// TestRouteIsCheckedBeforeAnything: a task naming an agent the config
// does not allow, or one whose ladder max-attempts cuts short, stops the
// run before any agent runs or any state is written.
func TestRouteIsCheckedBeforeAnything(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  route.Config
		want []string
	}{
		{"an agent not allowed", route.Config{Agent: "claude"}, []string{`/p/prd.json:4: task B: agent "cursor" is not allowed`}},
		{"a ladder too long", route.Config{Agent: "claude", Escalate: []string{"sonnet", "opus"}, EscalateAfter: 2, MaxAttempts: 3},
			[]string{"/p/prd.json:2: task A:", "max-attempts", "escalate-after 2", "escalate (sonnet, opus)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []string{"A", "B"})
			f.plan.p.Tasks[0].Line = 2
			f.plan.p.Tasks[1].Line = 4
			if len(tc.cfg.Escalate) == 0 {
				f.plan.p.Tasks[1].Agent = "cursor"
			}
			claude := named("claude", done())
			_, err := f.routed(t, tc.cfg, claude)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
			if claude.calls != 0 || len(f.store.history) != 0 || f.store.st.RunID != "" {
				t.Errorf("%d agent runs, %d history lines, state %q: want none", claude.calls, len(f.store.history), f.store.st.RunID)
			}
		})
	}
}

// TestPlainRouteSaysNothingNew: a route with no fallback and no ladder,
// on tasks that name nothing, adds nothing to what a run says.
func TestPlainRouteSaysNothingNew(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"})
	f.opts.Model = "sonnet"
	events, err := f.routed(t, route.Config{Agent: "claude", Model: "sonnet"}, named("claude", done()))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Kind == EventRunStarted && strings.Contains(e.Message, "route") || e.Kind == EventIterationStarted && e.Message != "" {
			t.Errorf("%s says %q", e.Kind, e.Message)
		}
	}
	if diff := cmp.Diff([]string{"A:claude:task_done", "B:claude:task_done"}, f.ran()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// TestEndReviewFailover: an end reviewer's usage limit hands its focus to
// review.fallback's agent, without a wait; the others keep their verdicts.
func TestEndReviewFailover(t *testing.T) {
	t.Parallel()
	f, plan, trees := endFixture(t, 2, "tests", "docs")
	limited := newFocusReviewer(func(focus string, n int) agent.Result {
		if focus == "docs" {
			return usageLimit(f.clock.now.Add(5 * time.Hour))
		}
		return ship()
	})
	standIn := newFocusReviewer(func(string, int) agent.Result { return ship() })
	var events []Event
	deps := Deps{Agent: f.agent, Plan: plan, Store: f.store, Repo: f.repo, Trees: trees, Reviewer: limited,
		Reviewers:   map[string]Agent{"rev": limited, "codex": renamed{standIn, "codex"}},
		ReviewRoute: route.New(route.Config{Agent: "rev", Fallback: []string{"codex"}}),
		Now:         f.clock.Now, Sleep: f.clock.Sleep, Jitter: func(time.Duration) time.Duration { return 0 },
		Emit: func(e Event) { events = append(events, e) }}
	if err := Run(t.Context(), f.opts, deps); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]int{"docs": 1}, standIn.calls); d != "" {
		t.Errorf("the stand-in's runs (-want +got):\n%s", d)
	}
	if len(f.clock.sleeps) != 0 {
		t.Errorf("sleeps = %v, want none", f.clock.sleeps)
	}
	if d := cmp.Diff([]string{"rev→codex"}, switches(events)); d != "" {
		t.Errorf("switches (-want +got):\n%s", d)
	}
}

// TestStandInIsPriced: a stand-in's tokens are priced by its model, and a
// model without a price is said once, whichever map the agent came from.
func TestStandInIsPriced(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"})
	f.opts.Prices = tablePrices{model: "gpt-x"}
	claude := named("claude", usageLimit(f.clock.now.Add(5*time.Hour)))
	codex := named("codex", tokensOnly("mystery-2"), tokensOnly("gpt-x"))
	if _, err := f.routed(t, route.Config{Agent: "claude", Fallback: []string{"codex"}}, claude, codex); err != nil {
		t.Fatal(err)
	}
	var about []string
	for _, w := range f.warns {
		if strings.Contains(w, "mystery-2") {
			about = append(about, w)
		}
	}
	if len(about) != 1 || !strings.HasPrefix(about[0], "codex: no price for model mystery-2") {
		t.Errorf("warnings about the model = %q, want one, naming codex", about)
	}
	if h := f.store.history[2]; h.CostSource != state.CostEstimated || h.CostUSD == 0 {
		t.Errorf("B on codex: cost %v %s, want an estimate", h.CostUSD, h.CostSource)
	}
}
