package guard

// Assertions made unreachable: a statement the diff adds that leaves its
// block whatever happens, or a branch it adds that is never taken, and
// the assertions below or inside it, which then never run. Blocks are read
// by indentation (Python) or braces, strings and comments left out.

import (
	"fmt"
	"strings"
)

// deadLine is a line a stop (an exit, a dead branch) keeps from running,
// or the part of it that does not run.
type deadLine struct {
	n    int
	code string
}

// maxDeadSpan bounds how far below a stop its dead lines are read.
const maxDeadSpan = maxTestSpan

// deadAfter lists the lines that line n keeps from running, when its code
// is an exit (the rest of its block) or opens a dead branch (the branch's
// body); nil for any other line. text is line n as the file has it (its
// indentation counts in Python); at reads the file's other lines: the
// reading ends at the first it cannot read.
func (sx syntax) deadAfter(at func(int) (string, bool), n int, text string, inBlock bool) []deadLine {
	if sx.exit == nil {
		return nil
	}
	sc := sx.scan(text, inBlock)
	switch {
	case sx.exit.MatchString(sc.code):
		if !sx.balanced(sc.code) {
			return nil // return foo(\n ...): the statement goes on below
		}
		if sx.indented {
			return sx.indentedBlock(at, n, indentOf(text), true, sc.after)
		}
		return sx.bracedBlock(at, n, 0, sc.after)
	case sx.dead.MatchString(sc.code):
		loc := sx.dead.FindStringIndex(sc.code)
		rest := strings.TrimSpace(sc.code[loc[1]:])
		if sx.indented {
			if rest != "" {
				return []deadLine{{n, rest}} // if False: self.fail()
			}
			return sx.indentedBlock(at, n, indentOf(text), false, sc.after)
		}
		return sx.deadBranch(at, n, rest, sc.after)
	}
	return nil
}

// indentedBlock lists the lines after line n whose indentation is at least
// ind (same: the rest of the block a statement at ind is in) or more than
// ind (the body of a line at ind).
func (sx syntax) indentedBlock(at func(int) (string, bool), n, ind int, same, inBlock bool) []deadLine {
	var out []deadLine
	for i := n + 1; i <= n+maxDeadSpan; i++ {
		text, ok := at(i)
		if !ok {
			break
		}
		sc := sx.scan(text, inBlock)
		wasInBlock := inBlock
		inBlock = sc.after
		if sc.code == "" || wasInBlock {
			continue // a blank line or a comment closes no block
		}
		if d := indentOf(text); d < ind || !same && d == ind {
			break
		}
		out = append(out, deadLine{i, sc.code})
	}
	return out
}

// bracedBlock lists the lines after line n up to the brace that closes
// the block line n is in, depth braces deeper than line n's end (the part
// of the closing line before that brace included); a case label of the
// same switch ends it too.
func (sx syntax) bracedBlock(at func(int) (string, bool), n, depth int, inBlock bool) []deadLine {
	var out []deadLine
	for i := n + 1; i <= n+maxDeadSpan; i++ {
		text, ok := at(i)
		if !ok {
			break
		}
		sc := sx.scan(text, inBlock)
		inBlock = sc.after
		if sc.code == "" {
			continue
		}
		if depth == 0 && caseLabel.MatchString(sc.code) {
			break
		}
		d, closed := sx.braces(sc.code, depth)
		if closed >= 0 {
			if head := strings.TrimSpace(sc.code[:closed]); head != "" {
				out = append(out, deadLine{i, head})
			}
			break
		}
		depth = d
		out = append(out, deadLine{i, sc.code})
	}
	return out
}

// deadBranch lists what a dead branch whose condition line n ends with
// rest does not run: the block rest or the next line opens, or the one
// statement that follows the condition.
func (sx syntax) deadBranch(at func(int) (string, bool), n int, rest string, inBlock bool) []deadLine {
	if rest == "" {
		// The body is on the lines below: a block, or one statement.
		for i := n + 1; i <= n+maxDeadSpan; i++ {
			text, ok := at(i)
			if !ok {
				return nil
			}
			sc := sx.scan(text, inBlock)
			inBlock = sc.after
			if sc.code == "" {
				continue
			}
			if !strings.HasPrefix(sc.code, "{") {
				return []deadLine{{i, sc.code}}
			}
			n, rest = i, sc.code
			break
		}
	}
	if !strings.HasPrefix(rest, "{") {
		return []deadLine{{n, rest}} // if (false) expect(x).toBe(1);
	}
	var out []deadLine
	depth, closed := sx.braces(rest[1:], 0)
	if closed >= 0 {
		if body := strings.TrimSpace(rest[1 : 1+closed]); body != "" {
			out = append(out, deadLine{n, body})
		}
		return out
	}
	if body := strings.TrimSpace(rest[1:]); body != "" {
		out = append(out, deadLine{n, body})
	}
	return append(out, sx.bracedBlock(at, n, depth, inBlock)...)
}

