package vcs

// This file is git's xdiff change compaction (xdiffi.c,
// xdl_change_compact), indent heuristic included: a line diff can place a
// group of added or removed lines anywhere it slides over identical
// lines, and git picks one place by these rules. The same rules make the
// same hunks as `git diff` from any minimal diff.

// xfile is one side of a line diff: its lines (as the ids they compare
// by, and as text for the indents) and which of them changed, with a
// false sentinel before the first and after the last.
type xfile struct {
	recs    []rune
	lines   []string
	changed []bool
}

func (f *xfile) isChanged(i int) bool { return f.changed[i+1] }
func (f *xfile) set(i int, v bool)    { f.changed[i+1] = v }

// group is a run of changed lines [start, end) in one file; an empty one
// sits between two unchanged lines.
type xgroup struct{ start, end int }

func (f *xfile) firstGroup() xgroup {
	g := xgroup{}
	for f.isChanged(g.end) {
		g.end++
	}
	return g
}

// next moves to the next group; false at the end of the file.
func (f *xfile) next(g *xgroup) bool {
	if g.end == len(f.recs) {
		return false
	}
	g.start = g.end + 1
	for g.end = g.start; f.isChanged(g.end); g.end++ {
	}
	return true
}

// previous moves to the previous group; at the start of the file it
// stays (the other file's group, kept in step, never gets there first).
func (f *xfile) previous(g *xgroup) {
	if g.start == 0 {
		return
	}
	g.end = g.start - 1
	for g.start = g.end; f.isChanged(g.start - 1); g.start-- {
	}
}

// slideDown moves g one line down when the line after it equals its
// first line, merging with a group it meets.
func (f *xfile) slideDown(g *xgroup) bool {
	if g.end < len(f.recs) && f.recs[g.start] == f.recs[g.end] {
		f.set(g.start, false)
		f.set(g.end, true)
		g.start++
		g.end++
		for f.isChanged(g.end) {
			g.end++
		}
		return true
	}
	return false
}

// slideUp moves g one line up when the line before it equals its last
// line, merging with a group it meets.
func (f *xfile) slideUp(g *xgroup) bool {
	if g.start > 0 && f.recs[g.start-1] == f.recs[g.end-1] {
		g.start--
		g.end--
		f.set(g.start, true)
		f.set(g.end, false)
		for f.isChanged(g.start - 1) {
			g.start--
		}
		return true
	}
	return false
}

// indentMaxSliding bounds the places the indent heuristic weighs.
const indentMaxSliding = 100

// compact slides each group of f's changes as git does, keeping o (the
// other file) in step: up and down as far as it goes (merging groups it
// meets), then back to line up with a change in o if it can, else to the
// place the indent heuristic scores best.
func compact(f, o *xfile) {
	g, og := f.firstGroup(), o.firstGroup()
	for {
		if g.end != g.start {
			var earliestEnd, size int
			endMatchingOther := -1
			for {
				size = g.end - g.start
				endMatchingOther = -1
				for f.slideUp(&g) {
					o.previous(&og)
				}
				earliestEnd = g.end
				if og.end > og.start {
					endMatchingOther = g.end
				}
				for f.slideDown(&g) {
					o.next(&og)
					if og.end > og.start {
						endMatchingOther = g.end
					}
				}
				if size == g.end-g.start {
					break
				}
			}
			switch {
			case g.end == earliestEnd:
				// It cannot move.
			case endMatchingOther != -1:
				for og.end == og.start {
					f.slideUp(&g)
					o.previous(&og)
				}
			default:
				bestShift := -1
				var best splitScore
				shift := max(earliestEnd, g.end-size-1, g.end-indentMaxSliding)
				for ; shift <= g.end; shift++ {
					var score splitScore
					score.add(f.measure(shift))
					score.add(f.measure(shift - size))
					if bestShift == -1 || score.cmp(best) <= 0 {
						best, bestShift = score, shift
					}
				}
				for g.end > bestShift {
					f.slideUp(&g)
					o.previous(&og)
				}
			}
		}
		if !f.next(&g) {
			return
		}
		o.next(&og)
	}
}

