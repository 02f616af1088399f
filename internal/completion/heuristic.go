package completion

import (
	"regexp"
	"strings"
)

// heuristicLines is how many non-empty lines at the end of the final
// message the heuristic reads: a closing claim, not a plan stated earlier.
const heuristicLines = 3

// donePhrases are the strong, explicit completion claims the heuristic
// accepts, matched in a lower-cased sentence without markdown emphasis.
var donePhrases = regexp.MustCompile(`\b(?:` +
	// all tasks are complete, all the tasks have been completed
	`all (?:of )?(?:the |my )?tasks (?:are |have been |were )?(?:now )?(?:all )?(?:successfully )?(?:complete|completed|done|finished)` +
	// task complete, the task is done, this task has been completed
	`|(?:the |this |my )?task (?:is |has been |was )?(?:now )?(?:successfully )?(?:complete|completed|done|finished)` +
	// successfully completed the task, i have completed all the tasks
	`|(?:successfully|i have|i've) (?:now )?(?:successfully )?(?:completed|finished) (?:the|this|my|all(?: of)?(?: the)?) tasks?` +
	`)\b`)

// blockers are words that turn a completion phrase into something else: a
// negation ("is not complete", "isn't done"), a condition or a plan ("once
// the task is complete", "will be done"), a partial claim ("the first task
// is done", "all tasks are done except"), or a problem ("but tests fail").
// Any of them in the sentence rejects it, as does any word ending in n't.
const blockers = `not no never nor cannot incomplete unfinished uncompleted yet almost nearly
	partially partly mostly once when whenever if unless until after before while will would should
	could might may must need needs needed going about except but however although though
	remaining remain remains pending left first next other others some fail fails failed failing
	error errors blocked unable todo wip`

// heuristic accepts an exit code of 0 plus a strong completion phrase in
// one of the last lines of the final message, outside code. It only ever
// claims TASK_DONE, and prefers a miss to a false positive: questions and
// sentences with any blocking word are ignored.
func heuristic(final string, exitCode int) Match {
	if exitCode != 0 {
		return Match{}
	}
	blocked := map[string]bool{}
	for w := range strings.FieldsSeq(blockers) {
		blocked[w] = true
	}
	for _, line := range lastLines(maskCode(final), heuristicLines) {
		for _, sentence := range sentences(line) {
			if claimsDone(sentence, blocked) {
				return Match{Marker: TaskDone}
			}
		}
	}
	return Match{}
}

// lastLines returns up to n last non-blank lines of s.
func lastLines(s string, n int) []string {
	var out []string
	for len(out) < n && s != "" {
		var line string
		if i := strings.LastIndexByte(s, '\n'); i >= 0 {
			s, line = s[:i], s[i+1:]
		} else {
			s, line = "", s
		}
		if strings.TrimSpace(line) != "" {
			out = append(out, line)
		}
	}
	return out
}

// sentences splits a line at sentence ends, keeping the end mark so that
// questions can be told apart.
func sentences(line string) []string {
	var out []string
	start := 0
	for i, r := range line {
		if r == '.' || r == '!' || r == '?' || r == ';' {
			out = append(out, line[start:i+1])
			start = i + 1
		}
	}
	return append(out, line[start:])
}

func claimsDone(sentence string, blocked map[string]bool) bool {
	s := strings.ToLower(strings.TrimSpace(sentence))
	if strings.HasSuffix(s, "?") {
		return false
	}
	s = strings.NewReplacer("*", "", "_", "", "’", "'").Replace(s)
	if !donePhrases.MatchString(strings.Join(strings.Fields(s), " ")) {
		return false
	}
	for _, w := range strings.FieldsFunc(s, notWordRune) {
		if blocked[w] || strings.HasSuffix(w, "n't") {
			return false
		}
	}
	return true
}

// notWordRune splits words; the apostrophe stays inside them ("isn't").
func notWordRune(r rune) bool {
	return !(r == '\'' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
}
