// Package termtext is the one sanitizer of what ralph prints to a
// terminal: the run's output, the TUI, status, tasks, history, logs,
// doctor, and errors that quote what an agent wrote (Text), and the diff
// shown before ralph trust, which shows every control visibly (Visible)
// so that the user sees that the file holds them.
//
// It owns what may reach a terminal; it must not decide what is shown.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
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
// renders itself, after. Invalid UTF-8 becomes U+FFFD. The bidirectional
// controls and zero-width characters, which reorder or hide what a line
// seems to say (Trojan Source), are shown as <U+202E> (but for the
// joiners that words and emoji need).
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
		case hidden(r) && !joiner(r):
			fmt.Fprintf(&b, "<U+%04X>", r)
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

// hidden reports whether r reorders or hides text without showing
// itself: the bidirectional embeddings, overrides and isolates (U+202A
// to U+202E, U+2066 to U+2069), the marks (U+200E, U+200F, U+061C), the
// zero-width characters (U+200B to U+200D, U+2060, U+FEFF) and the soft
// hyphen.
func hidden(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r >= 0x200b && r <= 0x200f, r == 0x2060, r == 0xfeff, r == 0x061c, r == 0x00ad:
		return true
	}
	return false
}

// joiner reports whether r is one of the zero-width characters text
// needs (the joiners of an emoji sequence or an Indic word, the soft
// hyphen): Text keeps them, Visible shows them.
func joiner(r rune) bool { return r == 0x200c || r == 0x200d || r == 0x00ad }

// Visible is s with every character a terminal would not show as itself
// written out: an escape, a control (newline and tab aside) or an invalid
// byte as \x1b, a C1 control as \u009b, a hidden character (bidi,
// zero-width) as <U+202E>. Nothing in it is obeyed, and nothing is
// dropped: the diff before ralph trust shows what the file holds.
func Visible(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, "\\u%04x", r)
		case hidden(r):
			fmt.Fprintf(&b, "<U+%04X>", r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}
