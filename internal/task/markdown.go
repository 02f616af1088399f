package task

import (
	"bytes"
	"sort"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// This file reads markdown for the markdown plan formats. goldmark (with
// its GFM task-list extension) says what is a heading, a list item, a
// checkbox or a code fence, so that "- [ ]" in a code block or in prose is
// never a task; the nodes' source segments give the byte offsets that let a
// writer flip one checkbox byte in place and leave the rest of the file
// alone.
//
// Checkbox marks: "[ ]" open, "[x]"/"[X]" done, and "[!]" failed: ralph's
// own mark for a task that ran out of attempts. GFM does not know "[!]",
// so other tools show it as text and an agent looking for "- [ ]" skips
// it, which is what a failed task needs; a reset turns it back into "[ ]",
// one byte again.

// Checkbox marks as written between the brackets.
const (
	markOpen   = ' '
	markDone   = 'x'
	markFailed = '!'
)

// mdDoc is parsed markdown: headings, list items and code fences in
// document order, with their byte offsets.
type mdDoc struct {
	src      []byte
	newlines []int
	headings []*mdHeading
	items    []*mdItem // every list item whose content starts with text, in order
	fences   []*mdFence
	// code are the byte ranges of the lines of code blocks (fenced and
	// indented) and HTML blocks: text there is never a task's metadata.
	code [][2]int
}

// mdHeading is one heading.
type mdHeading struct {
	level int
	text  string // its text, trimmed, without closing #s
	// start and end cover the whole heading line(s), end after the line
	// break; textStart and textEnd the text.
	start, end         int
	textStart, textEnd int
}

// mdItem is one list item that starts with text.
type mdItem struct {
	// box is the checkbox mark (markOpen, markDone, markFailed; 'X' is
	// folded into markDone), 0 for an item without one; boxOff is the
	// offset of the mark byte.
	box    byte
	boxOff int
	// lineStart is the start of the item's first line, headStart where its
	// text starts (after the marker and the checkbox), headEnd the end of
	// that first line's text.
	lineStart, headStart, headEnd int
	// contentStart is where the item's content starts (after "- ");
	// prefix is the text from the line start to there ("  - ", "1. ").
	contentStart int
	head         string   // the first line's text after the checkbox, trimmed
	more         []string // the item's other text: continuation lines and paragraphs
	moreAt       []int    // the offset of each line of more; -1 for paragraph breaks
	parent       *mdItem
	children     []*mdItem
	// end is the offset after the item's last line, nested items included.
	end   int
	depth int // 0 for a top-level item
}

// mdFence is a fenced code block.
type mdFence struct {
	lang string
	// segs are the byte ranges of its content lines.
	segs       []text.Segment
	start, end int // the content, from the first line to the last
	open       int // the start of the opening fence line; -1 when unknown
}

func (it *mdItem) prefix(src []byte) string { return string(src[it.lineStart:it.contentStart]) }

// parseMarkdown parses src. goldmark never fails: any bytes are markdown.
func parseMarkdown(src []byte) *mdDoc {
	d := &mdDoc{src: src}
	for i, b := range src {
		if b == '\n' {
			d.newlines = append(d.newlines, i)
		}
	}
	md := goldmark.New(goldmark.WithExtensions(extension.TaskList))
	root := md.Parser().Parse(text.NewReader(src))
	// open holds the list items the walk is inside, innermost last (nil
	// for an item that starts with no text): the nearest one with an
	// mdItem is the parent of the next.
	var open []*mdItem
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		li, isItem := n.(*ast.ListItem)
		if !entering {
			if isItem {
				open = open[:len(open)-1]
			}
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			d.addHeading(n)
		case *ast.FencedCodeBlock:
			d.addFence(n)
			d.addCode(n)
		case *ast.CodeBlock, *ast.HTMLBlock:
			d.addCode(n)
		}
		if !isItem {
			return ast.WalkContinue, nil
		}
		it := d.newItem(li)
		if it != nil {
			for k := len(open) - 1; k >= 0; k-- {
				if pi := open[k]; pi != nil {
					it.parent = pi
					it.depth = pi.depth + 1
					pi.children = append(pi.children, it)
					break
				}
			}
			d.items = append(d.items, it)
		}
		open = append(open, it)
		return ast.WalkContinue, nil
	})
	return d
}

// line returns the 1-based line of byte offset off.
func (d *mdDoc) line(off int) int { return 1 + sort.SearchInts(d.newlines, off) }

// lineStart returns the offset of the start of the line holding off.
func (d *mdDoc) lineStart(off int) int {
	return bytes.LastIndexByte(d.src[:off], '\n') + 1
}

