package guard

// Reading a line of source as its language does: which part is code and
// which is comment (a string's "#" or "//" is neither), and the statements
// that stop the lines after them from running (inert.go reads those).

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// syntax is how a language writes comments, strings and blocks.
type syntax struct {
	line        []string // line comment markers
	open, close string   // block comment; open == close for Python's """
	// quotes delimit strings; a string left open runs to the line's end.
	quotes string
	// chars: ' delimits a one-character literal ('x', '\n') and is an
	// ordinary character otherwise (a Rust lifetime), not a string.
	chars bool
	// indented: blocks are made by indentation (Python), not braces.
	indented bool
	// testingT: the test's handle is passed to assertion helpers as their
	// first argument (Go's assert.Equal(t, ...)).
	testingT bool
	// exit is a statement that leaves its block whatever happens (return,
	// continue, break, or one behind a branch always taken); dead opens a branch never taken, its match
	// ending where the branch's body starts; noop is a statement that does
	// nothing. Nil where the rules do not read them.
	exit, dead, noop *regexp.Regexp
}

var (
	goSyntax = syntax{line: []string{"//"}, open: "/*", close: "*/", quotes: "\"`'", chars: true, testingT: true,
		exit: re(`^(?:return|continue|break)\b|^if\s+true\s*\{\s*return\b`),
		dead: re(`^(?:\}\s*else\s+)?if\s+(?:[^;{]*;\s*)?false\s*`),
		noop: re(`^_(?:\s*,\s*_)*\s*=[^=]|^\{\s*\}$|^;$`)}
	jsSyntax = syntax{line: []string{"//"}, open: "/*", close: "*/", quotes: "\"`'",
		exit: re(`^(?:return|continue|break)\b|^if\s*\(\s*(?:true|1)\s*\)\s*\{?\s*return\b`),
		dead: re(`^(?:\}\s*else\s+)?(?:if|while)\s*\(\s*(?:false|0|null|undefined)\s*\)\s*`),
		noop: re(`^(?:;|\{\s*\};?|void\s+0;?|(?:true|false|null|undefined|0);?)$`)}
	rsSyntax = syntax{line: []string{"//"}, open: "/*", close: "*/", quotes: `"'`, chars: true,
		exit: re(`^(?:return|continue|break)\b|^if\s+true\s*\{\s*return\b`),
		dead: re(`^(?:\}\s*else\s+)?(?:if|while)\s+false\s*`),
		noop: re(`^(?:let\s+_\w*\s*=.*;|\(\);?|;|\{\s*\})$`)}
	jvmSyntax = syntax{line: []string{"//"}, open: "/*", close: "*/", quotes: "\"'`", chars: true,
		exit: re(`^(?:return|continue|break)\b|^if\s*\(\s*true\s*\)\s*\{?\s*return\b`),
		dead: re(`^(?:\}\s*else\s+)?(?:if|while)\s*\(\s*false\s*\)\s*`),
		noop: re(`^(?:;|\{\s*\})$`)}
	pySyntax = syntax{line: []string{"#"}, open: `"""`, close: `"""`, quotes: `"'`, indented: true,
		exit: re(`^(?:return|continue|break)\b|^if\s+(?:True|1)\s*:\s*return\b`),
		dead: re(`^(?:el)?if\s+(?:False|0|None)\s*:|^while\s+(?:False|0|None)\s*:`),
		noop: re(`^(?:pass|\.\.\.|None|True|False|0)$`)}
	shSyntax = syntax{line: []string{"#"}, quotes: `"'`}
)

// syntaxOf returns the syntax of a file, and false for files whose
// comments the rules do not read.
func syntaxOf(p string) (syntax, bool) {
	switch {
	case goFiles.has(p):
		return goSyntax, true
	case jsFiles.has(p):
		return jsSyntax, true
	case rsFiles.has(p):
		return rsSyntax, true
	case jvmFiles.has(p):
		return jvmSyntax, true
	case pyFiles.has(p):
		return pySyntax, true
	case shFiles.has(p), fileSet{"*.toml", "*.yml", "*.yaml", "*.cfg", "*.ini", "Makefile", "*.mk"}.has(p):
		return shSyntax, true
	}
	return syntax{}, false
}

