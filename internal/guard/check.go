package guard

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// checker applies the table to one diff.
type checker struct {
	opts     Options
	rows     []row
	files    []*fileDiff
	task     *taskText
	findings []Finding

	// addedNames are the test names declared by added lines of test files
	// anywhere in the diff: a removed test with one of these names was
	// replaced or moved, not removed.
	addedNames map[string]bool
	// addedTestLines counts the trimmed added lines of test files, to tell a
	// moved test file from a deleted one.
	addedTestLines map[string]int
	// contents caches Before/After, split in lines; the key is side+path.
	contents map[string][]string
	// hunkLines indexes the lines the hunks show, by side+path and number,
	// for when there is no content.
	hunkLines map[string]map[int]string
}

func newChecker(files []*fileDiff, opts Options) *checker {
	return &checker{
		opts:           opts,
		rows:           append(optionRows(opts), table...),
		files:          files,
		task:           newTaskText(opts.Task),
		addedNames:     map[string]bool{},
		addedTestLines: map[string]int{},
		contents:       map[string][]string{},
		hunkLines:      map[string]map[int]string{},
	}
}

// side is one end of the diff.
type side byte

const (
	oldSide side = '-'
	newSide side = '+'
)

func (f *fileDiff) pathOn(s side) string {
	if s == oldSide {
		return f.oldPath
	}
	return f.newPath
}

func (c *checker) run() {
	c.collectAdded()
	// gone[i]: file i is a test file deleted and reported; its removed
	// lines are covered by that finding.
	gone := make([]bool, len(c.files))
	for i, f := range c.files {
		gone[i] = c.checkDeleted(f)
		c.checkChanged(f)
	}
	removedTest := c.checkDecls(gone)
	c.checkLines(gone, removedTest)
}

// collectAdded fills addedNames and addedTestLines.
func (c *checker) collectAdded() {
	for _, f := range c.files {
		if f.newPath == "" {
			continue
		}
		isTest := c.isTestFile(f.newPath)
		for _, g := range f.groups {
			for _, l := range g.lines {
				if l.op != '+' {
					continue
				}
				if isTest && l.body != "" {
					c.addedTestLines[l.body]++
				}
				if l.commented {
					continue
				}
				for _, r := range c.rows {
					if r.on == onDecl && r.files.has(f.newPath) {
						if name, ok := c.declName(r, f, newSide, l); ok && name != "" {
							c.addedNames[name] = true
						}
					}
				}
			}
		}
	}
}

