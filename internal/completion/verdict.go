package completion

import (
	"regexp"
	"strings"
)

// The reviewer's verdicts: a reviewer ends its final message with
// <promise>SHIP</promise> (the task is done as claimed) or
// <promise>REVISE</promise> and numbered findings. They are read apart
// from the worker's markers, so a worker that writes SHIP claims nothing
// and a reviewer that writes TASK_DONE gives no verdict.
const (
	Ship   Marker = "SHIP"
	Revise Marker = "REVISE"
)

const verdictWords = `ship|revise`

var (
	verdictTagRe   = regexp.MustCompile(`(?i)<\s*promise\s*>\s*(` + verdictWords + `)\s*<\s*/\s*promise\s*>`)
	verdictColonRe = regexp.MustCompile("(?m)(?:^[ \t>*_#`+-]*|[.!?;,)][ \t]+)(?i:promise)[*_` \t]*:[*_` \t]*(" +
		strings.ToUpper(verdictWords) + `)\b`)
	// findingRe is a numbered finding: "1. text", "2) text", "- 3. text".
	findingRe = regexp.MustCompile(`^\s*(?:[-*]\s+)?(?:\*\*)?\d{1,3}[.)](?:\*\*)?\s+(.*\S)`)
)

// Verdict is what a reviewer said.
type Verdict struct {
	// Marker is Ship, Revise, or None when the reviewer gave no verdict.
	Marker   Marker
	Strategy Strategy
	// Findings are the numbered findings of the final message, in order,
	// one line each (the number dropped); for a REVISE without numbered
	// lines, the text around the marker.
	Findings []string
}

// DetectVerdict reads a reviewer's verdict with the same strategies, and
// the same rules, as Detect reads a worker's markers: promise-tag only in
// the final message outside code, relaxed-tag also in code and earlier
// messages. The heuristic strategy gives no verdict: a review is never
// passed on tone.
func DetectVerdict(in Input, order []Strategy) Verdict {
	if len(order) == 0 {
		order = DefaultStrategies()
	}
	final := stripEcho(in.Final, in.Prompt)
	for _, s := range order {
		var m Marker
		text := final
		switch s {
		case PromiseTag:
			if f, ok := lastMatch(verdictTagRe, maskCode(final)); ok {
				m = verdictAt(final[f.start:])
			}
		case RelaxedTag:
			m, text = relaxedVerdict(final, in.Messages, in.Prompt)
		default:
			// The other values need nothing here.
		}
		if m != None {
			v := Verdict{Marker: m, Strategy: s}
			if m == Revise {
				v.Findings = Findings(text)
			}
			return v
		}
	}
	return Verdict{}
}

// verdictAt is the verdict whose word starts rest (lastMatch normalizes
// only the worker's markers).
func verdictAt(rest string) Marker {
	if len(rest) >= 4 && strings.EqualFold(rest[:4], "ship") {
		return Ship
	}
	if len(rest) >= 6 && strings.EqualFold(rest[:6], "revise") {
		return Revise
	}
	return None
}

func relaxedVerdict(final string, messages []string, prompt string) (Marker, string) {
	texts := []string{final}
	for i := len(messages) - 1; i >= 0; i-- {
		texts = append(texts, stripEcho(messages[i], prompt))
	}
	for _, text := range texts {
		tag, okTag := lastMatch(verdictTagRe, text)
		colon, okColon := lastMatch(verdictColonRe, text)
		switch {
		case okTag && (!okColon || tag.start > colon.start):
			return verdictAt(text[tag.start:]), text
		case okColon:
			return verdictAt(text[colon.start:]), text
		}
	}
	return None, ""
}

// maxFindings and maxFinding bound what a review's findings carry.
const (
	maxFindings = 20
	maxFinding  = 500
)

// Findings reads numbered findings ("1. ...", "2) ...") from a reviewer's
// message, continuation lines joined to their finding; without numbered
// lines, the message's text without the verdict tag, as one finding.
func Findings(text string) []string {
	var out []string
	cur := -1
	for line := range strings.SplitSeq(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		clean := strings.TrimSpace(verdictTagRe.ReplaceAllString(line, ""))
		if m := findingRe.FindStringSubmatch(clean); m != nil {
			out = append(out, strings.TrimSpace(m[1]))
			cur = len(out) - 1
			continue
		}
		switch {
		case clean == "" || isFenceLine(clean):
			cur = -1
		case cur >= 0 && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")):
			out[cur] += " " + clean
		default:
			cur = -1
		}
	}
	if len(out) == 0 {
		if rest := strings.Join(strings.Fields(verdictTagRe.ReplaceAllString(text, "")), " "); rest != "" {
			out = []string{rest}
		}
	}
	if len(out) > maxFindings {
		out = out[:maxFindings]
	}
	for i, f := range out {
		if r := []rune(f); len(r) > maxFinding {
			out[i] = string(r[:maxFinding]) + "…"
		}
	}
	return out
}
