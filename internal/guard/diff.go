package guard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// fileDiff is one file of the diff, reduced to what the rules look at.
type fileDiff struct {
	oldPath, newPath string // "" on the side where the file does not exist
	isNew, isDelete  bool
	isBinary         bool
	// emptied: the file still exists but the diff leaves it with no lines.
	emptied          bool
	oldMode, newMode os.FileMode
	groups           []group
}

// path is the name a finding about the whole file uses.
func (f *fileDiff) path() string {
	if f.newPath != "" {
		return f.newPath
	}
	return f.oldPath
}

// group is one hunk, or several hunks close enough to be one change: a diff
// made with -U0 splits what a reader sees as one edit into pieces, so hunks
// fewer than groupGap unchanged lines apart are read together. That makes the
// "same hunk" of the rules mean the same with -U0 and with -U3 diffs.
type group struct {
	lines []line
}

const groupGap = 3

// line is one line of a hunk.
type line struct {
	op   byte   // '-', '+' or ' '
	text string // without the line ending
	// old and new are the line's numbers in the old and new file; 0 on the
	// side it is not on.
	old, new int
	// commented: the line is all comment (a line comment, or inside a
	// block comment opened within the hunk on its side), no code.
	commented bool
	// code is the line without its comments; remark is the text of its
	// comments without their markers (a trailing one included: the "#
	// self.assertEqual(...)" of "pass  # self.assertEqual(...)").
	code, remark string
	// body is the text a line is paired by: its remark when it is all
	// comment, else its trimmed text.
	body string
	// comment is the function context git prints in the header of the
	// line's hunk: the nearest line above the hunk that looks like a
	// function (or a Makefile rule, an INI section with a diff driver).
	comment string
	// unclosed: the line opens a block comment that the hunk does not
	// close, or that closes only after lines the change did not add: those
	// unchanged lines are commented out too.
	unclosed bool
}

// parseDiff reads a git diff. Names are those of git's a/ and b/ sides
// without the prefixes, quoted names decoded.
func parseDiff(diff []byte) ([]*fileDiff, error) {
	diff = normalizeEOL(diff)
	if combinedDiff.Match(diff) {
		// go-gitdiff skips these without a word; reading nothing would
		// pass everything.
		return nil, errors.New("a combined (merge) diff: diff the task's start commit against one tree instead")
	}
	files, _, err := gitdiff.Parse(bytes.NewReader(diff))
	if err != nil {
		return nil, err
	}
	out := make([]*fileDiff, 0, len(files))
	for _, f := range files {
		out = append(out, convert(f))
	}
	return out, nil
}

var combinedDiff = regexp.MustCompile(`(?m)^diff --(?:cc|combined) `)

// normalizeEOL turns a diff whose own lines end in CRLF (one that went
// through a Windows tool) into git's LF form; CR inside content lines of an
// LF diff stays and is dropped per line later.
func normalizeEOL(diff []byte) []byte {
	first, _, _ := bytes.Cut(diff, []byte("\n"))
	if !bytes.HasSuffix(first, []byte("\r")) {
		return diff
	}
	return bytes.ReplaceAll(diff, []byte("\r\n"), []byte("\n"))
}

func convert(f *gitdiff.File) *fileDiff {
	d := &fileDiff{
		oldPath: cleanPath(f.OldName), newPath: cleanPath(f.NewName),
		isNew: f.IsNew || f.IsCopy, isDelete: f.IsDelete, isBinary: f.IsBinary,
		oldMode: f.OldMode, newMode: f.NewMode,
	}
	if d.isNew {
		d.oldPath = ""
	}
	if d.isDelete {
		d.newPath = ""
	}
	if f.IsCopy {
		// A copy leaves its source in place: only the new side is news.
		d.oldPath = ""
	}
	frags := append([]*gitdiff.TextFragment(nil), f.TextFragments...)
	sort.SliceStable(frags, func(i, j int) bool { return frags[i].OldPosition < frags[j].OldPosition })
	var end int64 = -groupGap - 1
	for _, fr := range frags {
		if fr.NewPosition == 0 && fr.NewLines == 0 && !d.isDelete {
			d.emptied = true
		}
		if len(d.groups) == 0 || fr.OldPosition-end > groupGap {
			d.groups = append(d.groups, group{})
		}
		g := &d.groups[len(d.groups)-1]
		g.lines = append(g.lines, fragmentLines(fr)...)
		end = fr.OldPosition + fr.OldLines
	}
	for i := range d.groups {
		markComments(d.path(), d.groups[i].lines)
	}
	return d
}