// scanned is one line as its language reads it.
type scanned struct {
	// code is the line without its comments, trimmed; a comment between
	// two pieces of code leaves a space.
	code string
	// remark is the text of the line's comments, without their markers.
	remark string
	// comment: the line holds a comment (or is inside a block comment).
	comment bool
	// after: a block comment (for Python, a """ string) is open at the
	// line's end.
	after bool
}

// commented reports whether the line is all comment: a comment and no
// code.
func (s scanned) commented() bool { return s.comment && s.code == "" }

// scan reads one line; inBlock says whether a block comment is open before
// it. Strings are read on the line only: one left open runs to its end.
func (sx syntax) scan(text string, inBlock bool) scanned {
	var out scanned
	var code, remark strings.Builder
	s := strings.TrimSpace(text)
	for i := 0; i < len(s); {
		rest := s[i:]
		if inBlock {
			out.comment = true
			j := strings.Index(rest, sx.close)
			if j < 0 {
				addWords(&remark, blockBody(rest))
				break
			}
			addWords(&remark, blockBody(rest[:j]))
			code.WriteByte(' ')
			i, inBlock = i+j+len(sx.close), false
			continue
		}
		if m := sx.lineMarker(rest); m != "" {
			out.comment = true
			addWords(&remark, strings.TrimSpace(strings.TrimLeft(rest[len(m):], "/!#")))
			break
		}
		if sx.open != "" && strings.HasPrefix(rest, sx.open) {
			if sx.open == sx.close && strings.TrimSpace(code.String()) != "" {
				// Python: a triple-quoted string after code is a string,
				// not a docstring; one left open goes on below.
				j := strings.Index(rest[len(sx.open):], sx.close)
				if j < 0 {
					code.WriteString(rest)
					out.after = true
					break
				}
				n := len(sx.open) + j + len(sx.close)
				code.WriteString(rest[:n])
				i += n
				continue
			}
			out.comment = true
			i, inBlock = i+len(sx.open), true
			continue
		}
		if strings.IndexByte(sx.quotes, s[i]) >= 0 {
			n := sx.literal(rest)
			code.WriteString(rest[:n])
			i += n
			continue
		}
		code.WriteByte(s[i])
		i++
	}
	out.code = strings.TrimSpace(code.String())
	out.remark = strings.TrimSpace(remark.String())
	out.after = out.after || inBlock
	return out
}

// lineMarker is the line comment marker s starts with, or "".
func (sx syntax) lineMarker(s string) string {
	for _, m := range sx.line {
		if strings.HasPrefix(s, m) {
			return m
		}
	}
	return ""
}

// literal is the length of the string or character literal s starts with
// (s[0] is one of sx.quotes): to its closing quote, or to the end of s when
// it is not closed; 1 for a ' that starts no character literal.
func (sx syntax) literal(s string) int {
	q := s[0]
	if q == '\'' && sx.chars {
		if len(s) > 2 && s[1] == '\\' {
			// '\n', '\'', '\u{1F600}': short, closed by the next quote.
			if j := strings.IndexByte(s[3:min(len(s), 14)], '\''); j >= 0 {
				return j + 4
			}
			return 1
		}
		_, size := utf8.DecodeRuneInString(s[1:])
		if len(s) > 1+size && s[1+size] == '\'' {
			return 2 + size
		}
		return 1
	}
	for j := 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j + 1
		}
	}
	return len(s)
}

// addWords appends s to b, a space between.
func addWords(b *strings.Builder, s string) {
	if s == "" {
		return
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(s)
}

// blockBody is a line of a block comment without the conventional leading
// "*".
func blockBody(s string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "*"))
}
