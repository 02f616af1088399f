package ui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
)

// TaskState is how the TUI shows a task.
type TaskState string

// The states of a task row.
const (
	TaskOpen     TaskState = "open"
	TaskRunning  TaskState = "running"
	TaskDone     TaskState = "done"
	TaskFailed   TaskState = "failed"
	TaskWaiting  TaskState = "waiting"
	TaskSkipped  TaskState = "skipped"
	TaskSkipping TaskState = "skipping" // asked to skip; the iteration is still running
)

// TaskItem is one task of the plan as the TUI starts with it.
type TaskItem struct {
	ID    string
	Title string
	State TaskState
}

// Controller is what the TUI's keys steer: loop.Steering.
type Controller interface {
	TogglePause() bool
	Skip(id string)
}

// answerer is a Controller that also takes answers to the agents'
// questions (the a key).
type answerer interface {
	Answer(a loop.Answer)
}

// Bounds of what the model keeps.
const (
	maxActivity = 1000 // activity entries kept for scrolling back
	maxPager    = 20000
)

// runPhase is what the run is doing, as the header says it.
type runPhase int

const (
	phaseStarting runPhase = iota
	phaseRunning
	phaseWaiting
	phasePaused
	phaseEnded
)

// activityKind styles an activity entry.
type activityKind int

const (
	actText activityKind = iota
	actTool
	actResult
	actError
	actWarning
	actOutcomeGood
	actOutcomeBad
	actOutcome
	actIteration
	actInfo
)

type activity struct {
	kind activityKind
	text string
}

// model is the TUI's state. Update is pure: everything that does I/O or
// touches the run (stop, pause, skip, reading the transcript) is a tea.Cmd.
type model struct {
	opts   modelOptions
	pal    palette
	width  int
	height int
	now    time.Time

	runID     string
	started   time.Time
	phase     runPhase
	iteration int
	maxIter   int
	current   string // the task of the current iteration
	tasks     []taskRow
	planDone  int
	planTotal int
	totals    state.Totals
	// quota is the account's usage windows as last reported.
	quota     map[string]state.QuotaWindow
	iterUsage agent.Usage // the current iteration's tokens so far
	ctxPct    float64
	waitUntil time.Time
	waitWhy   string
	endStatus string
	endMsg    string
	// sandbox is the sandbox in force, from the run_started event.
	sandbox *state.Sandbox

	// question is the task whose question waits for an answer; answer
	// the answer being typed after a, nil when not typing.
	question string
	answer   []rune

	pausing  bool // the user asked to pause after this iteration
	stopping int  // how many times the user asked to stop

	activity []activity
	scroll   int // entries scrolled back from the newest; 0 follows

	pager *pager

	quitting bool
	forced   bool
}

// modelOptions are the model's fixed inputs.
type modelOptions struct {
	plan    string
	agent   string
	model   string
	color   bool
	control Controller
	stop    func()
	// transcript reads an iteration's raw output as readable lines.
	transcript func(runID string, iteration int) ([]string, error)
	inbox      *inbox
	clock      func() time.Time
	loc        *time.Location // for clock times shown (tests: UTC)
}

type taskRow struct {
	TaskItem
	attempts int
}

// Messages.
type (
	eventsMsg struct {
		events []loop.Event
		closed bool // the run is over: no more events will come
	}
	tickMsg       time.Time
	pausedMsg     bool
	transcriptMsg struct {
		iteration int
		lines     []string
		err       error
		reload    bool
	}
)

func newModel(opts modelOptions, tasks []TaskItem) model {
	if opts.clock == nil {
		opts.clock = time.Now
	}
	if opts.loc == nil {
		opts.loc = time.Local
	}
	m := model{opts: opts, pal: newPalette(opts.color), width: 80, height: 24, now: opts.clock()}
	for _, t := range tasks {
		if t.State == "" {
			t.State = TaskOpen
		}
		m.tasks = append(m.tasks, taskRow{TaskItem: t})
	}
	m.planTotal = len(tasks)
	for _, t := range tasks {
		if t.State == TaskDone {
			m.planDone++
		}
	}
	return m
}

