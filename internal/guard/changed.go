package guard

// Configuration rows (onChanged): CI, lint, test-runner and gate files,
// whole or in the sections, keys and targets that hold checks.

import (
	"regexp"
	"strings"
)

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