// lineEnd returns the offset after the line break of the line holding off
// (len(src) on the last line).
func (d *mdDoc) lineEnd(off int) int {
	if off >= len(d.src) {
		return len(d.src)
	}
	if i := bytes.IndexByte(d.src[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(d.src)
}

func (d *mdDoc) addHeading(n *ast.Heading) {
	lines := n.Lines()
	if lines.Len() == 0 {
		// An empty ATX heading ("##"): it still ends a section.
		off := d.nodeOffset(n)
		if off < 0 {
			return
		}
		d.headings = append(d.headings, &mdHeading{level: n.Level, start: d.lineStart(off), end: d.lineEnd(off), textStart: off, textEnd: off})
		return
	}
	first, last := lines.At(0), lines.At(lines.Len()-1)
	h := &mdHeading{
		level:     n.Level,
		text:      strings.TrimSpace(string(segmentsText(d.src, lines))),
		start:     d.lineStart(first.Start),
		textStart: first.Start,
		textEnd:   trimRightOffset(d.src, first.Start, last.Stop),
	}
	h.end = d.lineEnd(max(last.Stop-1, first.Start))
	if !bytes.ContainsRune(d.src[h.start:first.Start], '#') {
		// A setext heading: its underline is the next line.
		h.end = d.lineEnd(h.end)
	}
	d.headings = append(d.headings, h)
}

// nodeOffset finds a source offset for a node without lines of its own:
// the end of the previous sibling, its descendants included (a list has
// no lines of its own: skipping it put an empty heading after a list back
// before the list), or -1.
func (d *mdDoc) nodeOffset(n ast.Node) int {
	for p := n.PreviousSibling(); p != nil; p = p.PreviousSibling() {
		if end := d.blockEnd(p); end > 0 {
			return d.lineEnd(end - 1)
		}
	}
	return -1
}

func (d *mdDoc) addFence(n *ast.FencedCodeBlock) {
	f := &mdFence{lang: strings.ToLower(string(n.Language(d.src))), open: -1}
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		f.segs = append(f.segs, lines.At(i))
	}
	if len(f.segs) > 0 {
		f.start, f.end = f.segs[0].Start, f.segs[len(f.segs)-1].Stop
		if ls := d.lineStart(f.start); ls > 0 {
			f.open = d.lineStart(ls - 1)
		}
	} else if n.Info != nil {
		f.open = d.lineStart(n.Info.Segment.Start)
	}
	d.fences = append(d.fences, f)
}

func (d *mdDoc) addCode(n ast.Node) {
	if lines := n.Lines(); lines.Len() > 0 {
		d.code = append(d.code, [2]int{lines.At(0).Start, lines.At(lines.Len() - 1).Stop})
	}
}

// inCode reports whether offset off is in a code or HTML block.
func (d *mdDoc) inCode(off int) bool { return inRanges(d.code, off) }

// newItem reads a list item whose first block is text, or returns nil.
func (d *mdDoc) newItem(n *ast.ListItem) *mdItem {
	first := n.FirstChild()
	if first == nil || first.Lines().Len() == 0 {
		return nil
	}
	switch first.(type) {
	case *ast.TextBlock, *ast.Paragraph:
	default:
		return nil
	}
	lines := first.Lines()
	seg := lines.At(0)
	it := &mdItem{contentStart: seg.Start, lineStart: d.lineStart(seg.Start), headStart: seg.Start}
	it.headEnd = trimRightOffset(d.src, seg.Start, seg.Stop)

	// The checkbox: goldmark decides for [ ], [x] and [X]; [!] is ours.
	s := seg.Start
	if s+3 <= it.headEnd && d.src[s] == '[' && d.src[s+2] == ']' && (s+3 == it.headEnd || isBlank(d.src[s+3])) {
		mark := d.src[s+1]
		_, gfm := first.FirstChild().(*east.TaskCheckBox)
		switch {
		case gfm && (mark == 'x' || mark == 'X'):
			it.box = markDone
		case gfm:
			it.box = markOpen
		case mark == markFailed:
			it.box = markFailed
		}
		if it.box != 0 {
			it.boxOff = s + 1
			it.headStart = s + 3
			for it.headStart < it.headEnd && isBlank(d.src[it.headStart]) {
				it.headStart++
			}
		}
	}
	it.head = string(d.src[it.headStart:it.headEnd])
	for i := 1; i < lines.Len(); i++ {
		ls := lines.At(i)
		if l := strings.TrimSpace(string(ls.Value(d.src))); l != "" {
			it.more = append(it.more, l)
			it.moreAt = append(it.moreAt, ls.Start)
		}
	}
	end := lines.At(lines.Len() - 1).Stop // the first block's last line: continuation lines are the item's
	for c := first.NextSibling(); c != nil; c = c.NextSibling() {
		if _, isList := c.(*ast.List); isList {
			end = max(end, d.blockEnd(c))
			continue
		}
		if cl := c.Lines(); cl.Len() > 0 {
			if len(it.more) > 0 {
				it.more = append(it.more, "")
				it.moreAt = append(it.moreAt, -1)
			}
			body := strings.Split(strings.TrimRight(dedent(string(segmentsText(d.src, cl))), "\n"), "\n")
			for k, l := range body {
				at := cl.At(min(k, cl.Len()-1)).Start
				if _, isPara := c.(*ast.Paragraph); isPara {
					l = strings.TrimSpace(l)
				}
				it.more = append(it.more, l)
				it.moreAt = append(it.moreAt, at)
			}
		}
		end = max(end, d.blockEnd(c))
	}
	it.end = d.lineEnd(max(end-1, seg.Start))
	return it
}

// blockEnd returns the largest source offset of n's lines and its
// descendants' lines; a fenced code block's closing fence line counts.
func (d *mdDoc) blockEnd(n ast.Node) int {
	end := 0
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || c.Type() != ast.TypeBlock {
			return ast.WalkContinue, nil
		}
		if l := c.Lines(); l.Len() > 0 {
			e := l.At(l.Len() - 1).Stop
			if _, fenced := c.(*ast.FencedCodeBlock); fenced {
				e = d.lineEnd(d.lineEnd(max(e-1, 0))) // the closing fence line
			}
			end = max(end, e)
		}
		return ast.WalkContinue, nil
	})
	return end
}