// caseLabel starts the next case of a switch: after a return in one case,
// the next runs.
var caseLabel = re(`^(?:case\b|default\s*:)`)

// braces follows code's braces from depth (strings left out) and returns
// the depth at its end, or the index of the brace that takes it below 0
// (-1 when none does).
func (sx syntax) braces(code string, depth int) (int, int) {
	for i := 0; i < len(code); {
		switch c := code[i]; {
		case strings.IndexByte(sx.quotes, c) >= 0:
			i += sx.literal(code[i:])
			continue
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth < 0 {
				return depth, i
			}
		}
		i++
	}
	return depth, -1
}

// balanced reports whether code closes every bracket it opens (strings
// left out).
func (sx syntax) balanced(code string) bool {
	depth := 0
	for i := 0; i < len(code); {
		c := code[i]
		if strings.IndexByte(sx.quotes, c) >= 0 {
			i += sx.literal(code[i:])
			continue
		}
		switch c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
		i++
	}
	return depth == 0
}

// indentOf is the width of text's leading white space, a tab counting as
// one column like a space (mixed indentation is rare in one block).
func indentOf(text string) int {
	return len(text) - len(strings.TrimLeft(text, " \t"))
}

// checkUnreachable applies the onUnreachable rows: an exit or a dead
// branch that a line of the diff adds, and the assertions below it that
// then never run. An exit or branch the change only edits (the group
// removes one too) stopped the same lines before.
func (c *checker) checkUnreachable() {
	for _, f := range c.files {
		sx, ok := syntaxOf(f.newPath)
		if !ok || sx.exit == nil {
			continue
		}
		var rows []row
		for _, r := range c.rows {
			if r.on == onUnreachable && c.claims(r, f.newPath) {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			continue
		}
		for _, g := range f.groups {
			var edited map[string]bool
			for _, l := range g.lines {
				kind := stopKind(sx, l.code)
				if l.op != '+' || kind == "" {
					continue
				}
				if edited == nil {
					edited = stopsRemoved(g, sx)
				}
				if edited[kind] {
					continue
				}
				at := func(n int) (string, bool) { return c.lineAt(f, newSide, n) }
				for _, d := range sx.deadAfter(at, l.new, l.text, false) {
					c.reportDead(f, rows, sx, l, d)
				}
			}
		}
	}
}

// reportDead reports dead line d when it holds an assertion of one of
// rows.
func (c *checker) reportDead(f *fileDiff, rows []row, sx syntax, stop line, d deadLine) {
	for _, r := range rows {
		if !asserts(r, sx, d.code) {
			continue
		}
		at := line{op: '+', new: d.n, text: d.code, comment: stop.comment}
		how := "before it"
		if stopKind(sx, stop.code) == "dead" {
			how = "around it: a branch never taken"
		}
		test := c.testAt(f, newSide, at)
		c.add(Finding{Rule: r.rule, File: f.newPath, Line: d.n, Text: d.code,
			Why:  fmt.Sprintf("%s: line %d adds `%s` %s", r.why, stop.new, bound(stop.code), how),
			Test: test}, []string{test, f.newPath, baseName(f.newPath)})
		return
	}
}

// stopKind is "exit", "dead" or "" for a line's code.
func stopKind(sx syntax, code string) string {
	if code == "" || !strings.ContainsRune("rcbwie}", rune(code[0])) {
		return "" // what every exit and dead branch starts with: return, continue, break, while, if, elif, } else
	}
	switch {
	case sx.exit.MatchString(code):
		return "exit"
	case sx.dead.MatchString(code):
		return "dead"
	}
	return ""
}

// stopsRemoved are the kinds of stop g's removed lines hold.
func stopsRemoved(g group, sx syntax) map[string]bool {
	kinds := map[string]bool{}
	for _, l := range g.lines {
		if l.op == '-' && l.code != "" {
			if k := stopKind(sx, l.code); k != "" {
				kinds[k] = true
			}
		}
	}
	return kinds
}
