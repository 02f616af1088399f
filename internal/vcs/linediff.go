package vcs

import (
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// lineChanges returns the blocks of lines that differ between a and b, in
// order: a minimal line diff (Myers, from diffmatchpatch with no time
// limit, so the same input always gives the same diff), then git's
// compaction of its groups (xdiff's xdl_change_compact with the indent
// heuristic, git's default), so that hunks start and end where git's do.
func lineChanges(a, b []string) []change {
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
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0 // deterministic: never cut short by the clock

	changedA := make([]bool, len(a)+2) // one sentinel either side, as xdiff
	changedB := make([]bool, len(b)+2)
	i, j := 0, 0
	for _, d := range dmp.DiffMainRunes(ra, rb, false) {
		n := utf8.RuneCountInString(d.Text)
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			i, j = i+n, j+n
		case diffmatchpatch.DiffDelete:
			for range n {
				changedA[1+i] = true
				i++
			}
		case diffmatchpatch.DiffInsert:
			for range n {
				changedB[1+j] = true
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
	return out
}

// lineRune is the n-th distinct line as a rune, skipping the surrogate
// range that does not survive a round trip through a string.
func lineRune(n int) rune {
	if n >= 0xD800 {
		n += 0x800
	}
	return rune(n)
}
