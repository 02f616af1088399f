package agent

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// keyArg returns a tool call's key argument on one line, for display: the
// first of the input fields that say what a call does, most telling first.
func keyArg(input map[string]json.RawMessage) string {
	for _, k := range [...]string{"command", "file_path", "path", "pattern", "url", "description", "query", "prompt"} {
		var s string
		if raw, ok := input[k]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
			return oneLine(s)
		}
	}
	return ""
}

// oneLine returns the first non-blank line of s, marked when more follows,
// truncated for display.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	return truncate(s, maxToolInput)
}

// truncate cuts s to at most n bytes on a character boundary, marking the
// cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
