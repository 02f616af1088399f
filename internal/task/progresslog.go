package task

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// IterationRecord is what the runner notes of one iteration in a plan that
// keeps a log of its own (progress.md's Completed This Iteration, Recent
// Attempts and Iteration Log sections).
type IterationRecord struct {
	Iteration int
	Started   time.Time
	Duration  time.Duration
	// TaskID is the task the iteration worked on ("" when it picked none).
	TaskID string
	// Outcome is the iteration's outcome (task_done, no_marker, ...) and
	// Error why it did not finish its task, if it did not.
	Outcome string
	Error   string
	// Done lists the ids of the tasks done in the iteration.
	Done []string
}

// maxRecentAttempts bounds progress.md's Recent Attempts: rslph's memory of
// what was tried, for the next agent to read, not a full history (that is
// the Iteration Log).
const maxRecentAttempts = 5

// iterationLogHeader starts progress.md's Iteration Log table.
const iterationLogHeader = "| Iteration | Started | Duration | Tasks Completed | Notes |\n" +
	"|-----------|---------|----------|-----------------|-------|\n"

// recorder is a format that keeps an iteration log in the plan file.
type recorder interface {
	// record returns the parse of cur's content with r noted, or cur.
	record(cur parsed, r IterationRecord) (parsed, error)
}

// record updates the three log sections of a progress.md, adding any that
// are missing at the end of the file. ralph-tui's progress.md is ralph-tui's
// own log and is left alone.
func (progressFormat) record(cur parsed, r IterationRecord) (parsed, error) {
	d, err := asProgress(cur)
	if err != nil {
		return nil, err
	}
	if d.tui != nil {
		return d, nil
	}
	path, data := d.plan.Path, d.doc.src
	title := func(id string) string {
		if t, ok := d.plan.Task(id); ok {
			return t.Title
		}
		return id
	}
	nl := lineEnding(data)
	out := data

	var done strings.Builder
	for _, id := range r.Done {
		done.WriteString("- [x] " + oneLine(title(id)) + "\n")
	}
	out = setSection(out, nl, "Completed This Iteration", func(string) string { return done.String() })

	tried := "(no task)"
	if r.TaskID != "" {
		tried = r.TaskID + ": " + oneLine(title(r.TaskID))
	}
	result := r.Outcome
	if r.Error != "" {
		result += " — " + oneLine(clip(r.Error, 300))
	}
	attempt := fmt.Sprintf("### Iteration %d\n\n- Tried: %s\n- Result: %s\n", r.Iteration, tried, result)
	out = setSection(out, nl, "Recent Attempts", func(old string) string {
		blocks := splitH3(old)
		if len(blocks) >= maxRecentAttempts {
			blocks = blocks[len(blocks)-maxRecentAttempts+1:]
		}
		return strings.Join(append(blocks, attempt), "\n")
	})

	notes := "-"
	if r.TaskID != "" {
		notes = r.TaskID + ": " + r.Outcome
		if r.Error != "" {
			notes += " — " + clip(r.Error, 200)
		}
	}
	row := fmt.Sprintf("| %d | %s | %s | %d | %s |\n", r.Iteration, r.Started.Local().Format("2006-01-02 15:04"),
		r.Duration.Round(time.Second), len(r.Done), tableCell(notes))
	out = setSection(out, nl, "Iteration Log", func(old string) string {
		lines := strings.SplitAfter(old, "\n")
		last := -1
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "|") {
				last = i
			}
		}
		if last < 0 {
			return strings.TrimSpace(old+"\n\n") + "\n\n" + iterationLogHeader + row
		}
		if !strings.HasSuffix(lines[last], "\n") {
			lines[last] += "\n"
		}
		lines = slices.Insert(lines, last+1, row)
		return strings.TrimSpace(strings.Join(lines, "")) + "\n"
	})

	check, err := readProgress(path, out)
	if err != nil {
		return nil, fmt.Errorf("internal error: recording iteration %d in %s made it invalid: %w", r.Iteration, path, err)
	}
	if !slices.EqualFunc(check.plan.Tasks, d.plan.Tasks, func(a, b Task) bool { return a.ID == b.ID && a.Status == b.Status }) {
		return nil, fmt.Errorf("internal error: recording iteration %d in %s changed its tasks", r.Iteration, path)
	}
	return check, nil
}

// setSection replaces the body of the ## section called name with
// body(old), which gets a blank line after the heading and before the next
// one. A missing section is added at the end of the file. Lines end with
// nl, the file's line ending.
func setSection(data []byte, nl, name string, body func(old string) string) []byte {
	doc := parseMarkdown(data)
	h := doc.findHeading(name)
	if h == nil {
		end := len(strings.TrimRight(string(data), " \t\r\n"))
		s := "\n\n## " + name + "\n\n"
		if b := strings.TrimSpace(body("")); b != "" {
			s += b + "\n"
		}
		return splice(data, end, len(data), strings.ReplaceAll(s, "\n", nl))
	}
	start, end := doc.section(h)
	old := strings.ReplaceAll(string(data[start:end]), "\r\n", "\n")
	b := "\n"
	if nb := strings.TrimSpace(body(strings.TrimSpace(old))); nb != "" {
		b += nb + "\n"
	}
	if end < len(data) {
		b += "\n"
	}
	return splice(data, start, end, strings.ReplaceAll(b, "\n", nl))
}

// splitH3 splits a section body into its ### blocks (text before the first
// heading is dropped: the section is ralph's to keep).
func splitH3(body string) []string {
	var blocks []string
	cur := -1
	fence := false
	for _, l := range strings.SplitAfter(body, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(t, "### ") {
			blocks = append(blocks, "")
			cur = len(blocks) - 1
		}
		if cur >= 0 {
			blocks[cur] += l
		}
	}
	for i := range blocks {
		blocks[i] = strings.TrimSpace(blocks[i]) + "\n"
	}
	return blocks
}

// tableCell makes s safe inside a markdown table cell.
func tableCell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

// clip shortens s to n bytes at most, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