// section returns the byte range of the body of heading h: from after it to
// the next heading of the same or a higher level, or the end.
func (d *mdDoc) section(h *mdHeading) (start, end int) {
	start, end = h.end, len(d.src)
	for _, o := range d.headings {
		if o.start > h.start && o.level <= h.level {
			return start, o.start
		}
	}
	return start, end
}

// findHeading returns the first ## heading whose text matches one of names
// (case-insensitive), or nil: the sections of a progress.md.
func (d *mdDoc) findHeading(names ...string) *mdHeading {
	for _, h := range d.headings {
		if h.level != 2 {
			continue
		}
		for _, name := range names {
			if strings.EqualFold(h.text, name) {
				return h
			}
		}
	}
	return nil
}

// title returns the text of the document's first level-1 heading.
func (d *mdDoc) title() string {
	for _, h := range d.headings {
		if h.level == 1 {
			return h.text
		}
	}
	return ""
}

// overview is the plan's description: the body of an Overview (or Project
// Overview, Goal, Summary, Description) section, else the text between the
// title and the first heading, list or code block after it. Nothing at or
// after offset stop is part of it.
func (d *mdDoc) overview(stop int) string {
	sections := []string{"Overview", "Project Overview", "Goal", "Summary", "Description"}
	for _, h := range d.headings {
		if h.level < 2 || h.start >= stop {
			continue
		}
		for _, s := range sections {
			if strings.EqualFold(h.text, s) {
				start, end := d.sectionUntilAny(h)
				return cleanBody(d.src[start:max(start, min(end, stop))])
			}
		}
	}
	var title *mdHeading
	for _, h := range d.headings {
		if h.level == 1 {
			title = h
			break
		}
	}
	if title == nil {
		return ""
	}
	start, end := title.end, len(d.src)
	for _, h := range d.headings {
		if h.start >= start {
			end = h.start
			break
		}
	}
	for _, it := range d.items {
		if it.lineStart >= start && it.lineStart < end {
			end = it.lineStart
			break
		}
	}
	for _, f := range d.fences {
		if f.open >= start && f.open < end {
			end = f.open
			break
		}
	}
	return cleanBody(d.src[start:max(start, min(end, stop))])
}

// sectionUntilAny is a section that ends at the next heading of any level.
func (d *mdDoc) sectionUntilAny(h *mdHeading) (start, end int) {
	start, end = h.end, len(d.src)
	for _, o := range d.headings {
		if o.start > h.start {
			return start, o.start
		}
	}
	return start, end
}

// cleanBody trims a section body for use as a description: surrounding
// blank lines and --- rules go, line endings become \n.
func cleanBody(b []byte) string {
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && (strings.TrimSpace(lines[0]) == "" || isRule(lines[0])) {
		lines = lines[1:]
	}
	for len(lines) > 0 && (strings.TrimSpace(lines[len(lines)-1]) == "" || isRule(lines[len(lines)-1])) {
		lines = lines[:len(lines)-1]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// isRule reports a --- (or *** or ___) thematic break line.
func isRule(line string) bool {
	t := strings.ReplaceAll(strings.TrimSpace(line), " ", "")
	return len(t) >= 3 && (strings.Trim(t, "-") == "" || strings.Trim(t, "*") == "" || strings.Trim(t, "_") == "")
}

// segmentsText joins the bytes of segs.
func segmentsText(src []byte, segs *text.Segments) []byte {
	var b []byte
	for i := 0; i < segs.Len(); i++ {
		s := segs.At(i)
		if s.Padding > 0 {
			b = append(b, bytes.Repeat([]byte{' '}, s.Padding)...)
		}
		b = append(b, s.Value(src)...)
	}
	return b
}

// dedent removes the indentation common to all non-blank lines of s.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	if common <= 0 {
		return s
	}
	for i, l := range lines {
		if len(l) >= common {
			lines[i] = l[common:]
		} else {
			lines[i] = strings.TrimLeft(l, " \t")
		}
	}
	return strings.Join(lines, "\n")
}

// trimRightOffset returns the end of src[start:end] without trailing
// whitespace.
func trimRightOffset(src []byte, start, end int) int {
	for end > start && isSpaceByte(src[end-1]) {
		end--
	}
	return end
}

func isBlank(b byte) bool     { return b == ' ' || b == '\t' }
func isSpaceByte(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }
