package ui

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/golden"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fakeControl records what the keys asked for.
type fakeControl struct {
	paused bool
	skips  []string
}

func (c *fakeControl) TogglePause() bool { c.paused = !c.paused; return c.paused }
func (c *fakeControl) Skip(id string)    { c.skips = append(c.skips, id) }

func demoTasks() []TaskItem {
	return []TaskItem{
		{ID: "DEMO-1", Title: "Create the greeting"},
		{ID: "DEMO-2", Title: "Greet by name"},
		{ID: "DEMO-3", Title: "Add a farewell"},
		{ID: "DEMO-4", Title: "Document the greeter"},
	}
}

func newTestModel(c Controller, w, h int) model {
	m := newModel(modelOptions{plan: "/tmp/demo/prd.json", agent: "demo", control: c,
		clock: func() time.Time { return t0 }, loc: time.UTC}, demoTasks())
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return next.(model)
}

func feed(t *testing.T, m model, events ...loop.Event) model {
	t.Helper()
	next, _ := m.Update(eventsMsg{events: events})
	return next.(model)
}

func at(m model, d time.Duration) model {
	next, _ := m.Update(tickMsg(t0.Add(d)))
	return next.(model)
}

func press(t *testing.T, m model, keys ...string) (model, []tea.Cmd) {
	t.Helper()
	var cmds []tea.Cmd
	for _, k := range keys {
		next, cmd := m.Update(keyMsg(k))
		m = next.(model)
		cmds = append(cmds, cmd)
	}
	return m, cmds
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// run executes a command as the program would and feeds back its message.
func run(t *testing.T, m model, cmd tea.Cmd) model {
	t.Helper()
	if cmd == nil {
		return m
	}
	msg := cmd()
	if msg == nil {
		return m
	}
	next, _ := m.Update(msg)
	return next.(model)
}

func ev(kind loop.EventKind, d time.Duration) loop.Event {
	return loop.Event{Kind: kind, Time: t0.Add(d), RunID: "20261121-120000-abc123"}
}

func agentEv(d time.Duration, a agent.Event) loop.Event {
	e := ev(loop.EventAgent, d)
	e.Iteration = 2
	e.Agent = &a
	return e
}

// midRun is a run whose first task is done and whose second is being
// worked on.
func midRun() []loop.Event {
	started := ev(loop.EventRunStarted, 0)
	started.MaxIterations = 20
	started.Message = "agent demo, runner ownership"
	started.Plan = &loop.PlanProgress{Path: "/tmp/demo/prd.json", Format: "prd.json", Total: 4}

	it1 := ev(loop.EventIterationStarted, time.Second)
	it1.Iteration, it1.MaxIterations = 1, 20
	it1.Task = &loop.TaskRef{ID: "DEMO-1", Title: "Create the greeting"}
	end1 := ev(loop.EventIterationEnded, 9*time.Second)
	end1.Iteration, end1.Task = 1, it1.Task
	end1.Record = &state.Record{Iteration: 1, TaskID: "DEMO-1", Outcome: state.OutcomeTaskDone, DurationMS: 8000,
		InputTokens: 3200, OutputTokens: 640, CacheReadTokens: 12000, CostUSD: 0.0213, ContextUsedPercent: 7.6,
		Commit: "3f2a9c1d0e"}
	end1.Plan = &loop.PlanProgress{Total: 4, Done: 1}
	end1.Totals = &state.Totals{Iterations: 1, TasksDone: 1, InputTokens: 3200, OutputTokens: 640, CacheReadTokens: 12000, CostUSD: 0.0213}

	it2 := ev(loop.EventIterationStarted, 10*time.Second)
	it2.Iteration, it2.MaxIterations = 2, 20
	it2.Task = &loop.TaskRef{ID: "DEMO-2", Title: "Greet by name"}
	usage := agent.Usage{InputTokens: 2100, OutputTokens: 300}
	return []loop.Event{started, it1, end1, it2,
		agentEv(11*time.Second, agent.Event{Kind: agent.EventText, Text: "I'll extend Greet to take a name, then add a table-driven test for it so the behaviour is pinned down."}),
		agentEv(12*time.Second, agent.Event{Kind: agent.EventToolCall, Tool: "Read", ToolInput: "greet.go"}),
		agentEv(12*time.Second, agent.Event{Kind: agent.EventToolResult, Tool: "Read", Text: "package greet\n\nfunc Greet() string { return \"Hello, world!\" }"}),
		agentEv(13*time.Second, agent.Event{Kind: agent.EventToolCall, Tool: "Edit", ToolInput: "greet.go"}),
		agentEv(14*time.Second, agent.Event{Kind: agent.EventToolCall, Tool: "Bash", ToolInput: "go test ./..."}),
		agentEv(15*time.Second, agent.Event{Kind: agent.EventToolResult, Tool: "Bash", Text: "--- FAIL: TestGreetName (0.00s)\n    greet_test.go:14: Greet(\"Ada\") = \"Hello, Ada\", want \"Hello, Ada!\""}),
		agentEv(15*time.Second, agent.Event{Kind: agent.EventUsage, Usage: &usage}),
	}
}

func TestGoldenViews(t *testing.T) {
	t.Parallel()
	waiting := func(m model) model {
		until := t0.Add(5*time.Minute + 30*time.Second)
		end := ev(loop.EventIterationEnded, 20*time.Second)
		end.Iteration, end.Task = 2, &loop.TaskRef{ID: "DEMO-2", Title: "Greet by name"}
		end.Record = &state.Record{Iteration: 2, TaskID: "DEMO-2", Outcome: state.OutcomeRateLimited, DurationMS: 10000,
			Error: "You've hit your limit · resets 12:05pm (UTC)"}
		w := ev(loop.EventWaiting, 20*time.Second)
		w.Iteration, w.Until, w.Message = 2, &until, "usage limit: You've hit your limit · resets 12:05pm (UTC)"
		return at(feed(t, m, end, w), 90*time.Second)
	}
	paused := func(m model) model {
		m, cmds := press(t, m, "p")
		m = run(t, m, cmds[0])
		end := ev(loop.EventIterationEnded, 20*time.Second)
		end.Iteration, end.Task = 2, &loop.TaskRef{ID: "DEMO-2", Title: "Greet by name"}
		end.Record = &state.Record{Iteration: 2, TaskID: "DEMO-2", Outcome: state.OutcomeTaskFailed, DurationMS: 10000,
			Error: "TestGreetName fails: the greeting lacks its exclamation mark"}
		p := ev(loop.EventPaused, 21*time.Second)
		p.Message = "paused after iteration 2"
		return at(feed(t, m, end, p), 25*time.Second)
	}
	scenes := []struct {
		name  string
		setup func(model) model
	}{
		{"running", func(m model) model { return at(m, 16*time.Second) }},
		{"waiting", waiting},
		{"paused", paused},
	}
	for _, sc := range scenes {
		for _, size := range [][2]int{{80, 24}, {120, 40}} {
			name := fmt.Sprintf("%s-%dx%d", sc.name, size[0], size[1])
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				m := feed(t, newTestModel(&fakeControl{}, size[0], size[1]), midRun()...)
				m = sc.setup(m)
				got := m.render()
				checkFits(t, got, size[0], size[1])
				golden.Check(t, filepath.Join("testdata", "tui", name+".golden"), got)
			})
		}
	}
}

