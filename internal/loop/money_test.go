package loop

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
)

// tablePrices is a price table of one model: $1 per million input tokens,
// $10 output, $0.10 cache read, $2 cache write.
type tablePrices struct{ model, def string }

func (p tablePrices) Estimate(model string, in, out, cr, cw int64) (float64, bool) {
	if model != p.model {
		return 0, false
	}
	return (float64(in)*1 + float64(out)*10 + float64(cr)*0.1 + float64(cw)*2) / 1e6, true
}

func (p tablePrices) DefaultModel(string) string { return p.def }

// tokensOnly is a done result that reports tokens and no cost, as Codex's.
func tokensOnly(model string) agent.Result {
	return agent.Result{FinalText: "<promise>TASK_DONE</promise>", Model: model,
		Usage: agent.Usage{InputTokens: 100_000, OutputTokens: 10_000, CacheReadTokens: 50_000}}
}

func TestEstimatedCostIsRecordedAndCounted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, tokensOnly(""))
	f.opts.Prices = tablePrices{model: "gpt-x", def: "gpt-x"}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	want := 0.1 + 0.1 + 0.005 // 100k in, 10k out, 50k cache reads
	for _, r := range f.store.history {
		if math.Abs(r.CostUSD-want) > 1e-9 || r.CostSource != state.CostEstimated {
			t.Errorf("record %s: cost %v %q, want %v estimated", r.TaskID, r.CostUSD, r.CostSource, want)
		}
	}
	if tot := f.store.st.Totals; math.Abs(tot.CostUSD-2*want) > 1e-9 || tot.CostSource != state.CostEstimated {
		t.Errorf("totals = %+v", tot)
	}
}

func TestReportedCostStaysReported(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, done())
	f.opts.Prices = tablePrices{model: "gpt-x"}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if r := f.store.history[0]; r.CostUSD != 0.5 || r.CostSource != state.CostReported {
		t.Errorf("record: cost %v %q, want 0.5 reported", r.CostUSD, r.CostSource)
	}
}

func TestBudgetStopsARunOfEstimatedCosts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B", "C"}, tokensOnly("gpt-x"))
	f.opts.Prices = tablePrices{model: "gpt-x"}
	f.opts.Budget = 0.3 // two iterations cost 0.41
	err := f.run(t)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("err = %v, want the budget's limit", err)
	}
	if diff := cmp.Diff([]string{"A:task_done", "B:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

func TestUnknownModelIsSaidOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, tokensOnly("mystery-1"))
	f.opts.Prices = tablePrices{model: "gpt-x"}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	var about []string
	for _, w := range f.warns {
		if strings.Contains(w, "mystery-1") {
			about = append(about, w)
		}
	}
	if len(about) != 1 || !strings.Contains(about[0], `[prices."mystery-1"]`) {
		t.Errorf("warnings about the model = %q, want one naming the ralph.toml table", about)
	}
	for _, r := range f.store.history {
		if r.CostSource != state.CostUnknown || r.CostUSD != 0 {
			t.Errorf("record %s: cost %v %q, want 0 unknown", r.TaskID, r.CostUSD, r.CostSource)
		}
	}
	if got := f.store.st.Totals.CostSource; got != state.CostUnknown {
		t.Errorf("totals cost_source = %q, want unknown", got)
	}
}

// quotaResult is a done result whose agent reported one window.
func quotaResult(window, status string, utilization float64, reset time.Time) agent.Result {
	r := done()
	w := agent.QuotaWindow{Window: window, Status: status, ResetsAt: reset}
	if utilization >= 0 {
		w.Utilization, w.HasUtilization = utilization, true
	}
	r.Quota = []agent.QuotaWindow{w}
	return r
}

