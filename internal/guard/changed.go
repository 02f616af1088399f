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
		if r.on != onChanged || !(c.claims(r, f.oldPath) || c.claims(r, f.newPath)) {
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
				if !c.claims(r, f.pathOn(s)) {
					continue
				}
				in, what := c.inScope(r, f, l)
				if !in {
					continue
				}
				if !done[i] {
					done[i] = true
					c.add(Finding{Rule: r.rule, File: f.pathOn(s), Line: lineNo(l), Removed: l.op == '-', Text: bound(string(l.op) + strings.TrimSpace(l.text)), Why: r.why}, []string{f.pathOn(s), baseName(f.pathOn(s)), stem(f.pathOn(s)), r.tool, what})
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
			c.add(Finding{Rule: r.rule, File: p, Line: lineNo(l), Removed: l.op == '-', Text: bound(string(l.op) + strings.TrimSpace(l.text)), Why: r.why}, subjects(p))
			break
		}
	}
}

// inScope reports whether changed line l is in r's scope, and
// names the section, key or target it is in.
func (c *checker) inScope(r row, f *fileDiff, l line) (bool, string) {
	switch r.scope {
	case withKey:
		m := r.re.FindString(l.text)
		return m != "", strings.Trim(m, `": `)
	case inSection:
		name := c.enclosing(f, l, sectionHeader)
		return name != "" && r.re.MatchString(name), name
	case inTarget:
		targets := c.enclosing(f, l, makeTarget)
		for t := range strings.FieldsSeq(targets) {
			if r.re.MatchString(t) {
				return true, t
			}
		}
		return false, ""
	default:
		// The other values need nothing here.
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
// its side that header matches, and returns its group 1: in the file's
// content when the caller gave it; else in the lines the hunk shows
// without a gap above it, then in git's hunk header. "" when none is seen.
func (c *checker) enclosing(f *fileDiff, l line, header *regexp.Regexp) string {
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
	for i := n; i >= 1; i-- {
		text, ok := c.lineAt(f, s, i)
		if !ok {
			break
		}
		if m := header.FindStringSubmatch(text); m != nil {
			return m[1]
		}
	}
	if m := header.FindStringSubmatch(l.comment); m != nil {
		return m[1]
	}
	return ""
}
