package completion

import "strings"

// promiseTag finds <promise>MARKER</promise> in the final message, outside
// code spans and fenced blocks: a marker the agent quotes as code (from the
// prompt, a file, a test) is not a claim.
//
// When the message holds several markers, the last one wins: it is the
// agent's latest word ("TASK_FAILED earlier was wrong, now
// <promise>TASK_DONE</promise>"), and a claim is normally the closing line.
func promiseTag(final string) Match {
	f, ok := lastMatch(tagRe, maskCode(final))
	if !ok {
		return Match{}
	}
	return toMatch(f, final)
}

// relaxedTag accepts what promiseTag accepts, plus markers inside code,
// the "promise: MARKER" form, and markers in earlier assistant messages.
// The final message is read as the newest message; among the messages the
// newest one holding a marker wins, and within it the last marker.
func relaxedTag(final string, messages []string) Match {
	if m, ok := relaxedIn(final); ok {
		return m
	}
	for i := len(messages) - 1; i >= 0; i-- {
		if m, ok := relaxedIn(messages[i]); ok {
			return m
		}
	}
	return Match{}
}

func relaxedIn(text string) (Match, bool) {
	tag, okTag := lastMatch(tagRe, text)
	colon, okColon := lastMatch(colonRe, text)
	switch {
	case okTag && (!okColon || tag.start > colon.start):
		return toMatch(tag, text), true
	case okColon:
		return toMatch(colon, text), true
	}
	return Match{}, false
}

// stripPrompt removes the prompt from text: every occurrence of the whole
// prompt, then every occurrence of each prompt line that holds a marker
// (agents that echo the prompt often re-wrap or quote only part of it).
// Line endings are normalized to \n first, in both.
func stripPrompt(text, prompt string) string {
	if strings.TrimSpace(prompt) == "" || text == "" {
		return text
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	prompt = strings.ReplaceAll(prompt, "\r\n", "\n")
	text = strings.ReplaceAll(text, strings.TrimSpace(prompt), "")
	for line := range strings.SplitSeq(prompt, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && (tagRe.MatchString(line) || colonRe.MatchString(line)) {
			text = strings.ReplaceAll(text, line, "")
		}
	}
	return text
}