// isTestFile reports whether some onDeleted row claims p.
func (c *checker) isTestFile(p string) bool {
	for _, r := range c.rows {
		if r.on == onDeleted && r.files.has(p) {
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
		case f.isDelete && r.files.has(f.oldPath):
			what = "file deleted"
		case f.emptied && r.files.has(f.newPath):
			what = "file emptied"
		case f.oldPath != "" && f.newPath != "" && f.oldPath != f.newPath && r.files.has(f.oldPath) && !c.isTestFile(f.newPath):
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

// checkChanged applies the onChanged rows: the first whole-file row that
// claims the file wins; scoped rows report the first line in their scope
// of each hunk group.
func (c *checker) checkChanged(f *fileDiff) {
	var scoped []row
	for _, r := range c.rows {
		if r.on != onChanged || !(r.files.has(f.oldPath) || r.files.has(f.newPath)) {
			continue
		}
		if r.scope == wholeFile {
			c.changedWhole(f, r)
			break
		}
		scoped = append(scoped, r)
	}
	if len(scoped) == 0 {
		return
	}
	for _, g := range f.groups {
		done := make([]bool, len(scoped))
		for _, l := range g.lines {
			if l.op == ' ' {
				continue
			}
			s := side(l.op)
			for i, r := range scoped {
				if !r.files.has(f.pathOn(s)) {
					continue
				}
				in, what := c.inScope(r, f, g, l)
				if !in {
					continue
				}
				if !done[i] {
					done[i] = true
					c.add(Finding{Rule: r.rule, File: f.pathOn(s), Line: lineNo(l), Text: bound(string(l.op) + strings.TrimSpace(l.text)), Why: r.why}, []string{f.pathOn(s), baseName(f.pathOn(s)), stem(f.pathOn(s)), r.tool, what})
				}
				break
			}
		}
	}
}

func (c *checker) changedWhole(f *fileDiff, r row) {
	subjects := func(p string) []string { return []string{p, baseName(p), stem(p), r.tool} }
	renamed := f.oldPath != "" && f.newPath != "" && f.oldPath != f.newPath
	if f.isDelete || f.isNew || renamed || len(f.groups) == 0 {
		p := f.path()
		if f.isDelete {
			p = f.oldPath
		}
		c.add(Finding{Rule: r.rule, File: p, Text: describeFile(f), Why: r.why},
			append(subjects(f.oldPath), subjects(f.newPath)...))
		return
	}
	for _, g := range f.groups {
		for _, l := range g.lines {
			if l.op == ' ' {
				continue
			}
			p := f.pathOn(side(l.op))
			c.add(Finding{Rule: r.rule, File: p, Line: lineNo(l), Text: bound(string(l.op) + strings.TrimSpace(l.text)), Why: r.why}, subjects(p))
			break
		}
	}
}

// inScope reports whether changed line l of group g is in r's scope, and
// names the section, key or target it is in.
func (c *checker) inScope(r row, f *fileDiff, g group, l line) (bool, string) {
	switch r.scope {
	case withKey:
		m := r.re.FindString(l.text)
		return m != "", strings.Trim(m, `": `)
	case inSection:
		name := c.enclosing(f, g, l, sectionHeader)
		return name != "" && r.re.MatchString(name), name
	case inTarget:
		targets := c.enclosing(f, g, l, makeTarget)
		for t := range strings.FieldsSeq(targets) {
			if r.re.MatchString(t) {
				return true, t
			}
		}
		return false, ""
	}
	return true, ""
}

var (
	sectionHeader = regexp.MustCompile(`^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$`)
	// makeTarget is a rule line: targets, a colon that is not ":=", and
	// not a recipe line (those start with a tab).
	makeTarget = regexp.MustCompile(`^([^\s:=#][^:=]*?)\s*::?(?:[^=]|$)`)
)

// enclosing finds, for a changed line, the nearest line at or above it on
// its side that header matches (group 1 is returned): in the file's
// content when the caller gave it, else in the group's lines, else in git's
// hunk headers. "" when none is seen.
func (c *checker) enclosing(f *fileDiff, g group, l line, header *regexp.Regexp) string {
	s := side(l.op)
	n := lineNo(l)
	if content, ok := c.content(f, s); ok {
		for i := min(n, len(content)); i >= 1; i-- {
			if m := header.FindStringSubmatch(content[i-1]); m != nil {
				return m[1]
			}
		}
		return ""
	}
	for i := indexOf(g, l); i >= 0; i-- {
		if o := g.lines[i]; o.op == byte(s) || o.op == ' ' {
			if m := header.FindStringSubmatch(o.text); m != nil {
				return m[1]
			}
		}
	}
	for i := len(g.comments) - 1; i >= 0; i-- {
		if m := header.FindStringSubmatch(g.comments[i]); m != nil {
			return m[1]
		}
	}
	return ""
}

func indexOf(g group, l line) int {
	for i, o := range g.lines {
		if o.op == l.op && o.old == l.old && o.new == l.new {
			return i
		}
	}
	return len(g.lines) - 1
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
					if r.on != onDecl || !r.files.has(f.oldPath) {
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
					c.add(Finding{Rule: r.rule, File: f.oldPath, Line: l.old, Text: bound(strings.TrimSpace(l.text)), Why: why, Test: name}, append([]string{name, f.oldPath, baseName(f.oldPath)}, together...))
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
			if r.on == onDecl && r.files.has(f.oldPath) {
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

// lineAt returns line n of f on side s, from the content when given, else
// from the hunks.
func (c *checker) lineAt(f *fileDiff, s side, n int) (string, bool) {
	if content, ok := c.content(f, s); ok {
		if n >= 1 && n <= len(content) {
			return content[n-1], true
		}
		return "", false
	}
	key := string(s) + "\x00" + f.pathOn(s)
	idx, ok := c.hunkLines[key]
	if !ok {
		idx = map[int]string{}
		for _, g := range f.groups {
			for _, l := range g.lines {
				if l.op == byte(s) || l.op == ' ' {
					idx[lineNo2(l, s)] = l.text
				}
			}
		}
		c.hunkLines[key] = idx
	}
	text, ok := idx[n]
	return text, ok
}

// content returns f's lines on side s when Options gave a reader for it.
func (c *checker) content(f *fileDiff, s side) ([]string, bool) {
	p := f.pathOn(s)
	read := c.opts.After
	if s == oldSide {
		read = c.opts.Before
	}
	if p == "" || read == nil {
		return nil, false
	}
	key := string(s) + p
	if lines, ok := c.contents[key]; ok {
		return lines, lines != nil
	}
	data, ok := read(p)
	if !ok {
		c.contents[key] = nil
		return nil, false
	}
	lines := strings.Split(string(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))), "\n")
	c.contents[key] = lines
	return lines, true
}

// lineNo is a changed line's number on its own side.
func lineNo(l line) int {
	if l.op == '-' {
		return l.old
	}
	return l.new
}

// lineNo2 is a line's number on side s.
func lineNo2(l line, s side) int {
	if s == oldSide {
		return l.old
	}
	return l.new
}

// add records a finding, marks it allowed when the task asks for the
// change (subjects are the names the task could use for it), and bounds its
// text.
func (c *checker) add(f Finding, subjects []string) {
	f.Text = bound(f.Text)
	if reason, ok := c.task.allows(f.Rule, subjects); ok {
		f.Allowed, f.Reason = true, reason
	}
	c.findings = append(c.findings, f)
}

// bound trims s to maxText bytes on a rune boundary.
func bound(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func joinBounded(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}