func fragmentLines(fr *gitdiff.TextFragment) []line {
	oldN, newN := int(fr.OldPosition), int(fr.NewPosition)
	comment := strings.TrimSpace(fr.Comment)
	out := make([]line, 0, len(fr.Lines))
	for _, l := range fr.Lines {
		ln := line{text: strings.TrimRight(l.Line, "\r\n"), comment: comment}
		switch l.Op {
		case gitdiff.OpDelete:
			ln.op, ln.old = '-', oldN
			oldN++
		case gitdiff.OpAdd:
			ln.op, ln.new = '+', newN
			newN++
		default:
			ln.op, ln.old, ln.new = ' ', oldN, newN
			oldN++
			newN++
		}
		out = append(out, ln)
	}
	return out
}

// cleanPath makes a diff name or an option's path comparable: slash
// separated, no leading "./", and "" for git's /dev/null.
func cleanPath(p string) string {
	if p == "" || p == "/dev/null" {
		return ""
	}
	p = path.Clean(strings.ReplaceAll(p, "\\", "/"))
	p = strings.TrimPrefix(p, "./")
	if p == "." {
		return ""
	}
	return p
}

// describeFile says what happened to a file that has no lines to show.
func describeFile(f *fileDiff) string {
	switch {
	case f.isDelete:
		return "file deleted"
	case f.isNew:
		return "file added"
	case f.oldPath != "" && f.newPath != "" && f.oldPath != f.newPath:
		return fmt.Sprintf("renamed %s -> %s", f.oldPath, f.newPath)
	case f.isBinary:
		return "binary file changed"
	case f.oldMode != 0 && f.newMode != 0 && f.oldMode != f.newMode:
		return fmt.Sprintf("mode %o -> %o", f.oldMode, f.newMode)
	}
	return "file changed"
}

// markComments sets commented, code, remark, body and unclosed on a
// group's lines, each side read in order: a block comment opened on one
// line comments out the lines after it on the same side.
func markComments(p string, lines []line) {
	sx, ok := syntaxOf(p)
	for i := range lines {
		lines[i].body = strings.TrimSpace(lines[i].text)
		lines[i].code = lines[i].body
	}
	if !ok {
		return
	}
	markSide(sx, lines, '-')
	markSide(sx, lines, '+')
}

func markSide(sx syntax, lines []line, op byte) {
	s := oldSide
	if op == '+' {
		s = newSide
	}
	inBlock, opener := false, -1
	// covers: the open block holds lines the change did not make on this
	// side (context lines, or lines between hunks the diff does not show).
	covers := false
	prev := -1
	for i := range lines {
		l := &lines[i]
		if l.op != op && l.op != ' ' {
			continue
		}
		n := lineNo2(*l, s)
		if inBlock && (l.op == ' ' || prev >= 0 && n != prev+1) {
			covers = true
		}
		prev = n
		sc := sx.scan(l.text, inBlock)
		if l.op == op {
			l.commented, l.code, l.remark = sc.commented(), sc.code, sc.remark
			if l.commented {
				l.body = sc.remark
			}
		}
		switch {
		case !inBlock && sc.after:
			opener, covers = -1, false
			if sc.commented() {
				opener = i
			}
		case inBlock && !sc.after:
			if opener >= 0 && lines[opener].op == op && covers {
				lines[opener].unclosed = true
			}
			opener = -1
		}
		inBlock = sc.after
	}
	if inBlock && opener >= 0 && lines[opener].op == op {
		lines[opener].unclosed = true
	}
}
