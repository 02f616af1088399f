package guard

import (
	"path"
	"sort"
	"strings"
)

// The count-based rows (onAdded, onAddedRaw, onRemoved, onCommented) ask
// "did this change add a skip, remove an assertion?". A line edited in
// place shows as one removed and one added line that both match; a test
// moved to another file or place shows as identical lines removed here and
// added there. Neither weakens anything, so matches are paired off: first
// within a hunk group (identical text first, then in order), then across
// the whole diff by identical text. What is left over is reported.

// lineRef points at one line of the diff.
type lineRef struct{ fi, gi, li int }

// candidate is an unpaired match that may become a finding.
type candidate struct {
	ri  int // row index
	ref lineRef
	key string
}

// checkLines applies the count-based rows. gone marks test files already
// reported deleted; removedTests names, per file, the tests reported
// removed (their assertions went with them).
func (c *checker) checkLines(gone []bool, removedTests map[int]map[string]bool) {
	budget := map[int]map[string]int{}
	var cands []candidate
	for fi, f := range c.files {
		for gi, g := range f.groups {
			for ri, r := range c.rows {
				plusOp, minusOp := byte('+'), byte('-')
				switch r.on {
				case onAdded, onAddedRaw, onCommented:
				case onRemoved:
					plusOp, minusOp = '-', '+'
				default:
					continue
				}
				var plus, minus []int
				if c.claims(r, f.pathOn(side(plusOp))) {
					plus = c.matches(r, f, g, plusOp, true)
				}
				if c.claims(r, f.pathOn(side(minusOp))) {
					minus = c.matches(r, f, g, minusOp, false)
				}
				plus, minus = pairOff(g, plus, minus)
				for _, li := range minus {
					if budget[ri] == nil {
						budget[ri] = map[string]int{}
					}
					budget[ri][pairKey(r, f, g.lines[li])]++
				}
				if r.on == onRemoved && gone[fi] {
					continue
				}
				for _, li := range plus {
					cands = append(cands, candidate{ri, lineRef{fi, gi, li}, pairKey(r, f, g.lines[li])})
				}
				if r.on == onCommented {
					c.checkUnclosed(f, g, r)
				}
			}
		}
	}
	for _, k := range cands {
		if budget[k.ri][k.key] > 0 {
			budget[k.ri][k.key]--
			continue
		}
		c.report(k, removedTests[k.ref.fi])
	}
}