func TestQuotaWarningOnAProtectedWindowWaitsForItsReset(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC) // 45 h after the fixture's clock
	f := newFixture(t, []string{"A", "B", "C"}, quotaResult("seven_day", "allowed_warning", -1, reset), done())
	f.opts.QuotaReserve = 20
	f.opts.QuotaWindows = []string{"seven_day"}
	f.opts.MaxWait = 48 * time.Hour
	var events []Event
	deps := f.deps(func(e Event) { events = append(events, e) })
	if err := Run(t.Context(), f.opts, deps); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A:task_done", "B:task_done", "C:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	// One wait, right after A, to the reported reset; B started after it.
	if len(f.clock.sleeps) != 1 {
		t.Fatalf("sleeps = %v, want one wait", f.clock.sleeps)
	}
	if b := f.store.history[1]; b.StartedAt.Before(reset) {
		t.Errorf("B started at %s, before the window's reset %s", b.StartedAt, reset)
	}
	var waited, quota bool
	for _, e := range events {
		waited = waited || e.Kind == EventWaiting && e.Until != nil && e.Until.Equal(reset) && strings.Contains(e.Message, "seven_day")
		quota = quota || e.Kind == EventQuota && e.Quota["seven_day"].Status == "allowed_warning"
	}
	if !waited || !quota {
		t.Errorf("events: waiting until the reset %v, quota event %v", waited, quota)
	}
	if q := f.store.st.Quota["seven_day"]; q.Status != "allowed_warning" || q.ResetsAt == nil || !q.ResetsAt.Equal(reset) {
		t.Errorf("state.json quota = %+v", f.store.st.Quota)
	}
}

func TestQuotaUtilizationPastTheReserve(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 11, 21, 12, 45, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		utilization float64
		windows     []string
		waits       int
	}{
		{name: "below the line", utilization: 79, waits: 0},
		{name: "at the line", utilization: 80, waits: 1},
		{name: "past it, any window", utilization: 93, waits: 1},
		{name: "past it, not a protected window", utilization: 93, windows: []string{"seven_day"}, waits: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []string{"A", "B"}, quotaResult("five_hour", "allowed", tc.utilization, reset), done())
			f.opts.QuotaReserve = 20
			f.opts.QuotaWindows = tc.windows
			if err := f.run(t); err != nil {
				t.Fatal(err)
			}
			if len(f.clock.sleeps) != tc.waits {
				t.Errorf("sleeps = %v, want %d", f.clock.sleeps, tc.waits)
			}
		})
	}
}

func TestQuotaActionStopExitsWithTasksOpen(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	f := newFixture(t, []string{"A", "B"}, quotaResult("seven_day", "allowed_warning", 85, reset))
	f.opts.QuotaReserve = 20
	f.opts.QuotaAction = QuotaStop
	err := f.run(t)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "seven_day") {
		t.Fatalf("err = %v, want a limit naming the window", err)
	}
	if diff := cmp.Diff([]string{"A:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if f.plan.p.Open() != 1 || len(f.plan.failed) > 0 || f.store.st.Tasks["B"].Failed || f.store.st.Status != state.StatusStopped {
		t.Errorf("B must stay open and not failed; state %+v, failed %v", f.store.st, f.plan.failed)
	}
	if len(f.clock.sleeps) != 0 {
		t.Errorf("sleeps = %v, want none", f.clock.sleeps)
	}
}

func TestQuotaWaitBeyondMaxWaitStops(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	f := newFixture(t, []string{"A", "B"}, quotaResult("seven_day", "allowed", 90, reset))
	f.opts.QuotaReserve = 20
	if err := f.run(t); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "--max-wait") {
		t.Fatalf("err = %v, want a limit naming --max-wait", err)
	}
}

func TestQuotaKeptAcrossRuns(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	f := newFixture(t, []string{"A"}, done())
	u := 95.0
	f.store.st.Quota = map[string]state.QuotaWindow{"five_hour": {Status: "allowed", Utilization: &u, ResetsAt: &reset}}
	f.opts.QuotaReserve = 10
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if len(f.clock.sleeps) != 1 || f.store.history[0].StartedAt.Before(reset) {
		t.Errorf("sleeps = %v, first start %s: want a wait for the last run's window", f.clock.sleeps, f.store.history[0].StartedAt)
	}
}

// syncClock is fakeClock for several goroutines.
type syncClock struct {
	mu sync.Mutex
	fakeClock
}

func (c *syncClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fakeClock.Now()
}

func (c *syncClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fakeClock.Sleep(ctx, d)
}