// The indent heuristic's weights, git's own.
const (
	maxIndent                       = 200
	maxBlanks                       = 20
	startOfFilePenalty              = 1
	endOfFilePenalty                = 21
	totalBlankWeight                = -30
	postBlankWeight                 = 6
	relativeIndentPenalty           = -4
	relativeIndentWithBlankPenalty  = 10
	relativeOutdentPenalty          = 24
	relativeOutdentWithBlankPenalty = 17
	relativeDedentPenalty           = 23
	relativeDedentWithBlankPenalty  = 17
	indentWeight                    = 60
)

// splitMeasure describes the place between two lines where a group
// would start or end.
type splitMeasure struct {
	endOfFile  bool
	indent     int // of the line after the split; -1 when blank
	preBlank   int // blank lines just above the split
	preIndent  int // of the nearest non-blank line above; -1 when none
	postBlank  int // blank lines after the line after the split
	postIndent int // of the nearest non-blank line below that; -1 when none
}

type splitScore struct{ effectiveIndent, penalty int }

// indentOf is a line's indentation with tabs to multiples of 8, or -1
// for a line of nothing but white space.
func indentOf(l string) int {
	n := 0
	for i := range len(l) {
		switch l[i] {
		case ' ':
			n++
		case '\t':
			n += 8 - n%8
		case '\n', '\v', '\f', '\r':
		default:
			return n
		}
		if n >= maxIndent {
			return maxIndent
		}
	}
	return -1
}

func (f *xfile) measure(split int) splitMeasure {
	m := splitMeasure{preIndent: -1, postIndent: -1}
	for i := split - 1; i >= 0; i-- {
		m.preIndent = indentOf(f.lines[i])
		if m.preIndent != -1 {
			break
		}
		m.preBlank++
		if m.preBlank == maxBlanks {
			m.preIndent = 0
			break
		}
	}
	if split >= len(f.lines) {
		m.endOfFile, m.indent = true, -1
	} else {
		m.indent = indentOf(f.lines[split])
	}
	for i := split + 1; i < len(f.lines); i++ {
		m.postIndent = indentOf(f.lines[i])
		if m.postIndent != -1 {
			break
		}
		m.postBlank++
		if m.postBlank == maxBlanks {
			m.postIndent = 0
			break
		}
	}
	return m
}

func (s *splitScore) add(m splitMeasure) {
	if m.preIndent == -1 && m.preBlank == 0 {
		s.penalty += startOfFilePenalty
	}
	if m.endOfFile {
		s.penalty += endOfFilePenalty
	}
	postBlank := 0
	if m.indent == -1 {
		postBlank = 1 + m.postBlank
	}
	totalBlank := m.preBlank + postBlank
	s.penalty += totalBlankWeight*totalBlank + postBlankWeight*postBlank
	indent := m.indent
	if indent == -1 {
		indent = m.postIndent
	}
	anyBlanks := totalBlank != 0
	s.effectiveIndent += indent
	switch {
	case indent == -1, m.preIndent == -1, indent == m.preIndent:
	case indent > m.preIndent:
		s.penalty += pick(anyBlanks, relativeIndentWithBlankPenalty, relativeIndentPenalty)
	case m.postIndent != -1 && m.postIndent > indent:
		s.penalty += pick(anyBlanks, relativeOutdentWithBlankPenalty, relativeOutdentPenalty)
	default:
		s.penalty += pick(anyBlanks, relativeDedentWithBlankPenalty, relativeDedentPenalty)
	}
}

func pick(cond bool, yes, no int) int {
	if cond {
		return yes
	}
	return no
}

// cmp orders scores: below zero when s is the better split.
func (s splitScore) cmp(t splitScore) int {
	c := 0
	if s.effectiveIndent > t.effectiveIndent {
		c = 1
	} else if s.effectiveIndent < t.effectiveIndent {
		c = -1
	}
	return indentWeight*c + (s.penalty - t.penalty)
}