// matches lists the lines of g with op that row r counts. plus says
// whether they are the side the row reports. An assertion counts only if
// it can fail (vacuous); an onRemoved row's other side also counts added
// lines that comment the same assertion out (those are reported as
// assertion-commented instead).
func (c *checker) matches(r row, f *fileDiff, g group, op byte, plus bool) []int {
	sx, _ := syntaxOf(f.pathOn(side(op)))
	var out []int
	for i, l := range g.lines {
		if l.op != op {
			continue
		}
		var ok bool
		switch r.on {
		case onAddedRaw:
			ok = r.re.MatchString(l.text)
		case onCommented:
			if plus {
				ok = c.commentedOut(r, sx, l)
			} else {
				ok = l.commented && r.re.MatchString(l.remark)
			}
		case onRemoved:
			ok = asserts(r, sx, l.code) || !plus && c.commentedOut(r, sx, l)
		default:
			ok = !l.commented && r.re.MatchString(l.code)
		}
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// pairKey is what pairs a line with one elsewhere in the diff: its text,
// or for an assertion, the assertion (commented out or not).
func pairKey(r row, f *fileDiff, l line) string {
	if r.on != onRemoved {
		return l.body
	}
	if k := assertKey(r.re, l.code); k != "" {
		return k
	}
	sx, _ := syntaxOf(f.pathOn(side(l.op)))
	return assertKey(r.re, sx.scan(l.remark, false).code)
}

// commentedOut reports whether added line l comments out an assertion of
// row r that the diff removes: its comment holds that assertion's code.
func (c *checker) commentedOut(r row, sx syntax, l line) bool {
	if l.op != '+' || l.remark == "" || !r.re.MatchString(l.remark) {
		return false
	}
	// The comment read as code: "self.assertEqual(x, 3)  # TODO" is the
	// assertion without its own comment.
	k := assertKey(r.re, sx.scan(l.remark, false).code)
	return k != "" && c.removedAsserts[k]
}

// pairOff pairs plus lines with minus lines, identical text first, and
// returns the unpaired ones of each side.
func pairOff(g group, plus, minus []int) (restPlus, restMinus []int) {
	if len(plus) == 0 || len(minus) == 0 {
		return plus, minus
	}
	usedM := make([]bool, len(minus))
	var left []int
	for _, p := range plus {
		paired := false
		for j, m := range minus {
			if !usedM[j] && g.lines[m].body == g.lines[p].body {
				usedM[j], paired = true, true
				break
			}
		}
		if !paired {
			left = append(left, p)
		}
	}
	for _, p := range left {
		paired := false
		for j := range minus {
			if !usedM[j] {
				usedM[j], paired = true, true
				break
			}
		}
		if !paired {
			restPlus = append(restPlus, p)
		}
	}
	for j, m := range minus {
		if !usedM[j] {
			restMinus = append(restMinus, m)
		}
	}
	return restPlus, restMinus
}

// checkUnclosed reports block comments an added line opens and the change
// does not close: the unchanged lines after it stop running.
func (c *checker) checkUnclosed(f *fileDiff, g group, r row) {
	if !c.claims(r, f.newPath) {
		return
	}
	for _, l := range g.lines {
		if l.op == '+' && l.unclosed {
			c.add(Finding{Rule: r.rule, File: f.newPath, Line: l.new, Text: l.text,
				Why:  "block comment opened and not closed by this change: the lines after it no longer run",
				Test: c.testAt(f, newSide, l)}, []string{f.newPath, baseName(f.newPath)})
		}
	}
}

// report turns a candidate into a finding, unless it is an assertion of a
// test already reported removed.
func (c *checker) report(k candidate, removedTests map[string]bool) {
	r := c.rows[k.ri]
	f := c.files[k.ref.fi]
	g := f.groups[k.ref.gi]
	l := g.lines[k.ref.li]
	s := side(l.op)
	p := f.pathOn(s)
	test := c.testAt(f, s, l)
	if r.on == onRemoved && test != "" && removedTests[test] {
		return
	}
	subjects := []string{test, p, baseName(p)}
	if r.rule == RuleSuppressionAdded {
		subjects = suppressionCodes(r.re.FindString(l.text), l.text)
	}
	why := r.why
	if r.on == onRemoved {
		sx, _ := syntaxOf(f.newPath)
		if noop := noopIn(g, sx, r); noop != "" {
			why += "; in its place: " + bound(noop)
		}
	}
	c.add(Finding{Rule: r.rule, File: p, Line: lineNo(l), Removed: l.op == '-', Text: l.text, Why: why, Test: test}, subjects)
}

// testAt names the test a changed line is in: a declaration on the line
// itself, or below it for an annotation or decorator (@pytest.mark.skip,
// #[ignore]), else the nearest one above it. With the file's content that
// is exact; with only the hunks, the lines shown without a gap above the
// line are read, then git's hunk header (the function the hunk is in).
func (c *checker) testAt(f *fileDiff, s side, l line) string {
	decls := c.declRows(f.pathOn(s))
	if len(decls) == 0 {
		return ""
	}
	n := lineNo(l)
	if name := c.nameOf(decls, f, s, l.text, n); name != "" {
		return name
	}
	if t := strings.TrimSpace(l.text); strings.HasPrefix(t, "@") || strings.HasPrefix(t, "#[") {
		for i := n + 1; i <= n+5; i++ {
			text, ok := c.lineAt(f, s, i)
			if !ok {
				break
			}
			if name := c.nameOf(decls, f, s, text, i); name != "" {
				return name
			}
		}
	}
	if content, ok := c.content(f, s); ok {
		idx := c.declIndex(f, s, decls, content)
		i := sort.Search(len(idx), func(i int) bool { return idx[i].n >= n }) - 1
		if i >= 0 && n-idx[i].n <= maxTestSpan {
			return idx[i].name
		}
		return ""
	}
	for i := n - 1; i >= max(1, n-maxTestSpan); i-- {
		text, ok := c.lineAt(f, s, i)
		if !ok {
			break
		}
		if name := c.nameOf(decls, f, s, text, i); name != "" {
			return name
		}
	}
	return c.nameOf(decls, f, s, l.comment, 0)
}

// maxTestSpan is how far above a line its test's declaration is looked
// for.
const maxTestSpan = 500

// declRows are the onDecl rows that claim path p.
func (c *checker) declRows(p string) []row {
	var decls []row
	for _, r := range c.rows {
		if r.on == onDecl && c.claims(r, p) {
			decls = append(decls, r)
		}
	}
	return decls
}

// nameOf is the test name line n (text) of f on side s declares, or "".
func (c *checker) nameOf(decls []row, f *fileDiff, s side, text string, n int) string {
	at := line{op: byte(s), text: text}
	if s == oldSide {
		at.old = n
	} else {
		at.new = n
	}
	for _, r := range decls {
		if name, ok := c.declName(r, f, s, at); ok && name != "" {
			return name
		}
		// The function under a marker names the test too (fn adds()
		// below #[test]).
		if r.next != nil {
			if m := r.next.FindStringSubmatch(text); m != nil {
				return strings.Trim(m[1], "`")
			}
		}
	}
	return ""
}

// declAt is a line that declares a test.
type declAt struct {
	n    int
	name string
}

// declIndex lists the declarations in content, in line order, once per
// file and side.
func (c *checker) declIndex(f *fileDiff, s side, decls []row, content []string) []declAt {
	key := string(s) + f.pathOn(s)
	if idx, ok := c.decls[key]; ok {
		return idx
	}
	var idx []declAt
	for i, text := range content {
		if name := c.nameOf(decls, f, s, text, i+1); name != "" {
			idx = append(idx, declAt{i + 1, name})
		}
	}
	c.decls[key] = idx
	return idx
}

func baseName(p string) string {
	if p == "" {
		return ""
	}
	return path.Base(p)
}

// stem is the base name without its extensions: "ci" for ci.yml,
// ".golangci" for .golangci.yml.
func stem(p string) string {
	b := baseName(p)
	if i := strings.IndexByte(b[min(1, len(b)):], '.'); i >= 0 {
		return b[:i+1]
	}
	return b
}