// checkFits fails when the screen is not exactly h lines of at most w
// columns.
func checkFits(t *testing.T, screen string, w, h int) {
	t.Helper()
	lines := strings.Split(screen, "\n")
	if len(lines) != h {
		t.Errorf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("line %d is %d columns wide, want at most %d: %q", i+1, n, w, l)
		}
	}
}

func TestResizeNeverBreaksTheLayout(t *testing.T) {
	t.Parallel()
	for _, color := range []bool{false, true} {
		for w := 1; w <= 130; w += 7 {
			for h := 1; h <= 45; h += 4 {
				m := newModel(modelOptions{plan: "prd.json", agent: "demo", color: color, control: &fakeControl{},
					clock: func() time.Time { return t0 }}, demoTasks())
				m = feed(t, m, midRun()...)
				next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
				checkFits(t, next.(model).render(), w, h)
				// The pager, too.
				pm := run(t, next.(model), func() tea.Msg {
					return transcriptMsg{iteration: 2, lines: []string{strings.Repeat("long line ", 30), "short"}}
				})
				checkFits(t, pm.render(), w, h)
			}
		}
	}
}

func TestNoColorMeansNoEscapes(t *testing.T) {
	t.Parallel()
	m := feed(t, newTestModel(&fakeControl{}, 100, 30), midRun()...)
	if got := m.render(); strings.Contains(got, "\x1b[") {
		t.Errorf("view without color holds escape sequences:\n%q", got)
	}
	m.opts.color = true
	m.pal = newPalette(true)
	if got := m.render(); !strings.Contains(got, "\x1b[") {
		t.Error("view with color holds no escape sequences")
	}
}

