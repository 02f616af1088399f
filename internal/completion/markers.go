package completion

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// markerWords matches every spelling of a marker, aliases included.
const markerWords = `task_done|success|task_failed|complete|ralph_done|plan_done|question`

var (
	// tagRe is <promise>MARKER</promise>, tolerant of case and of spaces
	// inside the tag and around the marker.
	tagRe = regexp.MustCompile(`(?i)<\s*promise\s*>\s*(` + markerWords + `)\s*<\s*/\s*promise\s*>`)

	// colonRe is the relaxed "promise: MARKER" form. It is easy to write
	// in prose ("I promise: complete tests next time"), so it only counts
	// at the start of a line (after indentation, quote or list marks and
	// emphasis) or after a punctuation mark that ends a clause, and the
	// marker must be written in capitals, as a marker and not a word. The
	// keyword "promise" may be in any case, and emphasis or backticks may
	// surround the colon and the marker (**Promise:** `COMPLETE`).
	colonRe = regexp.MustCompile("(?m)(?:^[ \t>*_#`+-]*|[.!?;,)][ \t]+)(?i:promise)[*_` \t]*:[*_` \t]*(" +
		strings.ToUpper(markerWords) + `)\b`)
)

// normalize maps a marker as written to its canonical constant.
func normalize(word string) Marker {
	switch strings.ToUpper(word) {
	case "TASK_DONE", "SUCCESS":
		return TaskDone
	case "TASK_FAILED":
		return TaskFailed
	case "COMPLETE", "RALPH_DONE", "PLAN_DONE":
		return PlanDone
	case "QUESTION":
		return Question
	}
	return None
}

// found is one marker occurrence in a text.
type found struct {
	marker Marker
	start  int // offset of the marker word, orders occurrences
	end    int // offset just after the whole match, where a reason starts
}

// lastMatch returns the last occurrence of re in scan. Offsets in scan must
// be offsets in the text the reason is read from.
func lastMatch(re *regexp.Regexp, scan string) (found, bool) {
	all := re.FindAllStringSubmatchIndex(scan, -1)
	if len(all) == 0 {
		return found{}, false
	}
	m := all[len(all)-1]
	return found{marker: normalize(scan[m[2]:m[3]]), start: m[2], end: m[1]}, true
}

// toMatch builds the Match of an occurrence found in text, reading the
// reason of a TASK_FAILED.
func toMatch(f found, text string) Match {
	m := Match{Marker: f.marker}
	switch f.marker {
	case TaskFailed:
		m.Reason = reasonAfter(text[f.end:])
	case Question:
		m.Reason = questionText(text[:f.start], text[f.end:])
	default:
		// The other markers carry no text.
	}
	return m
}

// maxQuestion caps the text of a QUESTION, in characters.
const maxQuestion = 2000

// questionText reads the question of a QUESTION marker: what follows it,
// or, when nothing does, the paragraph before it ("Should the API be
// v1 or v2?\n\n<promise>QUESTION</promise>").
func questionText(before, after string) string {
	q := strings.TrimSpace(after)
	if q == "" {
		// before ends inside the tag: drop "<promise>" (and its spaces).
		if i := strings.LastIndex(before, "<"); i >= 0 {
			before = before[:i]
		}
		before = strings.TrimSpace(before)
		if i := strings.LastIndex(before, "\n\n"); i >= 0 {
			before = before[i+2:]
		}
		q = strings.TrimSpace(before)
	}
	if utf8.RuneCountInString(q) > maxQuestion {
		q = strings.TrimSpace(string([]rune(q)[:maxQuestion])) + "…"
	}
	return q
}

// maxReason caps Match.Reason, in characters.
const maxReason = 300

// reasonAfter reads the reason following a TASK_FAILED marker: the rest of
// the marker's line, or else the next non-empty line that is not a code
// fence, as one trimmed line without a leading "Reason:".
func reasonAfter(rest string) string {
	line, rest, _ := strings.Cut(rest, "\n")
	reason := cleanReason(line)
	for reason == "" && rest != "" {
		line, rest, _ = strings.Cut(rest, "\n")
		if isFenceLine(line) {
			continue
		}
		reason = cleanReason(line)
	}
	if utf8.RuneCountInString(reason) > maxReason {
		r := []rune(reason)
		reason = strings.TrimSpace(string(r[:maxReason])) + "…"
	}
	return reason
}

func cleanReason(line string) string {
	line = strings.Join(strings.Fields(line), " ") // tabs, \r, runs of spaces
	line = strings.TrimLeft(line, ":-–— ")
	if len(line) >= 7 && strings.EqualFold(line[:7], "reason:") {
		line = strings.TrimSpace(line[7:])
	}
	return line
}

// isFenceLine reports whether a line opens or closes a fenced code block.
func isFenceLine(line string) bool {
	_, n := fenceRun(line)
	return n >= 3
}
