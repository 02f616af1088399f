package vcs

import (
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// lineChanges returns the blocks of lines that differ between a and b, in
// order: a minimal line diff (Myers, from diffmatchpatch, so the same
// input always gives the same diff), then git's compaction of its groups
// (xdiff's xdl_change_compact with the indent heuristic, git's default),
// so that hunks start and end where git's do. ok is false for a diff too
// costly to make here.
func lineChanges(a, b []string) ([]change, bool) {
	ids := map[string]rune{}
	encode := func(lines []string) []rune {
		out := make([]rune, len(lines))
		for i, l := range lines {
			r, ok := ids[l]
			if !ok {
				r = lineRune(len(ids))
				ids[l] = r
			}
			out[i] = r
		}
		return out
	}
	ra, rb := encode(a), encode(b)
	changedA := make([]bool, len(a)+2) // one sentinel either side, as xdiff
	changedB := make([]bool, len(b)+2)

	// As xdiff does before its Myers: the common ends are left out, and
	// so are lines with no match in the other file (changed whatever the
	// diff says) and runs of lines with too many matches among them.
	start := 0
	for start < len(ra) && start < len(rb) && ra[start] == rb[start] {
		start++
	}
	endA, endB := len(ra), len(rb)
	for endA > start && endB > start && ra[endA-1] == rb[endB-1] {
		endA, endB = endA-1, endB-1
	}
	keptA, keptB := discard(ra, rb, start, endA, changedA), discard(rb, ra, start, endB, changedB)
	seqA, seqB := make([]rune, len(keptA)), make([]rune, len(keptB))
	for k, i := range keptA {
		seqA[k] = ra[i]
	}
	for k, j := range keptB {
		seqB[k] = rb[j]
	}

	deadline := time.Now().Add(lineDiffBudget)
	diffs := myers(seqA, seqB, deadline)
	if time.Now().After(deadline) {
		// It may have been cut short: git, which has heuristics of its
		// own for such changes, makes the patch instead. The deadline
		// never shapes an answer that is used.
		return nil, false
	}
	i, j := 0, 0
	for _, d := range diffs {
		n := utf8.RuneCountInString(d.Text)
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			i, j = i+n, j+n
		case diffmatchpatch.DiffDelete:
			for range n {
				changedA[1+keptA[i]] = true
				i++
			}
		case diffmatchpatch.DiffInsert:
			for range n {
				changedB[1+keptB[j]] = true
				j++
			}
		}
	}
	fa := &xfile{recs: ra, lines: a, changed: changedA}
	fb := &xfile{recs: rb, lines: b, changed: changedB}
	compact(fa, fb)
	compact(fb, fa)

	var out []change
	for i, j := 0, 0; i < len(a) || j < len(b); {
		if !fa.isChanged(i) && !fb.isChanged(j) {
			i, j = i+1, j+1
			continue
		}
		c := change{i1: i, i2: j}
		for ; fa.isChanged(i); i++ {
			c.del++
		}
		for ; fb.isChanged(j); j++ {
			c.ins++
		}
		out = append(out, c)
	}
	return out, true
}

