package guard

import (
	"bytes"
	"path"
	"strings"
)

// A strict guard rejects the work, but the tamper would stay in the tree
// for the next attempt to build on, and a later accepted task to commit.
// PutBack says what the file becomes with the changes that carry
// findings undone and the rest of the attempt's work kept: the caller
// writes it.

// maxPutBackCells bounds the work of the line diff PutBack makes (lines
// before × lines after); a longer file is put back whole.
const maxPutBackCells = 16 << 20

// PutBack returns the content of a file with the changes that carry
// findings (all about this file) put back as before has it: a finding
// about the whole file (Line 0), or a file the change made or deleted,
// puts the whole file back (remove: it was not there before); else each
// run of changed lines holding a finding's line is put back, and, in a
// JSON or TOML file, where that run replaced as many lines as it added,
// only the lines that carry findings (a value each, in the usual one key
// a line), so that other values changed beside them stay.
func PutBack(name string, before []byte, hadBefore bool, after []byte, hadAfter bool, findings []Finding) (content []byte, remove bool) {
	if !hadBefore {
		return nil, true
	}
	if !hadAfter {
		return before, false
	}
	a, b := splitLines(before), splitLines(after)
	if int64(len(a))*int64(len(b)) > maxPutBackCells {
		return before, false
	}
	oldLines, newLines := map[int]bool{}, map[int]bool{}
	for _, f := range findings {
		if f.Line == 0 {
			return before, false
		}
		if f.Removed {
			oldLines[f.Line] = true
		} else {
			newLines[f.Line] = true
		}
	}
	structured := false
	switch strings.ToLower(path.Ext(name)) {
	case ".json", ".toml":
		structured = true
	}
	var out bytes.Buffer
	ops := lineDiff(a, b)
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			out.Write(b[ops[i].new])
			i++
			continue
		}
		// A run of changes: removals first, then additions (lineDiff).
		var minus, plus []lineOp
		for ; i < len(ops) && ops[i].kind != ' '; i++ {
			if ops[i].kind == '-' {
				minus = append(minus, ops[i])
			} else {
				plus = append(plus, ops[i])
			}
		}
		hit := func(o lineOp) bool {
			if o.kind == '-' {
				return oldLines[o.old+1]
			}
			return newLines[o.new+1]
		}
		flagged := false
		for _, o := range append(minus[:len(minus):len(minus)], plus...) {
			flagged = flagged || hit(o)
		}
		switch {
		case !flagged:
			for _, o := range plus {
				out.Write(b[o.new])
			}
		case structured && len(minus) == len(plus):
			for k := range plus {
				if hit(minus[k]) || hit(plus[k]) {
					out.Write(a[minus[k].old])
				} else {
					out.Write(b[plus[k].new])
				}
			}
		default:
			for _, o := range minus {
				out.Write(a[o.old])
			}
		}
	}
	return out.Bytes(), false
}

// splitLines splits b into lines, each with its line ending.
func splitLines(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineOp is one line of a line diff: kind ' ' (both), '-' (old only) or
// '+' (new only), at index old in the old lines and new in the new.
type lineOp struct {
	kind     byte
	old, new int
}

// lineDiff is the longest-common-subsequence diff of a and b, each run
// of changes with its removals first.
func lineDiff(a, b [][]byte) []lineOp {
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if bytes.Equal(a[i], b[j]) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops, plus []lineOp
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && bytes.Equal(a[i], b[j]):
			ops = append(append(ops, plus...), lineOp{' ', i, j})
			plus = plus[:0]
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, lineOp{'-', i, -1})
			i++
		default:
			plus = append(plus, lineOp{'+', -1, j})
			j++
		}
	}
	return append(ops, plus...)
}