func TestTaskStatesFollowTheRun(t *testing.T) {
	t.Parallel()
	m := feed(t, newTestModel(&fakeControl{}, 80, 24), midRun()...)
	states := func(m model) []TaskState {
		var s []TaskState
		for _, r := range m.tasks {
			s = append(s, r.State)
		}
		return s
	}
	if diff := cmp.Diff([]TaskState{TaskDone, TaskRunning, TaskOpen, TaskOpen}, states(m)); diff != "" {
		t.Errorf("mid run (-want +got):\n%s", diff)
	}
	until := t0.Add(time.Minute)
	w := ev(loop.EventWaiting, 20*time.Second)
	w.Until = &until
	m = feed(t, m, w)
	if got := m.tasks[1].State; got != TaskWaiting {
		t.Errorf("waiting: DEMO-2 is %s", got)
	}
	failed := ev(loop.EventTaskFailed, 30*time.Second)
	failed.Task = &loop.TaskRef{ID: "DEMO-2"}
	m = feed(t, m, failed)
	ended := ev(loop.EventRunEnded, 40*time.Second)
	ended.Status = "stuck"
	m = feed(t, m, ended)
	if diff := cmp.Diff([]TaskState{TaskDone, TaskFailed, TaskOpen, TaskOpen}, states(m)); diff != "" {
		t.Errorf("after the run (-want +got):\n%s", diff)
	}
	if m.phase != phaseEnded || !strings.Contains(m.render(), "■ stuck") {
		t.Errorf("the end is not shown:\n%s", m.render())
	}
}

func TestPauseAndSkipKeysSteerTheRun(t *testing.T) {
	t.Parallel()
	c := &fakeControl{}
	m := feed(t, newTestModel(c, 80, 24), midRun()...)

	m, cmds := press(t, m, "p")
	m = run(t, m, cmds[0])
	if !c.paused || !m.pausing || !strings.Contains(m.render(), "pausing after this iteration") {
		t.Fatalf("p: paused=%v pausing=%v\n%s", c.paused, m.pausing, m.render())
	}
	m = feed(t, m, ev(loop.EventPaused, 20*time.Second))
	if !strings.Contains(m.render(), "‖ paused") || !strings.Contains(m.render(), "p resume") {
		t.Errorf("paused is not shown:\n%s", m.render())
	}
	m, cmds = press(t, m, "p")
	m = run(t, m, cmds[0])
	m = feed(t, m, ev(loop.EventResumed, 30*time.Second))
	if c.paused || m.pausing || m.phase != phaseRunning {
		t.Errorf("second p: paused=%v pausing=%v phase=%v", c.paused, m.pausing, m.phase)
	}

	m, cmds = press(t, m, "s")
	run(t, m, cmds[0])
	if diff := cmp.Diff([]string{"DEMO-2"}, c.skips); diff != "" {
		t.Errorf("skips (-want +got):\n%s", diff)
	}
	if m.tasks[1].State != TaskSkipping {
		t.Errorf("DEMO-2 is %s, want skipping", m.tasks[1].State)
	}
	sk := ev(loop.EventTaskSkipped, 31*time.Second)
	sk.Task = &loop.TaskRef{ID: "DEMO-2"}
	m = feed(t, m, sk)
	if m.tasks[1].State != TaskSkipped {
		t.Errorf("DEMO-2 is %s, want skipped", m.tasks[1].State)
	}
}

