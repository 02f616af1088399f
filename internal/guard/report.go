package guard

import (
	"fmt"
	"strings"
)

// DefaultReportSize bounds a Report when the caller gives no size.
const DefaultReportSize = 4 << 10

// Report formats findings one a line, as `file:line: rule: text (why)`
// (`file: rule: ...` for a finding about the whole file), the allowed ones
// followed by `[allowed: reason]`, for the next prompt and for a reviewer.
// It stays within maxBytes (DefaultReportSize when maxBytes <= 0): the
// lines that do not fit are counted in a last line instead.
func Report(findings []Finding, maxBytes int) string {
	if maxBytes <= 0 {
		maxBytes = DefaultReportSize
	}
	lines := make([]string, len(findings))
	total := 0
	for i, f := range findings {
		lines[i] = formatFinding(f) + "\n"
		total += len(lines[i])
	}
	if total <= maxBytes {
		return strings.Join(lines, "")
	}
	var b strings.Builder
	for i, l := range lines {
		more := fmt.Sprintf("… and %d more findings\n", len(lines)-i-1)
		if b.Len()+len(l)+len(more) > maxBytes {
			more = fmt.Sprintf("… and %d more findings\n", len(lines)-i)
			if b.Len()+len(more) <= maxBytes {
				b.WriteString(more)
			}
			break
		}
		b.WriteString(l)
	}
	return b.String()
}

func formatFinding(f Finding) string {
	where := f.File
	if f.Line > 0 {
		where = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	s := fmt.Sprintf("%s: %s: %s (%s)", where, f.Rule, oneLine(f.Text), f.Why)
	if f.Allowed {
		s += " [allowed: " + oneLine(f.Reason) + "]"
	}
	return s
}

// oneLine keeps a report line on one line whatever the text holds.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
