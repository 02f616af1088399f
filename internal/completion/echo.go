package completion

import (
	"regexp"
	"strings"
)

// Plain-text agents (the command agent with text output, kiro) print
// everything on one stream: their own words, what their tools printed,
// and often the prompt itself, whose instructions name every marker. What
// echoes the prompt is removed before scanning, by these rules:
//
//   - the whole prompt, wherever it appears (cat prompt.md, a CLI that
//     prints its input);
//   - a line that is a line of the prompt (ignoring its indentation, a
//     quote mark "> " and a line number "12:" or "prompt.md:12:" before
//     it) when it is quoted or numbered, or when the nearest non-blank
//     line before or after it is a line of the prompt too: part of an
//     echo, whole or partial, re-wrapped or quoted.
//
// A prompt line standing alone among the agent's own words is the
// agent's: "<promise>TASK_DONE</promise>" as the last line, after its
// summary, is what the prompt asks it to write. The agent's own words
// that merely hold a marker ("All good. <promise>TASK_DONE</promise>")
// are never a prompt line. Short prompt lines (a heading, a fence) are
// too common to tell anything.

// minEchoLine is the fewest characters a prompt line needs to count.
const minEchoLine = 8

// echoDecoration matches what a quote or a numbered listing puts before
// a line: "> ", "│ ", "12:", "12<tab>", "prompt.md:12:".
var echoDecoration = regexp.MustCompile(`^[ \t]*(?:(?:[>│|][ \t]*)+|(?:[\w./-]+:)?[0-9]+[:\t])`)

// echoKey is line as it is compared with the prompt's lines: without its
// decorations and surrounding space; decorated says it had some.
func echoKey(line string) (key string, decorated bool) {
	for range 4 { // "> 12: > x" has several
		loc := echoDecoration.FindStringIndex(line)
		if loc == nil || loc[1] == 0 {
			break
		}
		if strings.TrimSpace(line[:loc[1]]) != "" {
			decorated = true
		}
		line = line[loc[1]:]
	}
	return strings.TrimSpace(line), decorated
}

// stripEcho removes from text what echoes prompt (see the rules above);
// the agent's own words stay. Line endings are normalized to \n first, in
// both.
func stripEcho(text, prompt string) string {
	if strings.TrimSpace(prompt) == "" || text == "" {
		return text
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	prompt = strings.ReplaceAll(prompt, "\r\n", "\n")
	text = strings.ReplaceAll(text, strings.TrimSpace(prompt), "")
	said := map[string]bool{}
	for line := range strings.SplitSeq(prompt, "\n") {
		if k, _ := echoKey(line); len(k) >= minEchoLine {
			said[k] = true
		}
	}
	lines := strings.Split(text, "\n")
	echoed := make([]bool, len(lines))    // a line of the prompt
	decorated := make([]bool, len(lines)) // quoted or numbered
	for i, l := range lines {
		k, d := echoKey(l)
		echoed[i], decorated[i] = said[k], d
	}
	// after[i] and before[i]: the nearest non-blank line after or before
	// line i is a line of the prompt.
	after, before := make([]bool, len(lines)), make([]bool, len(lines))
	for i, last := 1, false; i < len(lines); i++ {
		if strings.TrimSpace(lines[i-1]) != "" {
			last = echoed[i-1]
		}
		before[i] = last
	}
	for i, next := len(lines)-2, false; i >= 0; i-- {
		if strings.TrimSpace(lines[i+1]) != "" {
			next = echoed[i+1]
		}
		after[i] = next
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if echoed[i] && (decorated[i] || before[i] || after[i]) {
			l = ""
		}
		out[i] = l
	}
	return strings.Join(out, "\n")
}
