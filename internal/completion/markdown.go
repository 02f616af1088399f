package completion

import "strings"

// maskCode returns s with fenced code blocks and inline code spans replaced
// by spaces, newlines kept, so that offsets in the result are offsets in s.
// It follows CommonMark closely enough for what agents write:
//
//   - A fence is a line of three or more backticks or tildes, after any
//     indentation and blockquote marks ("> "): fences inside list items and
//     quotes are indented. It is closed by a line of at least as many of
//     the same character and nothing else; an unclosed fence runs to the
//     end of the text, as CommonMark renders it. A backtick fence line with
//     another backtick after the run (```x```) is inline code instead.
//   - An inline span opens with a run of N backticks and closes at the next
//     run of exactly N, within one paragraph; an unmatched run is literal.
//   - Four-space indented code blocks are not treated as code: indented
//     lines in agent messages are far more often list continuations, and
//     masking them would hide real markers.
func maskCode(s string) string {
	if !strings.ContainsAny(s, "`~") {
		return s
	}
	b := []byte(s)
	var (
		inFence   bool
		fenceChar byte
		fenceLen  int
		para      = -1 // start of the current paragraph, -1 between paragraphs
	)
	endPara := func(at int) {
		if para >= 0 {
			maskSpans(b, s, para, at)
			para = -1
		}
	}
	for start := 0; start < len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		line := s[start:end]
		switch {
		case inFence:
			mask(b, start, end)
			if c, n := fenceRun(line); c == fenceChar && n >= fenceLen && strings.TrimSpace(afterRun(line)) == "" {
				inFence = false
			}
		case opensFence(line):
			endPara(start)
			mask(b, start, end)
			inFence = true
			fenceChar, fenceLen = fenceRun(line)
		case strings.TrimSpace(line) == "":
			endPara(start)
		case para < 0:
			para = start
		}
		start = end + 1
	}
	endPara(len(s))
	return string(b)
}

// fenceRun returns the character and length of the run of backticks or
// tildes that starts line after indentation and blockquote marks.
func fenceRun(line string) (byte, int) {
	t := strings.TrimLeft(line, " \t>")
	if t == "" || (t[0] != '`' && t[0] != '~') {
		return 0, 0
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	return t[0], n
}

// afterRun returns what follows the fence run of line.
func afterRun(line string) string {
	t := strings.TrimLeft(line, " \t>")
	_, n := fenceRun(line)
	return t[n:]
}

func opensFence(line string) bool {
	c, n := fenceRun(line)
	if n < 3 {
		return false
	}
	// The info string of a backtick fence cannot hold a backtick.
	return c == '~' || !strings.Contains(afterRun(line), "`")
}

// maskSpans masks the inline code spans of the paragraph s[from:to].
func maskSpans(b []byte, s string, from, to int) {
	// The runs of backticks, in order; a span pairs a run with the next run
	// of the same length.
	type run struct{ start, n int }
	var runs []run
	for i := from; i < to; {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < to && s[j] == '`' {
			j++
		}
		runs = append(runs, run{i, j - i})
		i = j
	}
	// unclosed[n]: a run of length n found no closer, so no later one will.
	unclosed := map[int]bool{}
	for i := 0; i < len(runs); i++ {
		open := runs[i]
		if unclosed[open.n] {
			continue
		}
		closer := -1
		for j := i + 1; j < len(runs); j++ {
			if runs[j].n == open.n {
				closer = j
				break
			}
		}
		if closer < 0 {
			unclosed[open.n] = true
			continue
		}
		mask(b, open.start, runs[closer].start+open.n)
		i = closer
	}
}

// mask replaces b[from:to] with spaces, keeping newlines.
func mask(b []byte, from, to int) {
	for i := from; i < to; i++ {
		if b[i] != '\n' {
			b[i] = ' '
		}
	}
}
