package guard

import (
	"bytes"
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
	// removedAsserts are the assertions removed lines hold, by assertKey:
	// an added comment holding one of them comments it out.
	removedAsserts map[string]bool
	// contents caches Before/After, split in lines; the key is side+path.
	contents map[string][]string
	// hunkLines indexes the lines the hunks show, by side+path and number,
	// for when there is no content.
	hunkLines map[string]map[int]string
	// decls indexes the test declarations of contents, by side+path.
	decls map[string][]declAt
	// claimed memoizes claims: matching a path against every row's
	// patterns for every hunk would dominate the run.
	claimed map[claim]bool
}

type claim struct {
	row  int
	path string
}

// claims reports whether row r applies to path p.
func (c *checker) claims(r row, p string) bool {
	if p == "" {
		return false
	}
	k := claim{r.id, p}
	has, ok := c.claimed[k]
	if !ok {
		has = r.files.has(p)
		c.claimed[k] = has
	}
	return has
}

func newChecker(files []*fileDiff, opts Options) *checker {
	rows := append(optionRows(opts), table()...)
	for i := range rows {
		rows[i].id = i // rows is a copy: the table stays as it is
	}
	return &checker{
		opts:           opts,
		rows:           rows,
		claimed:        map[claim]bool{},
		files:          files,
		task:           newTaskText(opts.Task),
		addedNames:     map[string]bool{},
		addedTestLines: map[string]int{},
		removedAsserts: map[string]bool{},
		contents:       map[string][]string{},
		hunkLines:      map[string]map[int]string{},
		decls:          map[string][]declAt{},
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
	c.collectRemoved()
	// gone[i]: file i is a test file deleted and reported; its removed
	// lines are covered by that finding.
	gone := make([]bool, len(c.files))
	for i, f := range c.files {
		gone[i] = c.checkDeleted(f)
		c.checkChanged(f)
	}
	removedTest := c.checkDecls(gone)
	c.checkLines(gone, removedTest)
	c.checkUnreachable()
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
					if r.on == onDecl && c.claims(r, f.newPath) {
						if name, ok := c.declName(r, f, newSide, l); ok && name != "" {
							c.addedNames[name] = true
						}
					}
				}
			}
		}
	}
}

// collectRemoved fills removedAsserts.
func (c *checker) collectRemoved() {
	for _, f := range c.files {
		sx, _ := syntaxOf(f.oldPath)
		for _, r := range c.rows {
			if r.on != onRemoved || !c.claims(r, f.oldPath) {
				continue
			}
			for _, g := range f.groups {
				for _, l := range g.lines {
					if l.op == '-' && asserts(r, sx, l.code) {
						c.removedAsserts[assertKey(r.re, l.code)] = true
					}
				}
			}
		}
	}
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
