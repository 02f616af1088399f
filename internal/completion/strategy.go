package completion

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
