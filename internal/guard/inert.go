package guard

// Assertions made inert: still in the file, or something in their place,
// but checking nothing. Three ways, each read from what the diff adds:
//   - commented out, the comment holding the code of an assertion the
//     diff removes (a comment that never was code is not one), a trailing
//     comment included: "pass  # self.assertEqual(add(1, 2), 3)";
//   - replaced by a no-op (pass, _ = got) or by an assertion that cannot
//     fail (assert True, expect(true).toBe(true), assertEquals(3, 3)):
//     those never count as an assertion put back (vacuous);
//   - made unreachable: an added statement that leaves the block whatever
//     happens (return; if (true) return;) above it, or an added branch
//     never taken (if False:, if (false) {) around it (unreachable.go).

import (
	"regexp"
	"strings"
	"unicode"
)

// assertKey names an assertion by its code from the match of re on,
// without spaces or a final ";": the same assertion commented out, moved
// or reindented has the same key. "" when re does not match.
func assertKey(re *regexp.Regexp, code string) string {
	loc := re.FindStringIndex(code)
	if loc == nil {
		return ""
	}
	k := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, code[loc[0]:])
	return strings.TrimRight(k, ";")
}

// asserts reports whether code (a line's code, comments taken out) is an
// assertion of row r that can fail.
func asserts(r row, sx syntax, code string) bool {
	return code != "" && r.re.MatchString(code) && !vacuous(sx, code)
}

// vacuous reports whether an assertion's code can only pass: every value
// in it is a literal (assert True, self.assertEqual(3, 3),
// expect(true).toBe(true), assert!(1 == 1), assertTrue(true),
// assert.Equal(t, 1, 1)). A name that is not an assertion's own (add,
// got, self.result) makes it real.
func vacuous(sx syntax, code string) bool {
	toks := tokens(code)
	saw := false
	for i, tk := range toks {
		if !tk.ident {
			continue
		}
		prev, next, next2 := tokAt(toks, i-1), tokAt(toks, i+1), tokAt(toks, i+2)
		if prev == "." || prev == "::" {
			continue // a member: its owner is what counts
		}
		switch {
		case literalWords[tk.text]:
		case tk.text == "expect" && next == ".":
			return false // expect.assertions(1), expect.hasAssertions()
		case assertWord.MatchString(tk.text),
			(tk.text == "self" || tk.text == "this") && next == "." && assertWord.MatchString(next2):
			saw = true
		case sx.testingT && prev == "(" && next == "," && testHandles[tk.text]:
		default:
			return false
		}
	}
	return saw
}

var (
	// assertWord is an assertion's own name, or the object that holds
	// them (assert.Equal, Assertions.assertTrue).
	assertWord   = re(`^(?:assert\w*|Assert\w*|debug_assert\w*|prop_assert\w*|expect|require|Assertions)$`)
	literalWords = map[string]bool{
		"true": true, "false": true, "True": true, "False": true, "None": true, "nil": true, "null": true,
		"undefined": true, "NaN": true, "Infinity": true, "not": true, "and": true, "or": true, "is": true, "in": true,
	}
	testHandles = map[string]bool{"t": true, "b": true, "tb": true, "tt": true, "f": true}
)

// token is one word, number, string or punctuation of a line's code.
type token struct {
	text  string
	ident bool
}

func tokAt(toks []token, i int) string {
	if i < 0 || i >= len(toks) {
		return ""
	}
	return toks[i].text
}

// tokens splits code into identifiers, literals and punctuation; "::" and
// "?." are one token each.
func tokens(code string) []token {
	var out []token
	for i := 0; i < len(code); {
		c := code[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(code) && code[j] != c {
				if code[j] == '\\' {
					j++
				}
				j++
			}
			out = append(out, token{text: `""`})
			i = min(j+1, len(code))
		case isIdentStart(c):
			j := i
			for j < len(code) && (isIdentStart(code[j]) || code[j] >= '0' && code[j] <= '9') {
				j++
			}
			out = append(out, token{text: code[i:j], ident: true})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(code) && (isWordByte(code[j]) || code[j] == '.') {
				j++
			}
			out = append(out, token{text: "0"})
			i = j
		case strings.HasPrefix(code[i:], "::"), strings.HasPrefix(code[i:], "?."):
			out = append(out, token{text: code[i : i+2]})
			i += 2
		default:
			out = append(out, token{text: code[i : i+1]})
			i++
		}
	}
	return out
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// noopIn is the code of an added line of g that does nothing, or an
// assertion that cannot fail: what stands where a removed assertion was.
func noopIn(g group, sx syntax, r row) string {
	for _, l := range g.lines {
		if l.op != '+' || l.code == "" {
			continue
		}
		if sx.noop != nil && sx.noop.MatchString(l.code) || r.re.MatchString(l.code) && vacuous(sx, l.code) {
			return l.code
		}
	}
	return ""
}
