package ui

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ralph-loop/ralph/internal/loop"
)

// Text is s as a terminal may show it: text, never commands. What an
// agent, a gate or a reviewer printed can hold escape sequences that a
// terminal obeys: OSC 52 writes the user's clipboard, OSC 0 the window
// title, DCS and APC talk to the terminal itself, CSI moves the cursor,
// clears the screen or changes modes, and a carriage return or a
// backspace rewrites what a line seemed to say. Text removes every escape
// sequence (ESC and what it introduces, to its end), every C0 control but
// newline and tab, DEL, and the C1 controls (U+0080 to U+009F, which some
// terminals take as ESC and a letter). Colour too: ralph colours what it
// renders itself, after. Invalid UTF-8 becomes U+FFFD.
func Text(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b: // ESC
			i += escapeLen(s[i:])
			continue
		case r == 0x9b || r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
			// C1 CSI, OSC, DCS, SOS, PM, APC: what they introduce goes too.
			i += size + sequenceBody(s[i+size:], r == 0x9b)
			continue
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			// Another control: dropped.
		default:
			b.WriteRune(r) // U+FFFD for an invalid byte
		}
		i += size
	}
	return b.String()
}

// clean reports whether s has nothing Text would change.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c >= 0x80 {
			return false // a control, or non-ASCII to look at closely
		}
	}
	return true
}

// escapeLen is the length of the escape sequence s starts with (s[0] is
// ESC): ESC [ (CSI) to its final byte, ESC ] (OSC), ESC P (DCS), ESC X
// (SOS), ESC ^ (PM) and ESC _ (APC) to their terminator, BEL or ST (ESC
// \), or the end; ESC and one more character otherwise.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		return 2 + sequenceBody(s[2:], true)
	case ']', 'P', 'X', '^', '_':
		return 2 + sequenceBody(s[2:], false)
	}
	_, size := utf8.DecodeRuneInString(s[1:])
	return 1 + size
}

// sequenceBody is the length of a sequence's body and terminator: for a
// CSI, parameter and intermediate bytes up to the final byte (0x40 to
// 0x7e); for a string sequence (OSC, DCS, ...), everything up to BEL, ST
// (ESC \) or the C1 ST (U+009C). A sequence that does not end runs to the
// end of s.
func sequenceBody(s string, csi bool) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if csi {
			if c >= 0x40 && c <= 0x7e {
				return i + 1
			}
			if c < 0x20 || c > 0x7e {
				return i // not a CSI byte: the sequence ends before it
			}
			continue
		}
		switch {
		case c == 0x07:
			return i + 1
		case c == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case c == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c: // U+009C, ST
			return i + 2
		}
	}
	return len(s)
}

// TextEvent is e with everything in it that the agent, a gate or a
// reviewer could have written passed through Text, for a renderer that
// writes to a terminal. The event's own values are not changed.
func TextEvent(e loop.Event) loop.Event {
	e.Message = Text(e.Message)
	e.WorkerID = Text(e.WorkerID)
	if t := e.Task; t != nil {
		c := *t
		c.ID, c.Title = Text(t.ID), Text(t.Title)
		e.Task = &c
	}
	if a := e.Agent; a != nil {
		c := *a
		c.Text, c.Tool, c.ToolInput = Text(a.Text), Text(a.Tool), Text(a.ToolInput)
		e.Agent = &c
	}
	if r := e.Record; r != nil {
		c := *r
		c.Error, c.TaskID = Text(r.Error), Text(r.TaskID)
		if g := r.Guard; g != nil {
			gc := *g
			gc.Error = Text(g.Error)
			c.Guard = &gc
		}
		e.Record = &c
	}
	if p := e.Plan; p != nil {
		c := *p
		c.Path = Text(p.Path)
		e.Plan = &c
	}
	return e
}

// TextWriter writes what it is given through Text: for the commands that
// print what an agent wrote (ralph tasks, status, history) and colour
// nothing themselves. An escape sequence cut between two writes loses its
// ESC all the same, and what is left of it is plain text.
type TextWriter struct{ W io.Writer }

func (t TextWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.W, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