func (m model) Init() tea.Cmd {
	return tea.Batch(m.waitEvents(), m.tick())
}

func (m model) tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m model) waitEvents() tea.Cmd {
	if m.opts.inbox == nil {
		return nil
	}
	in := m.opts.inbox
	return func() tea.Msg {
		events, closed := in.next()
		return eventsMsg{events: events, closed: closed}
	}
}

func (m model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		if msg.Width <= 0 || msg.Height <= 0 {
			return m, nil // not a terminal: keep the last size
		}
		m.width, m.height = msg.Width, msg.Height
		if m.pager != nil {
			m.pager.resize(m.width, m.height)
		}
		return m, nil
	case tickMsg:
		m.now = time.Time(msg)
		var cmds []tea.Cmd
		cmds = append(cmds, m.tick())
		if m.pager != nil && m.pager.iteration == m.iteration && m.phase != phaseEnded && m.pager.atBottom() {
			cmds = append(cmds, m.loadTranscript(m.pager.iteration, true))
		}
		return m, tea.Batch(cmds...)
	case eventsMsg:
		m.now = m.opts.clock()
		for _, e := range msg.events {
			m.apply(e)
		}
		if msg.closed {
			m.quitting = true
			return m, tea.Quit
		}
		return m, m.waitEvents()
	case pausedMsg:
		m.pausing = bool(msg)
		if !m.pausing && m.phase == phasePaused {
			m.phase = phaseRunning
		}
		return m, nil
	case transcriptMsg:
		return m.openTranscript(msg), nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// key handles a key press. Ctrl-C stops from anywhere; the pager takes
// the other keys while it is open.
func (m model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	s := k.String()
	if s == "ctrl+c" || (m.pager == nil && s == "q") {
		return m.stop()
	}
	if m.answer != nil {
		return m.typeAnswer(k)
	}
	if m.pager != nil {
		if s == "esc" || s == "q" || s == "l" {
			m.pager = nil
			return m, nil
		}
		m.pager.key(k)
		return m, nil
	}
	switch s {
	case "p":
		if m.opts.control == nil || m.phase == phaseEnded {
			return m, nil
		}
		c := m.opts.control
		return m, func() tea.Msg { return pausedMsg(c.TogglePause()) }
	case "s":
		return m.skip()
	case "a":
		if _, ok := m.opts.control.(answerer); ok && m.question != "" && m.phase != phaseEnded {
			m.answer = []rune{}
		}
		return m, nil
	case "l", "enter":
		if m.iteration == 0 {
			return m, nil
		}
		return m, m.loadTranscript(m.iteration, false)
	case "up", "k":
		m.scroll++
	case "down", "j":
		m.scroll--
	case "pgup", "b":
		m.scroll += max(1, m.layout().activity-1)
	case "pgdown", "f":
		m.scroll -= max(1, m.layout().activity-1)
	case "home", "g":
		m.scroll = 1 << 30
	case "end", "G":
		m.scroll = 0
	}
	m.scroll = max(0, min(m.scroll, len(m.activity)-1))
	return m, nil
}

// stop asks the run to stop; a second press forces: the TUI quits, and
// its owner kills the agent and exits.
func (m model) stop() (tea.Model, tea.Cmd) {
	m.stopping++
	if m.stopping >= 2 || m.phase == phaseEnded {
		m.forced = m.phase != phaseEnded
		m.quitting = true
		return m, tea.Quit
	}
	stop := m.opts.stop
	if stop == nil {
		return m, nil
	}
	return m, func() tea.Msg { stop(); return nil }
}

// skip asks the loop to set the current task aside once its iteration
// ends.
func (m model) skip() (tea.Model, tea.Cmd) {
	if m.opts.control == nil || m.current == "" || m.phase == phaseEnded {
		return m, nil
	}
	id := m.current
	row := m.row(id)
	if row == nil || row.State == TaskDone || row.State == TaskSkipped {
		return m, nil
	}
	row.State = TaskSkipping
	c := m.opts.control
	return m, func() tea.Msg { c.Skip(id); return nil }
}

func (m model) loadTranscript(iteration int, reload bool) tea.Cmd {
	read := m.opts.transcript
	runID := m.runID
	if read == nil || runID == "" {
		return nil
	}
	return func() tea.Msg {
		lines, err := read(runID, iteration)
		return transcriptMsg{iteration: iteration, lines: lines, err: err, reload: reload}
	}
}

func (m model) openTranscript(msg transcriptMsg) model {
	lines := msg.lines
	if msg.err != nil {
		lines = []string{"cannot read the transcript: " + msg.err.Error()}
	}
	if len(lines) == 0 {
		lines = []string{"(no output yet)"}
	}
	if msg.reload {
		if m.pager != nil && m.pager.iteration == msg.iteration {
			m.pager.setLines(lines)
		}
		return m
	}
	title := fmt.Sprintf("transcript · iteration %d", msg.iteration)
	if m.current != "" {
		title += " · " + m.current
	}
	m.pager = newPager(title, msg.iteration, lines, m.width, m.height)
	return m
}

func (m *model) row(id string) *taskRow {
	for i := range m.tasks {
		if m.tasks[i].ID == id {
			return &m.tasks[i]
		}
	}
	return nil
}

// apply folds one loop event into the model.
func (m *model) apply(e loop.Event) {
	if e.RunID != "" {
		m.runID = e.RunID
	}
	if e.Plan != nil {
		m.planDone, m.planTotal = e.Plan.Done, e.Plan.Total
	}
	if e.Totals != nil {
		m.totals = *e.Totals
	}
	switch e.Kind {
	case loop.EventRunStarted:
		m.started = e.Time
		m.sandbox = e.Sandbox
		m.maxIter = e.MaxIterations
		m.phase = phaseRunning
		m.add(actInfo, fmt.Sprintf("run %s started · %s", e.RunID, e.Message))
	case loop.EventIterationStarted:
		m.iterationStarted(e)
	case loop.EventAgent:
		m.agentEvent(e.Agent)
	case loop.EventIterationEnded:
		m.iterationEnded(e)
	case loop.EventTaskFailed:
		if r := m.row(e.Task.ID); r != nil {
			r.State = TaskFailed
		}
		m.add(actOutcomeBad, fmt.Sprintf("✗ %s failed: %s", e.Task.ID, e.Message))
	case loop.EventWaiting:
		m.phase = phaseWaiting
		m.waitUntil = time.Time{}
		if e.Until != nil {
			m.waitUntil = *e.Until
		}
		m.waitWhy = e.Message
		if r := m.row(m.current); r != nil && (r.State == TaskRunning || r.State == TaskOpen) {
			r.State = TaskWaiting
		}
		m.add(actWarning, "◔ waiting: "+e.Message)
	case loop.EventQuestion:
		if r := m.row(e.Task.ID); r != nil {
			r.State = TaskWaiting
		}
		m.add(actWarning, fmt.Sprintf("? %s asks: %s", e.Task.ID, e.Message))
		m.add(actInfo, "answer with a: type the answer, enter sends it (or `ralph answer TEXT`, or ralph serve's page)")
		m.question = e.Task.ID
	case loop.EventAnswered:
		if r := m.row(e.Task.ID); r != nil && r.State == TaskWaiting {
			r.State = TaskOpen
		}
		if m.question == e.Task.ID {
			m.question = ""
		}
		m.add(actInfo, fmt.Sprintf("✎ %s answered: %s", e.Task.ID, e.Message))
	case loop.EventWarning:
		m.add(actWarning, "! "+e.Message)
	case loop.EventQuota:
		m.quota = e.Quota
		m.add(actInfo, "◔ quota: "+e.Message)
	case loop.EventReview:
		m.add(actInfo, "⌕ "+e.Message)
	case loop.EventAgentSwitched:
		m.add(actWarning, fmt.Sprintf("⇄ %s → %s: %s", e.From, e.To, e.Message))
	case loop.EventPaused:
		m.phase = phasePaused
		m.add(actInfo, "paused: press p to resume")
	case loop.EventResumed:
		m.phase = phaseRunning
		m.pausing = false
		m.add(actInfo, "resumed")
	case loop.EventTaskSkipped:
		if r := m.row(e.Task.ID); r != nil {
			r.State = TaskSkipped
		}
		m.add(actInfo, fmt.Sprintf("⏭ %s skipped for the rest of this run", e.Task.ID))
	case loop.EventRunEnded:
		m.phase = phaseEnded
		m.endStatus, m.endMsg = e.Status, e.Message
		m.current = ""
		for i := range m.tasks {
			if s := m.tasks[i].State; s == TaskRunning || s == TaskWaiting || s == TaskSkipping {
				m.tasks[i].State = TaskOpen
			}
		}
		m.add(actInfo, "run "+statusLine(e.Status, e.Message))
	case loop.EventWorker:
		// --worker writes lines, never the TUI; shown if one comes.
		m.add(actInfo, e.Message)
	case loop.EventLeftOut:
		lines := make([]string, len(e.LeftOut))
		for i, l := range e.LeftOut {
			lines[i] = l.Line
		}
		m.add(actWarning, "⊘ "+e.Message+" "+strings.Join(lines, " "))
	}
}

func (m *model) iterationStarted(e loop.Event) {
	m.phase = phaseRunning
	m.iteration = e.Iteration
	if e.MaxIterations > 0 {
		m.maxIter = e.MaxIterations
	}
	m.iterUsage = agent.Usage{}
	m.waitUntil, m.waitWhy = time.Time{}, ""
	// A task left waiting by a usage limit is open again.
	for i := range m.tasks {
		if m.tasks[i].State == TaskWaiting || m.tasks[i].State == TaskRunning {
			m.tasks[i].State = TaskOpen
		}
	}
	if e.Task == nil {
		return
	}
	m.current = e.Task.ID
	r := m.row(e.Task.ID)
	if r == nil {
		m.tasks = append(m.tasks, taskRow{TaskItem: TaskItem{ID: e.Task.ID, Title: e.Task.Title}})
		r = &m.tasks[len(m.tasks)-1]
	}
	if r.State != TaskSkipping {
		r.State = TaskRunning
	}
	r.attempts++
	m.add(actIteration, fmt.Sprintf("iteration %d · %s %s", e.Iteration, e.Task.ID, e.Task.Title))
}

func (m *model) agentEvent(a *agent.Event) {
	if a == nil {
		return
	}
	switch a.Kind {
	case agent.EventText:
		for l := range strings.SplitSeq(strings.TrimSpace(a.Text), "\n") {
			if strings.TrimSpace(l) != "" {
				m.add(actText, l)
			}
		}
	case agent.EventToolCall:
		m.add(actTool, strings.TrimSpace(a.Tool+"  "+a.ToolInput))
	case agent.EventToolResult:
		first, _, _ := strings.Cut(strings.TrimSpace(a.Text), "\n")
		// Claude Code says "(Bash completed with no output)": nothing to show.
		if first != "" && !strings.HasSuffix(first, "completed with no output)") {
			m.add(actResult, first)
		}
	case agent.EventError:
		m.add(actError, "! "+oneLine(a.Text, 500))
	case agent.EventUsage, agent.EventResult:
		if a.Usage != nil {
			m.iterUsage = *a.Usage
		}
	}
}

func (m *model) iterationEnded(e loop.Event) {
	m.iterUsage = agent.Usage{}
	r := e.Record
	if r == nil {
		return
	}
	if r.ContextUsedPercent > 0 {
		m.ctxPct = r.ContextUsedPercent
	}
	kind := actOutcome
	switch r.Outcome {
	case state.OutcomeTaskDone, state.OutcomePlanDone:
		kind = actOutcomeGood
		for id := range strings.SplitSeq(r.TaskID, ",") {
			if row := m.row(id); row != nil {
				row.State = TaskDone
			}
		}
		if r.Outcome == state.OutcomePlanDone {
			for i := range m.tasks {
				if m.tasks[i].State != TaskFailed {
					m.tasks[i].State = TaskDone
				}
			}
		}
	case state.OutcomeFatalError, state.OutcomeTaskFailed, state.OutcomeGateFailed, state.OutcomeSandboxFailed, state.OutcomeTimeout, state.OutcomeIdleTimeout,
		state.OutcomeGuardRejected, state.OutcomeReviewRejected, state.OutcomeReviewFailed, state.OutcomeCommitRefused:
		kind = actOutcomeBad
	default:
		// The other values need nothing here.
	}
	if kind != actOutcomeGood {
		if row := m.row(r.TaskID); row != nil && row.State == TaskRunning {
			row.State = TaskOpen
		}
	}
	parts := []string{outcomeMark(r.Outcome) + " " + string(r.Outcome), (time.Duration(r.DurationMS) * time.Millisecond).Round(100 * time.Millisecond).String()}
	if n := r.InputTokens + r.OutputTokens + r.CacheReadTokens + r.CacheWriteTokens; n > 0 {
		parts = append(parts, tokens(n)+" tokens")
	}
	// "unknown" only for tokens without a price: an agent that reports
	// no usage at all (plain text) has nothing to show.
	if n := r.InputTokens + r.OutputTokens + r.CacheReadTokens + r.CacheWriteTokens; r.CostUSD > 0 || (r.CostSource == state.CostUnknown && n > 0) {
		parts = append(parts, state.FormatCost(r.CostUSD, r.CostSource))
	}
	if r.Commit != "" {
		parts = append(parts, "commit "+r.Commit[:min(7, len(r.Commit))])
	}
	parts = append(parts, evidenceParts(r)...)
	line := strings.Join(parts, " · ")
	if r.Error != "" {
		line += ": " + oneLine(r.Error, 300)
	}
	m.add(kind, line)
}

func outcomeMark(outcome state.Outcome) string {
	switch outcome {
	case state.OutcomeTaskDone, state.OutcomePlanDone:
		return "✓"
	case state.OutcomeFatalError, state.OutcomeTaskFailed, state.OutcomeGateFailed, state.OutcomeSandboxFailed, state.OutcomeTimeout, state.OutcomeIdleTimeout,
		state.OutcomeGuardRejected, state.OutcomeReviewRejected, state.OutcomeReviewFailed, state.OutcomeCommitRefused:
		return "✗"
	default:
		// The other values need nothing here.
	}
	return "•"
}

// add appends an activity entry, keeping a bounded tail. A reader who
// scrolled back keeps their place.
func (m *model) add(kind activityKind, text string) {
	m.activity = append(m.activity, activity{kind: kind, text: text})
	if len(m.activity) > maxActivity {
		m.activity = append(m.activity[:0:0], m.activity[len(m.activity)-maxActivity/2:]...)
	}
	if m.scroll > 0 {
		m.scroll = min(m.scroll+1, len(m.activity)-1)
	}
}

// typeAnswer edits the answer being typed: enter sends it to the run,
// esc drops it.
func (m model) typeAnswer(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc":
		m.answer = nil
	case "enter":
		text := strings.TrimSpace(string(m.answer))
		m.answer = nil
		a, ok := m.opts.control.(answerer)
		if text == "" || !ok {
			return m, nil
		}
		id := m.question
		return m, func() tea.Msg { a.Answer(loop.Answer{Task: id, Text: text, By: "tui"}); return nil }
	case "backspace":
		if len(m.answer) > 0 {
			m.answer = m.answer[:len(m.answer)-1]
		}
	default:
		if k.Text != "" {
			m.answer = append(m.answer, []rune(k.Text)...)
		}
	}
	return m, nil
}
