package agent

import (
	"strings"
	"unicode/utf8"
)

// keyArgs holds the input fields of a tool call that say what the call
// does, most telling first: its key argument is the first that is a
// non-empty string.
type keyArgs [8]string

// keyArgIndex returns the rank of an input field in keyArgs, or -1.
func keyArgIndex(name []byte) int {
	switch string(name) {
	case "command":
		return 0
	case "file_path":
		return 1
	case "path":
		return 2
	case "pattern":
		return 3
	case "url":
		return 4
	case "description":
		return 5
	case "query":
		return 6
	case "prompt":
		return 7
	}
	return -1
}

// read reads a tool call's input object into k. Like encoding/json into a
// map, which the decoders used before, a second object adds to the first
// and null empties k.
func (k *keyArgs) read(s *jsonScanner) {
	if s.null() {
		*k = keyArgs{}
		return
	}
	if !s.object() {
		return
	}
	for s.more() {
		if i := keyArgIndex(s.name()); i >= 0 {
			k[i] = ""
			s.str(&k[i])
		}
	}
}

// String returns the key argument on one line, for display.
func (k *keyArgs) String() string {
	for _, v := range k {
		if v != "" {
			return oneLine(v)
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

// truncateBytes is truncate for the head of a text held in a buffer.
func truncateBytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}