func TestParallelWorkersShareOneUsageLimitWait(t *testing.T) {
	t.Parallel()
	clock := &syncClock{fakeClock: fakeClock{now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}}
	reset := clock.now.Add(30 * time.Minute)
	f := newParFixture(t, ids("A", "B")...)
	both := barrier(f.agent, 2)
	f.agent.work = func(ctx context.Context, id string, n int) error {
		if n == 1 {
			return both(ctx, id, n) // the first runs end once both run
		}
		return nil
	}
	limited := &limitAgent{treeAgent: f.agent, reset: reset}
	opts := Options{Dir: "/repo", Commit: true, MaxAttempts: 3, MaxWait: time.Hour}
	deps := Deps{Agent: limited, Plan: f.plan, Store: f.store, Repo: f.main, Now: clock.Now, Sleep: clock.Sleep,
		Jitter: func(time.Duration) time.Duration { return 0 },
		Emit:   func(e Event) { f.mu.Lock(); f.events = append(f.events, e); f.mu.Unlock() }}
	err := RunParallel(t.Context(), opts, deps, Parallel{Workers: 2, Worktrees: f.trees, Root: "/repo", Dir: "/repo/.ralph/worktrees"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"A": {"rate_limited", "task_done"}, "B": {"rate_limited", "task_done"}}
	if diff := cmp.Diff(want, f.store.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(clock.sleeps) != 1 || clock.sleeps[0] != 30*time.Minute {
		t.Errorf("sleeps = %v, want one wait of 30m for both workers", clock.sleeps)
	}
	for _, r := range f.store.history {
		if r.Outcome == state.OutcomeTaskDone && r.StartedAt.Before(reset) {
			t.Errorf("%s started again at %s, before the reset %s", r.TaskID, r.StartedAt, reset)
		}
	}
	for id, ts := range f.store.st.Tasks {
		if ts.Attempts != 0 {
			t.Errorf("%s: %d attempts counted, want none", id, ts.Attempts)
		}
	}
}

// limitAgent is treeAgent whose first run of each task hits the usage
// limit, resetting at reset.
type limitAgent struct {
	*treeAgent
	reset time.Time
}

func (a *limitAgent) Run(ctx context.Context, req agent.Request, sink agent.Sink) (agent.Result, error) {
	id := filepath.Base(req.Dir)
	a.mu.Lock()
	first := a.calls[id] == 0
	a.mu.Unlock()
	if !first {
		return a.treeAgent.Run(ctx, req, sink)
	}
	res, err := a.treeAgent.Run(ctx, req, sink)
	if err != nil || res.Interrupted {
		return res, err
	}
	return agent.Result{IsError: true, ErrorKind: agent.ErrorUsageLimit, ErrorText: "You've hit your limit", ResetAt: a.reset}, nil
}

func TestTextAgentWithoutTokensHasAnUnknownCostAndNoWarning(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, agent.Result{FinalText: "All finished. <promise> TASK_DONE </promise>", RawText: true})
	f.opts.Prices = tablePrices{model: "gpt-x", def: "gpt-x"}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.store.history {
		if r.CostSource != state.CostUnknown {
			t.Errorf("record %s: cost_source %q, want unknown", r.TaskID, r.CostSource)
		}
	}
	// Such an agent never reports usage: saying so every run is noise.
	if len(f.warns) > 0 {
		t.Errorf("warnings %q: want none", f.warns)
	}
}

func TestNoTokensCostNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, agent.Result{FinalText: "<promise>TASK_DONE</promise>"})
	f.opts.Prices = tablePrices{model: "gpt-x"}
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if r := f.store.history[0]; r.CostUSD != 0 || r.CostSource != state.CostEstimated || len(f.warns) > 0 {
		t.Errorf("record: $%v %q, warnings %q; want $0 estimated, no warning", r.CostUSD, r.CostSource, f.warns)
	}
}

func TestParallelQuotaHoldsNewStartsUntilTheReset(t *testing.T) {
	t.Parallel()
	clock := &syncClock{fakeClock: fakeClock{now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}}
	reset := clock.now.Add(30 * time.Minute)
	f := newParFixture(t, ids("A", "B", "C")...)
	both := barrier(f.agent, 2)
	f.agent.work = func(ctx context.Context, id string, n int) error {
		if id != "C" {
			return both(ctx, id, n)
		}
		return nil
	}
	quota := &quotaAgent{treeAgent: f.agent, window: agent.QuotaWindow{Window: "seven_day", Status: "allowed",
		Utilization: 90, HasUtilization: true, ResetsAt: reset}}
	opts := Options{Dir: "/repo", Commit: true, MaxAttempts: 3, MaxWait: time.Hour, QuotaReserve: 20}
	deps := Deps{Agent: quota, Plan: f.plan, Store: f.store, Repo: f.main, Now: clock.Now, Sleep: clock.Sleep,
		Jitter: func(time.Duration) time.Duration { return 0 }}
	err := RunParallel(t.Context(), opts, deps, Parallel{Workers: 2, Worktrees: f.trees, Root: "/repo", Dir: "/repo/.ralph/worktrees"})
	if err != nil {
		t.Fatal(err)
	}
	if len(clock.sleeps) != 1 || clock.sleeps[0] != 30*time.Minute {
		t.Errorf("sleeps = %v, want one wait of 30m", clock.sleeps)
	}
	for _, r := range f.store.history {
		if r.TaskID == "C" && r.StartedAt.Before(reset) {
			t.Errorf("C started at %s, before the window's reset %s", r.StartedAt, reset)
		}
	}
	for _, id := range []string{"A", "B", "C"} {
		if !f.plan.done(id) {
			t.Errorf("%s not done", id)
		}
	}
}

