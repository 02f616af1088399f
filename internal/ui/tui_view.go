package ui

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ralph-loop/ralph/internal/state"
)

// View draws the whole screen: exactly height lines, none wider than the
// terminal, whatever its size.
func (m model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = m.windowTitle()
	return v
}

func (m model) windowTitle() string {
	if m.iteration == 0 {
		return "ralph"
	}
	return fmt.Sprintf("ralph · %d/%d done · iteration %d", m.planDone, m.planTotal, m.iteration)
}

// render returns the screen as text.
func (m model) render() string {
	w, h := max(1, m.width), max(1, m.height)
	var lines []string
	if m.pager != nil {
		lines = m.pager.view(m.pal, w)
	} else {
		lines = m.screen(w)
	}
	return strings.Join(fitScreen(lines, w, h), "\n")
}

// screenLayout is how many lines each part of the screen gets.
type screenLayout struct {
	header, tasks, activity int
}

// layout shares the height between the parts: two header lines, a rule,
// the tasks (at most two fifths of what is left), a rule, the activity,
// the footer.
func (m model) layout() screenLayout {
	h := max(1, m.height)
	const fixed = 2 + 1 + 1 + 1
	rest := h - fixed
	if rest < 2 {
		return screenLayout{header: min(2, max(0, h-1))}
	}
	tasks := min(len(m.tasks), max(1, rest*2/5))
	return screenLayout{header: 2, tasks: tasks, activity: rest - tasks}
}

func (m model) screen(w int) []string {
	l := m.layout()
	lines := m.header(w)[:l.header]
	if l.tasks > 0 || l.activity > 0 {
		lines = append(lines, m.rule("tasks", w))
		lines = append(lines, m.taskRows(w, l.tasks)...)
		lines = append(lines, m.rule(m.activityTitle(), w))
		lines = append(lines, m.activityRows(w, l.activity)...)
	}
	return append(lines, m.footer(w))
}

func (m model) header(w int) []string {
	who := m.opts.agent
	if m.opts.model != "" {
		who += " (" + m.opts.model + ")"
	}
	iter := fmt.Sprintf("iteration %d", m.iteration)
	if m.maxIter > 0 {
		iter += fmt.Sprintf("/%d", m.maxIter)
	}
	left := fmt.Sprintf(" %s · %s · %s · %s · %s", m.pal.bold("ralph"), filepath.Base(m.opts.plan), who, iter, m.elapsed())
	first := spread(left, m.status(), w)

	used := m.totals.InputTokens + m.totals.OutputTokens + m.totals.CacheReadTokens + m.totals.CacheWriteTokens +
		m.iterUsage.InputTokens + m.iterUsage.OutputTokens + m.iterUsage.CacheReadTokens + m.iterUsage.CacheWriteTokens
	stats := []string{fmt.Sprintf("tasks %d/%d done", m.planDone, m.planTotal)}
	if failed := m.count(TaskFailed); failed > 0 {
		stats = append(stats, m.pal.red(fmt.Sprintf("%d failed", failed)))
	}
	stats = append(stats, "tokens "+tokens(used), "cost "+state.FormatCost(m.totals.CostUSD, m.totals.CostSource))
	if q := quotaShort(m.quota); q != "" {
		stats = append(stats, q)
	}
	if sb := m.sandbox; sb != nil {
		if sb.Kind == "none" {
			stats = append(stats, m.pal.yellow("no sandbox"))
		} else {
			stats = append(stats, "sandbox "+sb.Kind)
		}
	}
	if m.ctxPct > 0 {
		stats = append(stats, fmt.Sprintf("context %.0f%%", m.ctxPct))
	}
	if m.phase == phaseWaiting && !m.waitUntil.IsZero() {
		stats = append(stats, m.pal.yellow("resumes at "+m.waitUntil.In(m.opts.loc).Format("15:04:05")))
	}
	return []string{first, fitLine(" "+strings.Join(stats, " · "), w)}
}

