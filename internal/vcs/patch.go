package vcs

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
)

// emptyTree and emptyBlob are the ids git knows without an object for
// them (SHA-1).
const (
	emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	emptyBlob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
	nullID    = "0000000000000000000000000000000000000000"
)

// binaryProbe is how much of a file git looks at for a NUL byte to call
// it binary.
const binaryProbe = 8000

// contextLines is the -U3 of the patch.
const contextLines = 3

// treePatch writes `git diff --no-renames -U3` between two flattened trees
// in process, for paths keep accepts; errCannot when some file needs git
// (a submodule, a type change, a name git would quote, an object not
// loose or too large).
func (s *looseObjects) treePatch(from, to map[string]fileEntry, keep func(string) bool) ([]byte, error) {
	paths := make([]string, 0, len(from)+len(to))
	for p, a := range from {
		if b, ok := to[p]; (!ok || a != b) && keep(p) {
			paths = append(paths, p)
		}
	}
	for p := range to {
		if _, ok := from[p]; !ok && keep(p) {
			paths = append(paths, p)
		}
	}
	// git's order: that of the full paths, byte by byte (trees sort a
	// directory as its name with a slash, which comes to the same).
	slices.Sort(paths)
	var out bytes.Buffer
	for _, p := range paths {
		a, inA := from[p]
		b, inB := to[p]
		if err := s.filePatch(&out, p, a, inA, b, inB); err != nil {
			return nil, err
		}
	}
	return out.Bytes(), nil
}

// filePatch writes one file's part of the patch.
func (s *looseObjects) filePatch(out *bytes.Buffer, p string, a fileEntry, inA bool, b fileEntry, inB bool) error {
	if needsQuoting(p) || a.mode == "160000" || b.mode == "160000" {
		return errCannot
	}
	if inA && inB && (a.mode == "120000") != (b.mode == "120000") {
		return errCannot // a type change: git shows a deletion and a creation
	}
	var old, cur []byte
	var err error
	if inA {
		if old, err = s.blobOrEmpty(a.id); err != nil {
			return err
		}
	}
	if inB {
		if cur, err = s.blobOrEmpty(b.id); err != nil {
			return err
		}
	}
	out.WriteString("diff --git a/" + p + " b/" + p + "\n")
	switch {
	case !inA:
		out.WriteString("new file mode " + b.mode + "\n")
		a.id = nullID
	case !inB:
		out.WriteString("deleted file mode " + a.mode + "\n")
		b.id = nullID
	case a.mode != b.mode:
		out.WriteString("old mode " + a.mode + "\nnew mode " + b.mode + "\n")
	}
	if a.id == b.id {
		return nil // the mode alone changed
	}
	n := s.abbrevLen()
	out.WriteString("index " + a.id[:n] + ".." + b.id[:n])
	if inA && inB && a.mode == b.mode {
		out.WriteString(" " + a.mode)
	}
	out.WriteByte('\n')
	if len(old) == 0 && len(cur) == 0 {
		return nil // an empty file created or deleted
	}
	tab := ""
	if strings.Contains(p, " ") {
		tab = "\t" // so that the name's end is not read as trailing space
	}
	nameA, nameB := "a/"+p+tab, "b/"+p+tab
	if !inA {
		nameA = "/dev/null"
	}
	if !inB {
		nameB = "/dev/null"
	}
	if isBinary(old) || isBinary(cur) {
		out.WriteString("Binary files " + strings.TrimSuffix(nameA, "\t") + " and " +
			strings.TrimSuffix(nameB, "\t") + " differ\n")
		return nil
	}
	out.WriteString("--- " + nameA + "\n+++ " + nameB + "\n")
	if !writeHunks(out, splitLines(old), splitLines(cur)) {
		return errCannot
	}
	return nil
}

// blobOrEmpty reads a blob, the empty one included, which git knows
// without its object.
func (s *looseObjects) blobOrEmpty(id string) ([]byte, error) {
	if id == emptyBlob {
		return []byte{}, nil
	}
	return s.blob(id)
}

// needsQuoting reports whether git would quote p in a patch (core.quotePath
// as by default): control characters, a double quote, a backslash, and
// bytes past ASCII.
func needsQuoting(p string) bool {
	for i := range len(p) {
		if c := p[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return true
		}
	}
	return false
}

// isBinary is git's test: a NUL byte in the first binaryProbe bytes.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binaryProbe)], 0) >= 0
}

// splitLines cuts b after each newline; the last line may lack one.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

// change is a block of lines changed together: del lines of the old file
// from i1 replaced by ins lines of the new file from i2.
type change struct {
	i1, del, i2, ins int
}

// writeHunks writes the hunks of a text file's patch with three lines of
// context, as git's xdiff emits them; false when the line diff is too
// costly to make here.
func writeHunks(out *bytes.Buffer, a, b []string) bool {
	changes, ok := lineChanges(a, b)
	if !ok {
		return false
	}
	var fn []byte // the function line of the last hunk, as git keeps it
	prevSearch := -1
	for len(changes) > 0 {
		// A hunk takes the changes fewer than 2×context+1 lines apart.
		n := 1
		for n < len(changes) && changes[n].i1-(changes[n-1].i1+changes[n-1].del) <= 2*contextLines {
			n++
		}
		hunk := changes[:n]
		changes = changes[n:]
		first, last := hunk[0], hunk[n-1]
		s1, s2 := max(first.i1-contextLines, 0), max(first.i2-contextLines, 0)
		post := min(contextLines, len(a)-(last.i1+last.del), len(b)-(last.i2+last.ins))
		e1, e2 := last.i1+last.del+post, last.i2+last.ins+post

		if f, ok := funcLine(a, s1-1, prevSearch); ok {
			fn = f
		}
		prevSearch = s1 - 1
		out.WriteString("@@ -" + hunkRange(s1, e1-s1) + " +" + hunkRange(s2, e2-s2) + " @@")
		if len(fn) > 0 {
			out.WriteByte(' ')
			out.Write(fn)
		}
		out.WriteByte('\n')
		at := s1
		for _, c := range hunk {
			for ; at < c.i1; at++ {
				writeLine(out, ' ', a[at])
			}
			for _, l := range a[c.i1 : c.i1+c.del] {
				writeLine(out, '-', l)
			}
			for _, l := range b[c.i2 : c.i2+c.ins] {
				writeLine(out, '+', l)
			}
			at = c.i1 + c.del
		}
		for ; at < e1; at++ {
			writeLine(out, ' ', a[at])
		}
	}
	return true
}

// hunkRange is one side of a hunk header: "START,COUNT", with the count
// left out when it is 1 and the start one less when it is 0.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(count)
}

// writeLine writes one line of a hunk, marking a missing final newline.
func writeLine(out *bytes.Buffer, op byte, l string) {
	out.WriteByte(op)
	out.WriteString(l)
	if !strings.HasSuffix(l, "\n") {
		out.WriteString("\n\\ No newline at end of file\n")
	}
}

// funcLine is git's default function context for a hunk: the nearest line
// of the old file from start down to (not including) limit that begins
// with a letter, '_' or '$', cut to 80 bytes and without trailing space.
func funcLine(a []string, start, limit int) ([]byte, bool) {
	for l := start; l > limit && l >= 0; l-- {
		if l >= len(a) || a[l] == "" {
			continue
		}
		c := a[l][0]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' {
			line := a[l][:min(len(a[l]), 80)]
			return []byte(strings.TrimRight(line, " \t\n\v\f\r")), true
		}
	}
	return nil, false
}