// quotaAgent is treeAgent whose runs of A and B report window.
type quotaAgent struct {
	*treeAgent
	window agent.QuotaWindow
}

func (a *quotaAgent) Run(ctx context.Context, req agent.Request, sink agent.Sink) (agent.Result, error) {
	res, err := a.treeAgent.Run(ctx, req, sink)
	if id := filepath.Base(req.Dir); id != "C" {
		res.Quota = []agent.QuotaWindow{a.window}
	}
	return res, err
}

// An iteration that would take a window past the line does not start
// either: the last one's use says how far the next may go.
func TestQuotaStepKeepsTheNextIterationBelowTheLine(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 11, 21, 12, 45, 0, 0, time.UTC)
	f := newFixture(t, []string{"A", "B", "C"},
		quotaResult("five_hour", "allowed", 70, reset), quotaResult("five_hour", "allowed", 76, reset), done())
	f.opts.QuotaReserve = 20
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	if len(f.clock.sleeps) != 1 || f.store.history[2].StartedAt.Before(reset) {
		t.Errorf("sleeps = %v, C started %s: want one wait for the reset before C (76%% + 6%% passes 80%%)",
			f.clock.sleeps, f.store.history[2].StartedAt)
	}
	if q := f.store.st.Quota["five_hour"]; q.Step == nil || math.Abs(*q.Step-6) > 1e-9 {
		t.Errorf("quota = %+v, want a step of 6%%", q)
	}
}

// The state written in the background is a copy: the run goes on noting
// windows while it is written (go test -race).
func TestQuotaSavedInTheBackgroundIsACopy(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)
	f := newFixture(t, []string{"A", "B", "C"}, quotaResult("five_hour", "allowed", 10, reset),
		quotaResult("five_hour", "allowed", 20, reset), quotaResult("seven_day", "allowed", 30, reset))
	slow := &slowStore{memStore: f.store}
	deps := f.deps(nil)
	deps.Store = slow
	if err := Run(t.Context(), f.opts, deps); err != nil {
		t.Fatal(err)
	}
	if q := slow.last().Quota; len(q) != 2 {
		t.Errorf("state.json quota = %+v, want both windows", q)
	}
}

// slowStore encodes the state as state.json would be, reading all of it.
type slowStore struct {
	*memStore
	mu sync.Mutex
	st state.State
}

func (s *slowStore) SaveState(st state.State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var back state.State
	if err := json.Unmarshal(b, &back); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = back
	return nil
}

func (s *slowStore) LoadState() (state.State, error) { return state.State{}, nil }

func (s *slowStore) last() state.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// Every history line names its attempt at the task, and the model the
// agent said it used (the one asked for when it says none).
func TestHistoryNamesAttemptAndModel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"},
		agent.Result{FinalText: "no marker", Model: "big-model-1"},
		agent.Result{IsError: true, ErrorKind: agent.ErrorTransient, ErrorText: "overloaded"},
		agent.Result{FinalText: "<promise>TASK_DONE</promise>"})
	f.opts.Model = "big"
	if err := f.run(t); err != nil {
		t.Fatal(err)
	}
	type line struct {
		Outcome state.Outcome
		Attempt int
		Model   string
	}
	var got []line
	for _, r := range f.store.history {
		got = append(got, line{r.Outcome, r.Attempt, r.Model})
	}
	// The transient error is not an attempt: the next iteration is still
	// the second.
	want := []line{{state.OutcomeNoMarker, 1, "big-model-1"}, {state.OutcomeTransientError, 2, "big"}, {state.OutcomeTaskDone, 2, "big"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}
