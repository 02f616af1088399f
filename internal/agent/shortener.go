package agent

import "github.com/ralph-loop/ralph/internal/proc"

// shortener streams one over-long line and keeps a bounded, still valid
// JSON version of it: every string literal longer than the cap becomes its
// head, an elision marker and its tail; whitespace between tokens is
// dropped; once the output has passed the budget, the remaining elements of
// each open container are dropped. Decoders then see the line's structure
// (its type, its short fields) without the line's size. A line that turns
// out not to be JSON keeps its raw head and tail instead.
//
// The lexer is lenient: it checks only what it needs to keep valid input
// valid and to stay bounded on anything else. It is not jsontext, which the
// decoders use: a tokenizer hands out whole tokens, and here one string is
// megabytes that must never be held.
type shortener struct {
	lim  lineLimits
	hard int // lim.hardCap()
	out  []byte

	// Raw head and tail, for a line that is not JSON.
	rawLen  int64
	rawHead []byte
	rawTail proc.Tail
	bad     bool

	started bool   // the first token has been seen
	done    bool   // the top-level value is complete
	stack   []byte // open containers, '{' or '['
	skip    int    // > 0: drop everything until the container at this depth closes
	litLen  int    // length of the current literal (number, true, ...)

	// The current string literal.
	inStr   bool
	esc     int    // 0 plain, -1 after '\', n > 0: n hex digits of \uXXXX left
	keep    bool   // the string is written (not inside a skipped element)
	limit   int    // strings longer than this are shortened...
	headMax int    // ...to at most headMax bytes of head
	tailMax int    // and tailMax bytes of tail
	strLen  int64  // content bytes so far
	strBuf  []byte // content while it is at most limit bytes
	long    bool   // content passed limit: head written, tail in a proc.Tail
	headLen int
	tail    proc.Tail
	scratch []byte
}

func (s *shortener) reset() {
	s.hard = s.lim.hardCap()
	s.out = s.out[:0]
	s.rawLen, s.rawHead, s.bad = 0, s.rawHead[:0], false
	s.rawTail.Reset(s.lim.rawTail)
	s.started, s.done, s.stack, s.skip, s.litLen = false, false, s.stack[:0], 0, 0
	s.inStr = false
}

func (s *shortener) fail() { s.bad = true }

func (s *shortener) write(p []byte) {
	s.rawLen += int64(len(p))
	if n := min(len(p), s.lim.rawHead-len(s.rawHead)); n > 0 {
		s.rawHead = append(s.rawHead, p[:n]...)
	}
	_, _ = s.rawTail.Write(p)
	for i := 0; i < len(p) && !s.bad; {
		if s.inStr {
			i += s.stringBytes(p[i:])
			continue
		}
		s.token(p[i])
		i++
		if len(s.out) > s.hard {
			s.fail()
		}
	}
}

// finish returns the kept line; it is valid until the next reset.
func (s *shortener) finish() []byte {
	if !s.bad && s.done {
		return s.out
	}
	// Not JSON, or cut short: keep the raw head and tail.
	head := s.rawHead[:utf8Cut(s.rawHead, len(s.rawHead))]
	t := s.rawTail.AppendTo(s.scratch[:0])
	s.scratch = t[:0]
	tail := utf8Start(t)
	s.out = append(s.out[:0], head...)
	s.out = appendMarker(s.out, s.rawLen-int64(len(head))-int64(len(tail)))
	s.out = append(s.out, tail...)
	return s.out
}

// token handles one byte outside string literals.
func (s *shortener) token(c byte) {
	switch c {
	case ' ', '\t', '\r', '\n':
		return // dropped: a shortened line is compact
	}
	if s.done {
		s.fail() // something after the top-level value
		return
	}
	if !s.started {
		s.started = true
		if c != '{' && c != '[' && c != '"' {
			s.fail()
			return
		}
	}
	keep := s.skip == 0
	if c != '"' && !isStructural(c) {
		s.litLen++
		if !isLiteral(c) || len(s.stack) == 0 || s.litLen > s.lim.maxLiteral {
			s.fail()
			return
		}
		if keep {
			s.out = append(s.out, c)
		}
		return
	}
	s.litLen = 0
	switch c {
	case '"':
		s.startString(keep)
	case '{', '[':
		if len(s.stack) >= s.lim.maxDepth {
			s.fail()
			return
		}
		s.stack = append(s.stack, c)
		if keep {
			s.out = append(s.out, c)
		}
	case '}', ']':
		n := len(s.stack)
		if n == 0 || s.stack[n-1] != c-2 { // '{'+2 == '}', '['+2 == ']'
			s.fail()
			return
		}
		s.stack = s.stack[:n-1]
		if s.skip == n {
			s.skip, keep = 0, true
		}
		if keep {
			s.out = append(s.out, c)
		}
		s.done = n == 1
	case ',':
		switch {
		case !keep:
		case len(s.stack) == 0:
			s.fail()
		case len(s.out) > s.lim.budget:
			// Drop the rest of this container, comma included, so that
			// what is kept stays valid.
			s.skip = len(s.stack)
		default:
			s.out = append(s.out, c)
		}
	case ':':
		if keep {
			s.out = append(s.out, c)
		}
	}
}