// myers is a minimal diff of a and b: Myers's bisection from
// diffmatchpatch, with the cases it leaves to its caller handled as its
// own DiffMain does, less the speed-ups that give up minimality (the
// half match, which DiffTimeout 0 turns off there).
func myers(a, b []rune, deadline time.Time) []diffmatchpatch.Diff {
	var head, tail []diffmatchpatch.Diff
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if n > 0 {
		head = []diffmatchpatch.Diff{{Type: diffmatchpatch.DiffEqual, Text: string(a[:n])}}
	}
	a, b = a[n:], b[n:]
	n = 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	if n > 0 {
		tail = []diffmatchpatch.Diff{{Type: diffmatchpatch.DiffEqual, Text: string(a[len(a)-n:])}}
	}
	a, b = a[:len(a)-n], b[:len(b)-n]

	var mid []diffmatchpatch.Diff
	del := diffmatchpatch.Diff{Type: diffmatchpatch.DiffDelete, Text: string(a)}
	ins := diffmatchpatch.Diff{Type: diffmatchpatch.DiffInsert, Text: string(b)}
	switch {
	case len(a) == 0 && len(b) == 0:
	case len(a) == 0:
		mid = append(mid, ins)
	case len(b) == 0:
		mid = append(mid, del)
	case len(a) == 1 || len(b) == 1:
		// With the ends trimmed, a single line cannot be common unless
		// the other side holds it; the bisection needs two or more.
		if i := runeIndex(b, a); len(a) == 1 && i >= 0 {
			mid = append(mid, diffmatchpatch.Diff{Type: diffmatchpatch.DiffInsert, Text: string(b[:i])},
				diffmatchpatch.Diff{Type: diffmatchpatch.DiffEqual, Text: string(a)},
				diffmatchpatch.Diff{Type: diffmatchpatch.DiffInsert, Text: string(b[i+1:])})
		} else if i := runeIndex(a, b); len(b) == 1 && i >= 0 {
			mid = append(mid, diffmatchpatch.Diff{Type: diffmatchpatch.DiffDelete, Text: string(a[:i])},
				diffmatchpatch.Diff{Type: diffmatchpatch.DiffEqual, Text: string(b)},
				diffmatchpatch.Diff{Type: diffmatchpatch.DiffDelete, Text: string(a[i+1:])})
		} else {
			mid = append(mid, del, ins)
		}
	default:
		dmp := diffmatchpatch.New()
		dmp.DiffTimeout = 0
		mid = dmp.DiffBisect(string(a), string(b), deadline)
	}
	return append(append(head, mid...), tail...)
}

// runeIndex is the index of the single rune of one in s, or -1.
func runeIndex(s, one []rune) int {
	for i, r := range s {
		if r == one[0] {
			return i
		}
	}
	return -1
}

// lineDiffBudget bounds the time one file's line diff may take in
// process: Myers costs the product of the lines and the edits, which a
// file rewritten throughout makes large.
const lineDiffBudget = 200 * time.Millisecond

// lineRune is the n-th distinct line as a rune, skipping the surrogate
// range that does not survive a round trip through a string.
func lineRune(n int) rune {
	if n >= 0xD800 {
		n += 0x800
	}
	return rune(n)
}

// xdiff's limits for lines with many matches (xdiffi.c, xprepare.c).
const (
	maxEqLimit    = 1024
	simscanWindow = 100
	kpdisRun      = 4
)

// discard is xdiff's xdl_cleanup_records for one side: of the lines
// [start, end) of f, those with no match in o are marked changed, and so
// are those with many matches that sit among such lines; it returns the
// rest, which the line diff compares.
func discard(f, o []rune, start, end int, changed []bool) []int {
	inOther := map[rune]int{}
	for _, r := range o {
		inOther[r]++
	}
	limit := min(bogoSqrt(len(f)), maxEqLimit)
	kind := make([]byte, len(f)) // 0: no match, 1: kept, 2: many matches
	for i := start; i < end; i++ {
		switch n := inOther[f[i]]; {
		case n == 0:
		case n >= limit:
			kind[i] = 2
		default:
			kind[i] = 1
		}
	}
	var kept []int
	for i := start; i < end; i++ {
		if kind[i] == 1 || (kind[i] == 2 && !manyAmongNone(kind, i, start, end-1)) {
			kept = append(kept, i)
		} else {
			changed[1+i] = true
		}
	}
	return kept
}

// bogoSqrt is xdiff's rough square root.
func bogoSqrt(n int) int {
	i := 1
	for ; n > 0; n >>= 2 {
		i <<= 1
	}
	return i
}

// manyAmongNone is xdiff's xdl_clean_mmatch: line i, one with many
// matches, is discarded when the lines around it (within [s, e]) are
// mostly lines with no match at all.
func manyAmongNone(kind []byte, i, s, e int) bool {
	s, e = max(s, i-simscanWindow), min(e, i+simscanWindow)
	none0, many0 := 0, 1
	for r := 1; i-r >= s; r++ {
		if kind[i-r] == 1 {
			break
		}
		if kind[i-r] == 0 {
			none0++
		} else {
			many0++
		}
	}
	if none0 == 0 {
		return false
	}
	none1, many1 := 0, 1
	for r := 1; i+r <= e; r++ {
		if kind[i+r] == 1 {
			break
		}
		if kind[i+r] == 0 {
			none1++
		} else {
			many1++
		}
	}
	if none1 == 0 {
		return false
	}
	return (many0+many1)*kpdisRun < many0+many1+none0+none1
}
