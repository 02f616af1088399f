package guard

import (
	"regexp"
	"strings"
)

// Exceptions. A task may ask for exactly what the rules flag: "remove the
// flaky test TestFoo", "update the CI workflow", "disable lint rule
// errcheck in gen.go". Such a finding is kept but marked Allowed, with the
// sentence that asks for it as the reason.
//
// The matching is deliberately conservative, so that an agent cannot talk
// its way past it and a vague task allows nothing:
//   - one sentence of the task (split at . ! ? ; and line ends) must both
//     name the finding's subject and hold one of its rule's verbs;
//   - the subject is a name, matched as a whole word, case-insensitively:
//     the test's name, the file's path or base name, a lint rule's code
//     (errcheck, E501, no-console, clippy::unwrap_used), a tool's name
//     (golangci-lint, eslint), or for CI the words CI/workflow/pipeline;
//   - the verb must fit the rule: remove/delete/drop for tests,
//     skip/disable/ignore/quarantine for skips, disable/suppress/ignore/
//     silence/allow for suppressions, update/change/edit/... for
//     configuration; "fix" is never one for tests and assertions (that is
//     what agents are asked when they cheat);
//   - a verb with not/never/without/avoid/nor/n't in the three words before
//     it does not count.

// ruleVerbs are the verbs that ask for each rule's change.
var ruleVerbs = map[Rule]*regexp.Regexp{
	RuleTestDeleted:          re(`(?i)\b(?:remov|delet|drop|retir|eliminat)\w*`),
	RuleTestRemoved:          re(`(?i)\b(?:remov|delet|drop|retir|eliminat|renam)\w*`),
	RuleSkipAdded:            re(`(?i)\b(?:skip|disabl|ignor|quarantin|mute|xfail|exclud)\w*`),
	RuleAssertionRemoved:     re(`(?i)\b(?:remov|delet|drop|relax|loosen|rewrit|replac|updat|chang)\w*`),
	RuleAssertionCommented:   re(`(?i)\b(?:remov|delet|drop|relax|loosen|comment\w*\s+out|disabl)\w*`),
	RuleAssertionUnreachable: re(`(?i)\b(?:remov|delet|drop|relax|loosen|disabl)\w*`),
	RuleSuppressionAdded:     re(`(?i)\b(?:disabl|suppress|silenc|ignor|allow|exempt|waiv)\w*`),
	RuleCIChanged:            configVerbs,
	RuleConfigChanged:        configVerbs,
	RuleGateChanged:          configVerbs,
	RulePlanChanged:          re(`(?i)\b(?:updat|edit|chang|rewrit|reorder|add|split|restructur)\w*`),
}

var configVerbs = re(`(?i)\b(?:updat|chang|edit|modif|add|remov|delet|adjust|configur|enabl|disabl|bump|upgrad|set|tweak|extend|fix|renam|migrat|creat|introduc|replac|rewrit|relax|tighten)\w*`)

// ruleWords are subjects every finding of a rule has.
var ruleWords = map[Rule][]string{
	RuleCIChanged:   {"CI", "workflow", "workflows", "pipeline", "pipelines"},
	RuleGateChanged: {"gate", "gates"},
	RulePlanChanged: {"plan"},
}

var (
	sentenceEnd = re(`[.!?;]+(?:\s+|$)|\n+`)
	negation    = re(`(?i)^(?:not|never|without|avoid|nor|\w*n't)$`)
)

// taskText is a task's text split into sentences.
type taskText struct{ sentences []string }

func newTaskText(s string) *taskText {
	t := &taskText{}
	for _, part := range sentenceEnd.Split(s, -1) {
		if part = strings.TrimSpace(part); part != "" {
			t.sentences = append(t.sentences, part)
		}
	}
	return t
}

// allows reports whether a sentence of the task asks for a change of rule
// about one of subjects, and quotes it.
func (t *taskText) allows(rule Rule, subjects []string) (string, bool) {
	verbs := ruleVerbs[rule]
	if verbs == nil {
		return "", false
	}
	subjects = append(subjects, ruleWords[rule]...)
	for _, s := range t.sentences {
		if !asks(s, verbs) {
			continue
		}
		for _, sub := range subjects {
			if len(sub) >= 2 && mentions(s, sub) {
				return "the task says: " + quote(s), true
			}
		}
	}
	return "", false
}

// asks reports whether sentence s holds one of verbs, not negated.
func asks(s string, verbs *regexp.Regexp) bool {
	for _, loc := range verbs.FindAllStringIndex(s, -1) {
		words := strings.Fields(s[:loc[0]])
		negated := false
		for _, w := range words[max(0, len(words)-3):] {
			if negation.MatchString(strings.Trim(w, `"'(),:`)) {
				negated = true
			}
		}
		if !negated {
			return true
		}
	}
	return false
}

// mentions reports whether s names sub as a whole word, ignoring case.
func mentions(s, sub string) bool {
	ls, lsub := strings.ToLower(s), strings.ToLower(sub)
	for from := 0; ; {
		i := strings.Index(ls[from:], lsub)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(lsub)
		if (i == 0 || !isWordByte(ls[i-1])) && (end == len(ls) || !isWordByte(ls[end])) {
			return true
		}
		from = i + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func quote(s string) string {
	const maxQuote = 160
	if len(s) > maxQuote {
		s = bound(s[:maxQuote])
		s = strings.TrimSuffix(s, "…") + "…"
	}
	return `"` + s + `"`
}

// suppressionCodes are the names a task would use for a suppression: the
// directive itself (nolint, eslint-disable, ts-ignore, noqa) unless it is a
// plain verb (allow), and the rule codes it lists (errcheck, no-console,
// E501, clippy::unwrap_used and unwrap_used). Codes are read only where the
// directive takes them (after ":", "=", "(", "[" or, for eslint-style
// directives, a space), so a free-text reason is never a subject.
func suppressionCodes(directive, text string) []string {
	var out []string
	directive = strings.TrimSpace(directive)
	if d := strings.Trim(directive, "/#*@![( \t"); d != "" && ruleVerbs[RuleSuppressionAdded].FindString(d) != d {
		out = append(out, d)
	}
	i := strings.Index(text, directive)
	if i < 0 || directive == "" {
		return out
	}
	rest := strings.TrimLeft(text[i+len(directive):], " \t")
	listed := strings.HasSuffix(directive, "(") || strings.HasSuffix(directive, "[")
	if strings.Contains(directive, "eslint-disable") || strings.Contains(directive, "oxlint-disable") || strings.Contains(directive, "biome-ignore") {
		rest = strings.TrimPrefix(strings.TrimPrefix(rest, "-next-line"), "-line")
		listed = true
	}
	if rest != "" && strings.ContainsRune(":=([{", rune(rest[0])) {
		rest, listed = rest[1:], true
	}
	if !listed {
		return out
	}
	span := codeList.FindString(rest)
	for _, code := range codeWord.FindAllString(span, 12) {
		out = append(out, code)
		if _, last, ok := strings.Cut(code, "::"); ok {
			out = append(out, last)
		}
	}
	return out
}

var (
	// codeList is a comma separated list of codes at the start of a
	// directive's arguments.
	codeList = re(`^[\s"'({\[]*[\w@/.:-]+(?:[\s"']*,[\s"']*[\w@/.:-]+)*`)
	// codeWord is one lint rule's code or name.
	codeWord = re(`[A-Za-z@][\w@/.-]*(?:::[\w-]+)*`)
)