// quotaShort is the usage windows in a few words for the header:
// "seven_day 85% (warning) · five_hour 12%".
func quotaShort(quota map[string]state.QuotaWindow) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(quota)) {
		q := quota[name]
		s := name
		if q.Utilization != nil {
			s += fmt.Sprintf(" %.0f%%", *q.Utilization)
		}
		switch q.Status {
		case "allowed_warning":
			s += " (warning)"
		case "rejected":
			s += " (limit)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " · ")
}

func (m model) count(s TaskState) int {
	n := 0
	for _, t := range m.tasks {
		if t.State == s {
			n++
		}
	}
	return n
}

func (m model) elapsed() string {
	if m.started.IsZero() {
		return "0s"
	}
	end := m.now
	if end.Before(m.started) {
		end = m.started
	}
	return shortDuration(end.Sub(m.started))
}

// status says what the run is doing, on the right of the first line.
func (m model) status() string {
	switch {
	case m.phase == phaseEnded:
		if m.endStatus == "done" {
			return m.pal.green("✓ done")
		}
		return m.pal.yellow("■ " + m.endStatus)
	case m.stopping > 0:
		return m.pal.red("stopping…")
	case m.phase == phasePaused:
		return m.pal.yellow("‖ paused")
	case m.pausing:
		return m.pal.yellow("pausing after this iteration")
	case m.phase == phaseWaiting:
		left := time.Duration(0)
		if !m.waitUntil.IsZero() && m.waitUntil.After(m.now) {
			left = m.waitUntil.Sub(m.now)
		}
		return m.pal.yellow("◔ waiting " + shortDuration(left))
	case m.phase == phaseStarting:
		return m.pal.dim("starting")
	}
	return m.pal.green("● running")
}

func (m model) rule(label string, w int) string {
	head := "── " + label + " "
	fill := w - ansi.StringWidth(head)
	if fill < 0 {
		return fitLine(m.pal.dim(head), w)
	}
	return m.pal.dim(head + strings.Repeat("─", fill))
}

// taskRows lists the tasks in plan order; when they do not fit, a window
// around the current task and a line counting the others.
func (m model) taskRows(w, n int) []string {
	if n <= 0 {
		return nil
	}
	idWidth := 0
	for _, t := range m.tasks {
		idWidth = max(idWidth, min(ansi.StringWidth(t.ID), 14))
	}
	start, shown := 0, n
	if len(m.tasks) > n {
		shown = max(0, n-1) // the last row counts the rest
		focus := 0
		for i, t := range m.tasks {
			if t.ID == m.current {
				focus = i
				break
			}
			if t.State == TaskOpen && focus == 0 {
				focus = i
			}
		}
		start = min(max(0, focus-shown/2), len(m.tasks)-shown)
	}
	var rows []string
	for _, t := range m.tasks[start : start+shown] {
		rows = append(rows, m.taskRow(t, idWidth, w))
	}
	if hidden := len(m.tasks) - shown; hidden > 0 {
		rows = append(rows, fitLine(m.pal.dim(fmt.Sprintf("   … %d more (%d above, %d below)", hidden, start, len(m.tasks)-start-shown)), w))
	}
	return rows
}

func (m model) taskRow(t taskRow, idWidth, w int) string {
	mark, note, paint := m.taskLook(t)
	id := ansi.Truncate(t.ID, idWidth, "…")
	left := fmt.Sprintf(" %s %s%s  %s", paint(mark), m.pal.bold(id), strings.Repeat(" ", idWidth-ansi.StringWidth(id)), t.Title)
	if note == "" {
		return fitLine(left, w)
	}
	return spread(left, paint(note), w)
}

// taskLook is a task row's mark, note and color.
func (m model) taskLook(t taskRow) (mark, note string, paint func(string) string) {
	switch t.State {
	case TaskRunning:
		note = "running"
		if t.attempts > 1 {
			note += fmt.Sprintf(" · attempt %d", t.attempts)
		}
		return "▶", note, m.pal.cyan
	case TaskDone:
		return "✓", "", m.pal.green
	case TaskFailed:
		return "✗", "failed", m.pal.red
	case TaskWaiting:
		return "◔", "waiting for the usage limit", m.pal.yellow
	case TaskSkipped:
		return "↷", "skipped", m.pal.dim
	case TaskSkipping:
		return "↷", "skipping after this iteration", m.pal.yellow
	default:
		// The other values need nothing here.
	}
	return "○", "", func(s string) string { return s }
}

func (m model) activityTitle() string {
	title := "activity"
	if m.iteration > 0 {
		title = fmt.Sprintf("iteration %d", m.iteration)
		if m.current != "" {
			title += " · " + m.current
			if r := m.row(m.current); r != nil {
				title += " " + r.Title
			}
		}
	}
	if m.scroll > 0 {
		title += fmt.Sprintf(" · scrolled back %d (G to follow)", m.scroll)
	}
	return title
}

// activityRows fills the activity pane from the bottom up: the newest
// entries (or, scrolled back, older ones), assistant text wrapped, the
// rest cut to the width.
func (m model) activityRows(w, n int) []string {
	if n <= 0 {
		return nil
	}
	end := len(m.activity) - min(m.scroll, max(0, len(m.activity)-1))
	var rows []string
	for i := end - 1; i >= 0 && len(rows) < n; i-- {
		entry := m.activityLines(m.activity[i], w)
		rows = append(entry, rows...)
	}
	if len(rows) > n {
		rows = rows[len(rows)-n:]
	}
	for len(rows) < n {
		rows = append(rows, "")
	}
	return rows
}

func (m model) activityLines(a activity, w int) []string {
	one := func(prefix, text string, paint func(string) string) []string {
		return []string{fitLine(prefix+paint(ansi.Truncate(text, max(1, w-ansi.StringWidth(prefix)), "…")), w)}
	}
	switch a.kind {
	case actText:
		width := max(10, w-3)
		var out []string
		for l := range strings.SplitSeq(ansi.Wrap(a.text, width, ""), "\n") {
			out = append(out, fitLine("   "+l, w))
		}
		return out
	case actTool:
		tool, arg, _ := strings.Cut(a.text, "  ")
		return []string{fitLine("   "+m.pal.cyan("→ ")+m.pal.bold(tool)+" "+ansi.Truncate(arg, max(1, w-6-ansi.StringWidth(tool)), "…"), w)}
	case actResult:
		return one("     ⎿ ", a.text, m.pal.dim)
	case actError:
		return one("   ", a.text, m.pal.red)
	case actWarning:
		return one("   ", a.text, m.pal.yellow)
	case actOutcomeGood:
		return one("   ", a.text, m.pal.green)
	case actOutcomeBad:
		return one("   ", a.text, m.pal.red)
	case actOutcome:
		return one("   ", a.text, m.pal.yellow)
	case actIteration:
		return one(" ", "▶ "+a.text, m.pal.bold)
	default:
		// The other values need nothing here.
	}
	return one("   ", a.text, m.pal.dim)
}

func (m model) footer(w int) string {
	var keys []string
	if m.answer != nil {
		return fitLine(m.pal.yellow(" answer "+m.question+"> ")+string(m.answer)+"█"+m.pal.dim("  (enter sends · esc)"), w)
	}
	switch {
	case m.phase == phaseEnded:
		keys = []string{"q quit"}
	case m.stopping > 0:
		return fitLine(m.pal.red(" stopping: the agent was asked to stop · q or ctrl+c again to force"), w)
	default:
		if m.opts.control != nil {
			switch {
			case m.phase == phasePaused:
				keys = append(keys, "p resume")
			case m.pausing:
				keys = append(keys, "p don't pause")
			default:
				keys = append(keys, "p pause")
			}
			keys = append(keys, "s skip task")
			if _, ok := m.opts.control.(answerer); ok && m.question != "" {
				keys = append(keys, "a answer")
			}
		}
		keys = append(keys, "q stop", "l transcript", "↑↓ scroll")
	}
	return fitLine(m.pal.dim(" "+strings.Join(keys, " · ")), w)
}

// fitScreen makes lines exactly h lines, each cut to w columns.
func fitScreen(lines []string, w, h int) []string {
	if len(lines) > h {
		lines = lines[:h]
	}
	out := make([]string, 0, h)
	for _, l := range lines {
		out = append(out, fitLine(l, w))
	}
	for len(out) < h {
		out = append(out, "")
	}
	return out
}

// fitLine cuts a line (which may hold ANSI styles) to w columns.
func fitLine(s string, w int) string {
	if strings.ContainsAny(s, "\n\r\t") {
		s = strings.NewReplacer("\n", " ", "\r", " ", "\t", "  ").Replace(s)
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// spread puts left and right on one line of w columns, right-aligned; the
// right part is dropped when both do not fit.
func spread(left, right string, w int) string {
	lw, rw := ansi.StringWidth(left), ansi.StringWidth(right)
	if lw+rw+2 > w {
		if rw > 0 && rw+2 <= w/2 {
			// The right part (a status) matters more than the end of the
			// left one.
			return ansi.Truncate(left, w-rw-2, "…") + "  " + right
		}
		return fitLine(left, w)
	}
	return left + strings.Repeat(" ", w-lw-rw-1) + right + " "
}

func padRight(s string, w int) string {
	if n := w - ansi.StringWidth(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

func splitLines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// shortDuration writes 4s, 1m05s, 2h03m.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// taskSummary lists the tasks as the run left them, for the terminal once
// the TUI is gone.
func (m model) taskSummary() []string {
	idWidth := 0
	for _, t := range m.tasks {
		idWidth = max(idWidth, ansi.StringWidth(t.ID))
	}
	var out []string
	for _, t := range m.tasks {
		mark, note, paint := m.taskLook(t)
		line := fmt.Sprintf("  %s %s%s  %s", paint(mark), t.ID, strings.Repeat(" ", idWidth-ansi.StringWidth(t.ID)), t.Title)
		if note != "" && t.State != TaskRunning {
			line += "  " + paint("("+note+")")
		}
		out = append(out, line)
	}
	return out
}