func isStructural(c byte) bool {
	switch c {
	case '{', '}', '[', ']', ',', ':':
		return true
	}
	return false
}

// isLiteral reports the bytes of numbers, true, false and null.
func isLiteral(c byte) bool {
	switch {
	case '0' <= c && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
		return true
	case c == 't', c == 'r', c == 'u', c == 'f', c == 'a', c == 'l', c == 's', c == 'n':
		return true
	}
	return false
}

func (s *shortener) startString(keep bool) {
	s.inStr, s.esc, s.keep = true, 0, keep
	s.strLen, s.strBuf, s.long = 0, s.strBuf[:0], false
	if len(s.out) > s.lim.budget {
		s.limit, s.headMax, s.tailMax = s.lim.smallCap, s.lim.smallHead, s.lim.smallTail
	} else {
		s.limit, s.headMax, s.tailMax = s.lim.strCap, s.lim.strHead, s.lim.strTail
	}
	if keep {
		s.out = append(s.out, '"')
	}
}

// stringBytes consumes string content up to and including the closing
// quote and returns how many bytes it used. It is the hot loop of a huge
// line, so content is handed on once per call, not per escape.
func (s *shortener) stringBytes(p []byte) int {
	i := 0
	for i < len(p) {
		if s.esc == 0 {
			for i < len(p) && p[i] != '"' && p[i] != '\\' {
				i++
			}
			if i == len(p) {
				break
			}
			if p[i] == '"' {
				s.content(p[:i])
				s.endString()
				return i + 1
			}
			s.esc = -1
		} else if s.esc < 0 && p[i] == 'u' {
			s.esc = 4
		} else if s.esc < 0 {
			s.esc = 0
		} else {
			s.esc--
		}
		i++
	}
	s.content(p)
	return len(p)
}

func (s *shortener) content(b []byte) {
	if len(b) == 0 {
		return
	}
	s.strLen += int64(len(b))
	if !s.keep {
		return
	}
	if s.long {
		_, _ = s.tail.Write(b)
		return
	}
	if len(s.strBuf)+len(b) <= s.limit {
		s.strBuf = append(s.strBuf, b...)
		return
	}
	// Too long: write the head now, keep only the tail from here on.
	n := s.limit - len(s.strBuf)
	s.strBuf = append(s.strBuf, b[:n]...)
	s.headLen = headCut(s.strBuf, s.headMax)
	s.out = append(s.out, s.strBuf[:s.headLen]...)
	s.long = true
	// Five bytes more than the tail: the context tailStart needs.
	s.tail.Reset(s.tailMax + 5)
	_, _ = s.tail.Write(s.strBuf[s.headLen:])
	_, _ = s.tail.Write(b[n:])
}

func (s *shortener) endString() {
	s.inStr = false
	if len(s.stack) == 0 {
		s.done = true
	}
	if !s.keep {
		return
	}
	if s.long {
		t := s.tail.AppendTo(s.scratch[:0])
		s.scratch = t[:0]
		t = t[tailStart(t):]
		s.out = appendMarker(s.out, s.strLen-int64(s.headLen)-int64(len(t)))
		s.out = append(s.out, t...)
	} else {
		s.out = append(s.out, s.strBuf...)
	}
	s.out = append(s.out, '"')
	if len(s.out) > s.hard {
		s.fail()
	}
}

// headCut returns the longest prefix of string content b, at most n bytes,
// that ends neither inside an escape sequence nor inside a UTF-8 character.
// b starts at the beginning of the content.
func headCut(b []byte, n int) int {
	cut, esc := 0, 0
	for i := 0; i < n && i < len(b); i++ {
		switch {
		case esc < 0 && b[i] == 'u':
			esc = 4
		case esc < 0:
			esc = 0
		case esc > 0:
			esc--
		case b[i] == '\\':
			esc = -1
		}
		if esc == 0 {
			cut = i + 1
		}
	}
	return utf8Cut(b, cut)
}

// tailStart returns where a tail cut from the middle of string content may
// start. What precedes the tail is gone, so escape state is unknown; but an
// escape sequence is at most six bytes (\uXXXX), so a position with no
// backslash in the five bytes before it cannot be inside one. A tail dense
// with backslashes may find no such position and is then dropped.
func tailStart(t []byte) int {
	run := 0
	for i, c := range t {
		if run >= 5 {
			return len(t) - len(utf8Start(t[i:]))
		}
		if c == '\\' {
			run = 0
		} else {
			run++
		}
	}
	return len(t)
}
