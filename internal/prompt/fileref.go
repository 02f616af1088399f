package prompt

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ResolveFileRefs rewrites the @file references of a prompt into plain
// paths, for agents that do not resolve them: Claude Code reads the file
// behind "@plan.md", while Codex, Gemini and most other CLIs see the
// literal text, and a path is something they know to open.
//
// A reference is an @ that starts a word, followed by a relative or
// absolute path ending in .md or .json: "@plan.md" becomes "plan.md", and
// with dir set it becomes dir/plan.md, for prompts that name files next to
// a plan in another directory. Nothing else changes: e-mail addresses
// (ann@example.md: the @ does not start a word), npm scopes
// (@scope/package), other extensions (@notes.mdx, @data.json5) and text in
// any form keep their bytes. A sentence's full stop after a reference
// stays: "see @plan.md." becomes "see plan.md.".
func ResolveFileRefs(text, dir string) string {
	dir = strings.TrimSuffix(dir, "/")
	var b strings.Builder
	last := 0
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || !startsWord(text, i) {
			continue
		}
		j := i + 1
		for j < len(text) && isPathByte(text[j]) {
			j++
		}
		ref := strings.TrimRight(text[i+1:j], ".")
		if !isFileRef(ref) {
			continue
		}
		if dir != "" && dir != "." && !path.IsAbs(ref) {
			ref = path.Join(dir, ref)
		}
		b.WriteString(text[last:i])
		b.WriteString(ref)
		last = i + 1 + len(strings.TrimRight(text[i+1:j], "."))
		i = last - 1
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// startsWord reports whether the @ at i begins a word: it is first, or
// follows neither a letter, a digit nor a character that joins words into
// addresses and paths.
func startsWord(text string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("._-+/@\\", r)
}

func isPathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._~/-", c) >= 0
}

// isFileRef: a path whose last element has a name and ends in .md or .json.
func isFileRef(ref string) bool {
	base := path.Base(ref)
	for _, ext := range []string{".md", ".json"} {
		if name, ok := strings.CutSuffix(base, ext); ok && strings.Trim(name, ".") != "" && !strings.HasSuffix(ref, "/") {
			return true
		}
	}
	return false
}
