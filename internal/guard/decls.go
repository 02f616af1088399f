package guard

// Test declarations: which tests a change removes, and whether a test
// file that went away was deleted or moved.

import (
	"fmt"
	"regexp"
	"strings"
)

// isTestFile reports whether some onDeleted row claims p.
func (c *checker) isTestFile(p string) bool {
	for _, r := range c.rows {
		if r.on == onDeleted && c.claims(r, p) {
			return true
		}
	}
	return false
}

// checkDeleted reports a test file deleted, emptied or renamed away, unless
// its tests moved to another test file in the same diff. It returns whether
// it reported one.
func (c *checker) checkDeleted(f *fileDiff) bool {
	for _, r := range c.rows {
		if r.on != onDeleted {
			continue
		}
		var what string
		switch {
		case f.isDelete && c.claims(r, f.oldPath):
			what = "file deleted"
		case f.emptied && c.claims(r, f.newPath):
			what = "file emptied"
		case f.oldPath != "" && f.newPath != "" && f.oldPath != f.newPath && c.claims(r, f.oldPath) && !c.isTestFile(f.newPath):
			what = "renamed to " + f.newPath + ", which no test runner picks up"
		default:
			continue
		}
		names := c.removedNames(f)
		if !strings.HasPrefix(what, "renamed") && c.moved(f, names) {
			return false
		}
		text := what
		if len(names) > 0 {
			text += "; tests: " + joinBounded(names, 8)
		}
		file := f.oldPath
		if f.emptied {
			file = f.newPath
		}
		c.add(Finding{Rule: r.rule, File: file, Text: text, Why: r.why}, append([]string{file, baseName(file), stem(file)}, names...))
		return true
	}
	return false
}

// removedNames lists the test names the removed lines of f declare.
func (c *checker) removedNames(f *fileDiff) []string {
	var names []string
	seen := map[string]bool{}
	for _, g := range f.groups {
		for _, name := range c.groupNames(f, g) {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	return names
}

// moved reports whether a deleted or emptied test file's content reappears
// in added lines of test files: all its test names when it declares some,
// otherwise most of its lines.
func (c *checker) moved(f *fileDiff, names []string) bool {
	if len(names) > 0 {
		for _, n := range names {
			if !c.addedNames[n] {
				return false
			}
		}
		return true
	}
	var total, found int
	budget := map[string]int{}
	for _, g := range f.groups {
		for _, l := range g.lines {
			if l.op != '-' || l.body == "" {
				continue
			}
			total++
			if budget[l.body] < c.addedTestLines[l.body] {
				budget[l.body]++
				found++
			}
		}
	}
	return total > 0 && found*5 >= total*4
}

// checkDecls reports removed test declarations that no added test file
// declares again. It returns, per file, the names of the tests it
// reported: assertions removed with their test are not reported again.
func (c *checker) checkDecls(gone []bool) map[int]map[string]bool {
	removed := map[int]map[string]bool{}
	for fi, f := range c.files {
		if gone[fi] || f.oldPath == "" {
			continue
		}
		for _, g := range f.groups {
			// A test removed with the tests nested in it (subtests, the
			// cases of a describe block) is one change: a task that asks
			// for one allows the others.
			together := c.groupNames(f, g)
			for _, l := range g.lines {
				if l.op != '-' || l.commented {
					continue
				}
				for _, r := range c.rows {
					if r.on != onDecl || !c.claims(r, f.oldPath) {
						continue
					}
					name, ok := c.declName(r, f, oldSide, l)
					if !ok {
						continue
					}
					if name != "" && c.addedNames[name] {
						break
					}
					if name == "" && addsMatch(g, r.re) {
						break // the marker was rewritten in place
					}
					why := r.why
					if name == "" {
						why += " (its function is no longer a test)"
					}
					c.add(Finding{Rule: r.rule, File: f.oldPath, Line: l.old, Removed: true, Text: bound(strings.TrimSpace(l.text)), Why: why, Test: name}, append([]string{name, f.oldPath, baseName(f.oldPath)}, together...))
					if removed[fi] == nil {
						removed[fi] = map[string]bool{}
					}
					removed[fi][name] = true
					break
				}
			}
		}
	}
	return removed
}

// groupNames lists the test names removed lines of g declare.
func (c *checker) groupNames(f *fileDiff, g group) []string {
	var names []string
	for _, l := range g.lines {
		if l.op != '-' || l.commented {
			continue
		}
		for _, r := range c.rows {
			if r.on == onDecl && c.claims(r, f.oldPath) {
				if name, ok := c.declName(r, f, oldSide, l); ok && name != "" {
					names = append(names, name)
				}
			}
		}
	}
	return names
}

func addsMatch(g group, re *regexp.Regexp) bool {
	for _, l := range g.lines {
		if l.op == '+' && !l.commented && re.MatchString(l.text) {
			return true
		}
	}
	return false
}

// declName reports whether l is a test declaration of row r and the name
// it declares ("" when a marker's function is not in sight).
func (c *checker) declName(r row, f *fileDiff, s side, l line) (string, bool) {
	m := r.re.FindStringSubmatch(l.text)
	if m == nil {
		return "", false
	}
	for _, g := range m[1:] {
		if g != "" {
			return g, true
		}
	}
	if r.next == nil {
		return "", true
	}
	// A marker (#[test], @Test): the name is on its line or a few below.
	n := lineNo(l)
	if n <= 0 {
		return "", true // a hunk header: nothing below it to read
	}
	for i := n; i <= n+4; i++ {
		text, ok := c.lineAt(f, s, i)
		if !ok {
			continue
		}
		if i > n && r.re.MatchString(text) {
			break // the next marker: this one's function is not in sight
		}
		if m := r.next.FindStringSubmatch(text); m != nil {
			return strings.Trim(m[1], "`"), true
		}
	}
	return "", true
}

func joinBounded(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}