func TestStopTwiceForces(t *testing.T) {
	t.Parallel()
	stopped := 0
	m := newModel(modelOptions{plan: "prd.json", agent: "demo", stop: func() { stopped++ },
		clock: func() time.Time { return t0 }}, demoTasks())
	m = feed(t, m, midRun()...)

	m, cmds := press(t, m, "q")
	run(t, m, cmds[0])
	if stopped != 1 || m.quitting {
		t.Fatalf("first q: stopped=%d quitting=%v", stopped, m.quitting)
	}
	if !strings.Contains(m.render(), "q or ctrl+c again to force") {
		t.Errorf("stopping is not shown:\n%s", m.render())
	}
	m, cmds = press(t, m, "ctrl+c")
	if !m.quitting || !m.forced {
		t.Errorf("second press: quitting=%v forced=%v", m.quitting, m.forced)
	}
	if _, ok := cmds[0]().(tea.QuitMsg); !ok {
		t.Error("second press does not quit")
	}
}

func TestRunEndQuits(t *testing.T) {
	t.Parallel()
	m := newTestModel(nil, 80, 24)
	next, cmd := m.Update(eventsMsg{events: midRun(), closed: true})
	if !next.(model).quitting || cmd == nil {
		t.Fatal("a closed inbox does not quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("the command is not tea.Quit")
	}
	if next.(model).forced {
		t.Error("a normal end is not forced")
	}
}

func TestActivityScrollsBackAndFollows(t *testing.T) {
	t.Parallel()
	m := newTestModel(nil, 80, 12)
	m = feed(t, m, midRun()...)
	var events []loop.Event
	for i := range 40 {
		events = append(events, agentEv(20*time.Second, agent.Event{Kind: agent.EventText, Text: "line " + strconv.Itoa(i)}))
	}
	m = feed(t, m, events...)
	if !strings.Contains(m.render(), "line 39") {
		t.Fatalf("the newest line is not shown:\n%s", m.render())
	}
	m, _ = press(t, m, "k", "k", "k", "up")
	if strings.Contains(m.render(), "line 39") || !strings.Contains(m.render(), "line 35") {
		t.Errorf("scrolled back 4, view:\n%s", m.render())
	}
	// New lines do not move a reader who scrolled back.
	m = feed(t, m, agentEv(21*time.Second, agent.Event{Kind: agent.EventText, Text: "line 40"}))
	if !strings.Contains(m.render(), "line 35") || strings.Contains(m.render(), "line 40") {
		t.Errorf("a new line moved the view:\n%s", m.render())
	}
	m, _ = press(t, m, "G")
	if !strings.Contains(m.render(), "line 40") {
		t.Errorf("G does not follow again:\n%s", m.render())
	}
}

func TestPagerOpensScrollsAndCloses(t *testing.T) {
	t.Parallel()
	var asked []int
	m := newTestModel(nil, 60, 10)
	m.opts.transcript = func(runID string, iteration int) ([]string, error) {
		asked = append(asked, iteration)
		var lines []string
		for i := range 50 {
			lines = append(lines, "transcript line "+strconv.Itoa(i))
		}
		return lines, nil
	}
	m = feed(t, m, midRun()...)
	m, cmds := press(t, m, "l")
	m = run(t, m, cmds[0])
	if m.pager == nil {
		t.Fatal("l does not open the pager")
	}
	if diff := cmp.Diff([]int{2}, asked); diff != "" {
		t.Errorf("iterations read (-want +got):\n%s", diff)
	}
	view := m.render()
	checkFits(t, view, 60, 10)
	if !strings.Contains(view, "transcript line 49") || !strings.Contains(view, "iteration 2") {
		t.Errorf("the pager does not open at the end:\n%s", view)
	}
	m, _ = press(t, m, "g")
	if !strings.Contains(m.render(), "transcript line 0") {
		t.Errorf("g does not go to the top:\n%s", m.render())
	}
	m, _ = press(t, m, "j", "j")
	if strings.Contains(m.render(), "transcript line 0\n") || !strings.Contains(m.render(), "transcript line 2") {
		t.Errorf("j does not scroll:\n%s", m.render())
	}
	m, _ = press(t, m, "esc")
	if m.pager != nil {
		t.Error("esc does not close the pager")
	}
	// q in the pager closes the pager, not the run.
	m, cmds = press(t, m, "l")
	m = run(t, m, cmds[0])
	m, _ = press(t, m, "q")
	if m.pager != nil || m.stopping != 0 {
		t.Errorf("q in the pager: pager open=%v stopping=%d", m.pager != nil, m.stopping)
	}
}

func TestInboxCoalescesWithoutBlocking(t *testing.T) {
	t.Parallel()
	in := newInbox()
	// Nobody reads while these go in: a put that blocked would hang here.
	for i := range 10 * maxInbox {
		e := loop.Event{Kind: loop.EventAgent, Iteration: i}
		if i%1000 == 0 {
			e = loop.Event{Kind: loop.EventIterationStarted, Iteration: i}
		}
		in.put(e)
	}
	events, closed := in.next()
	if closed {
		t.Error("closed before close")
	}
	if len(events) > maxInbox {
		t.Errorf("%d events kept, want at most %d", len(events), maxInbox)
	}
	starts := 0
	for _, e := range events {
		if e.Kind == loop.EventIterationStarted {
			starts++
		}
	}
	if starts != 10*maxInbox/1000+1 {
		t.Errorf("%d iteration starts kept, want every one", starts)
	}
	if last := events[len(events)-1]; last.Iteration != 10*maxInbox-1 {
		t.Errorf("the newest event was dropped: last is %d", last.Iteration)
	}
	in.put(loop.Event{Kind: loop.EventRunEnded})
	in.close()
	events, closed = in.next()
	if !closed || len(events) != 1 {
		t.Errorf("after close: %d events, closed=%v", len(events), closed)
	}
	// Once closed, next never blocks.
	if _, closed := in.next(); !closed {
		t.Error("closed inbox not closed")
	}
}

// syncBuffer is a buffer safe for the program's writer goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The whole renderer: events in through Handle (never blocking), the
// program draws them, Close ends it and prints the summary.
func TestTUIRendererShowsEventsAndSummarizes(t *testing.T) {
	t.Parallel()
	var screen, summary syncBuffer
	tui := NewTUI(TUIOptions{Plan: "prd.json", Agent: "demo", Tasks: demoTasks(),
		In: strings.NewReader(""), Out: &screen, Env: []string{"TERM=xterm", "NO_COLOR=1"}, Summary: &summary,
		size: [2]int{100, 30}})
	for _, e := range midRun() {
		tui.Handle(e)
	}
	ended := ev(loop.EventRunEnded, time.Minute)
	ended.Status, ended.Message = "done", "all tasks done"
	ended.Plan = &loop.PlanProgress{Total: 4, Done: 4}
	ended.Totals = &state.Totals{Iterations: 2}
	tui.Handle(ended)
	done := make(chan struct{})
	go func() { tui.Close(nil); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if s := screen.String(); !strings.Contains(s, "DEMO-2") || !strings.Contains(s, "Greet by name") {
		t.Errorf("the screen never showed the tasks:\n%q", s)
	}
	want := "ralph done: all tasks done · 4/4 tasks done · 2 iterations"
	if s := summary.String(); !strings.Contains(s, want) || !strings.Contains(s, "✓ DEMO-1  Create the greeting") {
		t.Errorf("summary:\n%s", s)
	}
}

// An iteration's line shows what checked the claim: the reviewer's
// verdict and who gave it, the guard's findings when there are some.
func TestIterationLineShowsTheVerdict(t *testing.T) {
	t.Parallel()
	ended := ev(loop.EventIterationEnded, 10*time.Second)
	ended.Task = &loop.TaskRef{ID: "DEMO-1"}
	ended.Record = &state.Record{TaskID: "DEMO-1", Outcome: state.OutcomeReviewRejected, DurationMS: 1000,
		Guard:  &state.GuardEvidence{Mode: "warn", Findings: []state.GuardFinding{{Rule: "skip-added", File: "a_test.go", Line: 3}}, Blocking: 1},
		Review: &state.ReviewEvidence{Verdict: "REVISE", Agent: "codex", Model: "o3"}}
	m := feed(t, newTestModel(&fakeControl{}, 160, 30), ev(loop.EventRunStarted, 0), ended)
	view := m.render()
	for _, want := range []string{"✗ review_rejected", "guard: 1 finding", "review REVISE by codex/o3"} {
		if !strings.Contains(view, want) {
			t.Errorf("the view lacks %q:\n%s", want, view)
		}
	}
}

// The header says which sandbox the run is in, and says it in yellow
// when there is none.
func TestHeaderShowsTheSandbox(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sandbox *state.Sandbox
		want    string
	}{
		{&state.Sandbox{Mode: "auto", Kind: "bwrap"}, "sandbox bwrap"},
		{&state.Sandbox{Mode: "auto", Kind: "none", Warning: "bwrap cannot run here"}, "no sandbox"},
		{&state.Sandbox{Mode: "none", Kind: "none"}, "no sandbox"},
	} {
		started := ev(loop.EventRunStarted, 0)
		started.Sandbox = tc.sandbox
		m := feed(t, newTestModel(&fakeControl{}, 160, 30), started)
		if header := strings.Join(m.header(160), "\n"); !strings.Contains(header, tc.want) {
			t.Errorf("%+v: the header lacks %q:\n%s", *tc.sandbox, tc.want, header)
		}
	}
}

// The header shows the run's cost with its source and the account's usage
// windows as the agent last reported them.
func TestHeaderShowsCostSourceAndQuota(t *testing.T) {
	t.Parallel()
	ended := ev(loop.EventIterationEnded, 10*time.Second)
	ended.Task = &loop.TaskRef{ID: "DEMO-1"}
	ended.Record = &state.Record{TaskID: "DEMO-1", Outcome: state.OutcomeTaskDone, DurationMS: 1000,
		InputTokens: 1000, CostUSD: 1.55, CostSource: state.CostEstimated}
	ended.Totals = &state.Totals{Iterations: 1, CostUSD: 1.55, CostSource: state.CostEstimated}
	u := 85.0
	quota := ev(loop.EventQuota, 11*time.Second)
	quota.Quota = map[string]state.QuotaWindow{"seven_day": {Status: "allowed_warning", Utilization: &u}}
	quota.Message = "seven_day allowed_warning, 85% used"
	m := feed(t, newTestModel(&fakeControl{}, 160, 30), ev(loop.EventRunStarted, 0), ended, quota)
	header := strings.Join(m.header(160), "\n")
	for _, want := range []string{"cost ~$1.5500", "seven_day 85% (warning)"} {
		if !strings.Contains(header, want) {
			t.Errorf("the header lacks %q:\n%s", want, header)
		}
	}
	if view := m.render(); !strings.Contains(view, "◔ quota: seven_day allowed_warning, 85% used") {
		t.Errorf("the activity lacks the quota line:\n%s", view)
	}
}

// answerControl is a fakeControl that also takes answers.
type answerControl struct {
	fakeControl
	answers []loop.Answer
}

func (c *answerControl) Answer(a loop.Answer) { c.answers = append(c.answers, a) }

func TestQuestionIsShownAndAnsweredWithTheAKey(t *testing.T) {
	t.Parallel()
	c := &answerControl{}
	m := feed(t, newTestModel(c, 100, 24), midRun()...)
	q := ev(loop.EventQuestion, 20*time.Second)
	q.Task, q.Message = &loop.TaskRef{ID: "DEMO-2"}, "hello or hi?"
	m = feed(t, m, q)
	if out := m.render(); !strings.Contains(out, "DEMO-2 asks: hello or hi?") || !strings.Contains(out, "a answer") {
		t.Fatalf("the question is not shown:\n%s", out)
	}
	m, _ = press(t, m, "a", "h", "i", "!")
	next, _ := m.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	m = next.(model)
	if out := m.render(); !strings.Contains(out, "answer DEMO-2> hi█") {
		t.Fatalf("the answer being typed is not shown:\n%s", out)
	}
	next, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	m = run(t, next.(model), cmd)
	if diff := cmp.Diff([]loop.Answer{{Task: "DEMO-2", Text: "hi", By: "tui"}}, c.answers); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if m.answer != nil {
		t.Error("still typing after enter")
	}
}

// TestAgentSwitchedIsShown: the activity says who stands in for whom.
func TestAgentSwitchedIsShown(t *testing.T) {
	t.Parallel()
	sw := ev(loop.EventAgentSwitched, 5*time.Second)
	sw.From, sw.To, sw.Message = "claude", "codex", "codex stands in for claude"
	m := feed(t, newTestModel(&fakeControl{}, 160, 30), ev(loop.EventRunStarted, 0), sw)
	if view := m.render(); !strings.Contains(view, "⇄ claude → codex: codex stands in for claude") {
		t.Errorf("the activity lacks the switch:\n%s", view)
	}
}
