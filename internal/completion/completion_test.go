package completion

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	strict  = []Strategy{PromiseTag}
	relaxed = []Strategy{RelaxedTag}
	heur    = []Strategy{Heuristic}
	all     = []Strategy{PromiseTag, RelaxedTag, Heuristic}
)

func TestDetect(t *testing.T) {
	t.Parallel()
	fence := "```"
	tests := []struct {
		name  string
		in    Input
		order []Strategy
		want  Match
	}{
		// promise-tag: the plain tag and its spellings.
		{"plain task done", Input{Final: "Done.\n<promise>TASK_DONE</promise>"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"plain complete", Input{Final: "<promise>COMPLETE</promise>"}, strict,
			Match{Marker: PlanDone, Strategy: PromiseTag}},
		{"alias success", Input{Final: "<promise>success</promise>"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"alias RALPH_DONE", Input{Final: "<promise>RALPH_DONE</promise>"}, strict,
			Match{Marker: PlanDone, Strategy: PromiseTag}},
		{"alias PLAN_DONE", Input{Final: "all good <promise>PLAN_DONE</promise>"}, strict,
			Match{Marker: PlanDone, Strategy: PromiseTag}},
		{"lower case and inner spaces", Input{Final: "<promise> task_done </promise>"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"upper case tag mixed marker", Input{Final: "<PROMISE>Complete</PROMISE>"}, strict,
			Match{Marker: PlanDone, Strategy: PromiseTag}},
		{"spaces inside the brackets", Input{Final: "< promise >TASK_DONE</ promise >"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"newline around marker", Input{Final: "<promise>\nTASK_DONE\n</promise>"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"unknown marker", Input{Final: "<promise>DONE</promise>"}, all, Match{}},
		{"marker without tag", Input{Final: "TASK_DONE"}, strict, Match{}},
		{"empty", Input{}, all, Match{}},
		{"empty order means default", Input{Final: "<promise>TASK_DONE</promise>"}, nil,
			Match{Marker: TaskDone, Strategy: PromiseTag}},

		// Last marker wins.
		{"last marker wins", Input{Final: "<promise>TASK_FAILED</promise> flaky\nfixed it\n<promise>TASK_DONE</promise>"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"last marker wins, failed last", Input{Final: "<promise>TASK_DONE</promise>\nno wait\n<promise>TASK_FAILED</promise> build broke"}, strict,
			Match{Marker: TaskFailed, Strategy: PromiseTag, Reason: "build broke"}},
		{"last marker outside code wins", Input{Final: "<promise>TASK_DONE</promise>\n`<promise>TASK_FAILED</promise>`"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},

		// Code spans and fences.
		{"inline code", Input{Final: "I will print `<promise>TASK_DONE</promise>` when done."}, strict, Match{}},
		{"double backtick span", Input{Final: "Use ``<promise>COMPLETE</promise>`` at the end."}, strict, Match{}},
		{"double backtick span holding a backtick", Input{Final: "Use `` a`b <promise>COMPLETE</promise> `` ok"}, strict, Match{}},
		{"span across a line break", Input{Final: "see `the\n<promise>TASK_DONE</promise>` text"}, strict, Match{}},
		{"unmatched backtick is literal", Input{Final: "a ` b\n<promise>TASK_DONE</promise>"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"span does not cross a blank line", Input{Final: "a ` b\n\n<promise>TASK_DONE</promise> `"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"fenced block", Input{Final: "Output:\n" + fence + "\n<promise>TASK_DONE</promise>\n" + fence + "\nStill working."}, strict, Match{}},
		{"fence with info string", Input{Final: fence + "text\n<promise>COMPLETE</promise>\n" + fence}, strict, Match{}},
		{"tilde fence", Input{Final: "~~~\n<promise>COMPLETE</promise>\n~~~"}, strict, Match{}},
		{"indented fence", Input{Final: "1. step\n    " + fence + "\n    <promise>TASK_DONE</promise>\n    " + fence}, strict, Match{}},
		{"fence in blockquote", Input{Final: "> " + fence + "\n> <promise>TASK_DONE</promise>\n> " + fence}, strict, Match{}},
		{"unclosed fence runs to the end", Input{Final: fence + "\ncode\n<promise>TASK_DONE</promise>"}, strict, Match{}},
		{"shorter run does not close a long fence", Input{Final: "````\n" + fence + "\n<promise>TASK_DONE</promise>\n````"}, strict, Match{}},
		{"tilde does not close backtick fence", Input{Final: fence + "\n~~~\n<promise>TASK_DONE</promise>\n" + fence}, strict, Match{}},
		{"marker after a closed fence", Input{Final: fence + "go\nx := 1\n" + fence + "\n<promise>TASK_DONE</promise>"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"inline triple backticks are a span, not a fence", Input{Final: "```x``` then\n<promise>TASK_DONE</promise>"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"CRLF fence", Input{Final: "```\r\n<promise>TASK_DONE</promise>\r\n```\r\n"}, strict, Match{}},
		{"relaxed matches in fence", Input{Final: "Output:\n" + fence + "\n<promise>TASK_DONE</promise>\n" + fence}, relaxed,
			Match{Marker: TaskDone, Strategy: RelaxedTag}},
		{"relaxed matches in inline code", Input{Final: "`<promise>COMPLETE</promise>`"}, relaxed,
			Match{Marker: PlanDone, Strategy: RelaxedTag}},

		// promise: MARKER.
		{"colon form not in promise-tag", Input{Final: "promise: COMPLETE"}, strict, Match{}},
		{"colon form in relaxed", Input{Final: "All done.\npromise: COMPLETE"}, relaxed,
			Match{Marker: PlanDone, Strategy: RelaxedTag}},
		{"colon form with emphasis", Input{Final: "**Promise:** `TASK_DONE`"}, relaxed,
			Match{Marker: TaskDone, Strategy: RelaxedTag}},
		{"colon form in a list item", Input{Final: "- PROMISE: RALPH_DONE"}, relaxed,
			Match{Marker: PlanDone, Strategy: RelaxedTag}},
		{"colon form after punctuation", Input{Final: "Tests pass. Promise: TASK_DONE"}, relaxed,
			Match{Marker: TaskDone, Strategy: RelaxedTag}},
		{"colon form mid-sentence", Input{Final: "I make a promise: COMPLETE it later"}, relaxed, Match{}},
		{"colon form lower-case marker is prose", Input{Final: "promise: complete the docs next"}, relaxed, Match{}},
		{"colon form longer word", Input{Final: "promise: COMPLETED"}, relaxed, Match{}},
		{"colon form failed with reason", Input{Final: "promise: TASK_FAILED - cannot reach the database"}, relaxed,
			Match{Marker: TaskFailed, Strategy: RelaxedTag, Reason: "cannot reach the database"}},
		{"relaxed: last of tag and colon wins", Input{Final: "<promise>TASK_FAILED</promise> x\npromise: TASK_DONE"}, relaxed,
			Match{Marker: TaskDone, Strategy: RelaxedTag}},

		// Messages.
		{"earlier message only: promise-tag ignores it", Input{Final: "Summary.", Messages: []string{"<promise>TASK_DONE</promise>", "Summary."}}, strict, Match{}},
		{"earlier message only: relaxed finds it", Input{Final: "Summary.", Messages: []string{"<promise>TASK_DONE</promise>", "Summary."}}, relaxed,
			Match{Marker: TaskDone, Strategy: RelaxedTag}},
		{"last message with a marker wins", Input{Messages: []string{"<promise>TASK_DONE</promise>", "<promise>TASK_FAILED</promise> oops", "bye"}}, relaxed,
			Match{Marker: TaskFailed, Strategy: RelaxedTag, Reason: "oops"}},
		{"final wins over messages", Input{Final: "<promise>TASK_DONE</promise>", Messages: []string{"<promise>COMPLETE</promise>"}}, relaxed,
			Match{Marker: TaskDone, Strategy: RelaxedTag}},

		// The echoed prompt.
		{"echoed prompt removed", Input{
			Prompt: "Do task 3.\nWhen done, reply <promise>TASK_DONE</promise>.\n",
			Final:  "Do task 3.\nWhen done, reply <promise>TASK_DONE</promise>.\nWorking on it...",
		}, all, Match{}},
		{"echoed prompt removed from messages", Input{
			Prompt:   "Reply <promise>COMPLETE</promise> when all tasks are done.",
			Messages: []string{"Reply <promise>COMPLETE</promise> when all tasks are done.", "starting"},
		}, relaxed, Match{}},
		{"echoed marker line removed when the prompt is re-wrapped", Input{
			Prompt: "# Task\nImplement x.\n\n  Finish with <promise>TASK_DONE</promise> on its own line.\n",
			Final:  "> # Task\n> Implement x.\nFinish with <promise>TASK_DONE</promise> on its own line.\nok",
		}, []Strategy{PromiseTag, RelaxedTag}, Match{}},
		{"claim after the echoed prompt still counts", Input{
			Prompt: "Reply <promise>TASK_DONE</promise> when done.",
			Final:  "Reply <promise>TASK_DONE</promise> when done.\nAll green.\n<promise>TASK_DONE</promise>",
		}, strict, Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"CRLF echo of an LF prompt", Input{
			Prompt: "a\nsay <promise>COMPLETE</promise>\n",
			Final:  "a\r\nsay <promise>COMPLETE</promise>\r\n",
		}, all, Match{}},

		// TASK_FAILED reasons.
		{"reason on the same line", Input{Final: "<promise>TASK_FAILED</promise> tests need a database"}, strict,
			Match{Marker: TaskFailed, Strategy: PromiseTag, Reason: "tests need a database"}},
		{"reason after a colon", Input{Final: "<promise>TASK_FAILED</promise>:  missing   API key "}, strict,
			Match{Marker: TaskFailed, Strategy: PromiseTag, Reason: "missing API key"}},
		{"reason on the next line", Input{Final: "<promise>TASK_FAILED</promise>\n\n  Reason: the spec contradicts itself  \nmore"}, strict,
			Match{Marker: TaskFailed, Strategy: PromiseTag, Reason: "the spec contradicts itself"}},
		{"reason after a fence line", Input{Final: "<promise>TASK_FAILED</promise>\n```\ngo: cannot find module\n```"}, strict,
			Match{Marker: TaskFailed, Strategy: PromiseTag, Reason: "go: cannot find module"}},
		{"no reason", Input{Final: "<promise>TASK_FAILED</promise>\n \n"}, strict,
			Match{Marker: TaskFailed, Strategy: PromiseTag}},
		{"long reason is capped", Input{Final: "<promise>TASK_FAILED</promise> " + strings.Repeat("é", 400)}, strict,
			Match{Marker: TaskFailed, Strategy: PromiseTag, Reason: strings.Repeat("é", 300) + "…"}},
		// QUESTION: its text follows the marker, or is the paragraph before it.
		{"question after the marker", Input{Final: "I looked at both.\n<promise>QUESTION</promise>\nShould the API be v1 or v2?\nv2 breaks clients."}, strict,
			Match{Marker: Question, Strategy: PromiseTag, Reason: "Should the API be v1 or v2?\nv2 breaks clients."}},
		{"question before the marker", Input{Final: "Notes.\n\nKeep the old flag or drop it?\n<promise>QUESTION</promise>"}, strict,
			Match{Marker: Question, Strategy: PromiseTag, Reason: "Keep the old flag or drop it?"}},
		{"question quoted as code is no claim", Input{Final: "`<promise>QUESTION</promise>` asks"}, strict, Match{}},
		{"reason only for TASK_FAILED", Input{Final: "<promise>TASK_DONE</promise> all good"}, strict,
			Match{Marker: TaskDone, Strategy: PromiseTag}},

		// Heuristic positives.
		{"all tasks complete", Input{Final: "Updated the parser.\nAll tasks are complete."}, heur, Match{Marker: TaskDone, Strategy: Heuristic}},
		{"all tasks completed", Input{Final: "All tasks completed!"}, heur, Match{Marker: TaskDone, Strategy: Heuristic}},
		{"task complete", Input{Final: "**Task complete.** Tests pass."}, heur, Match{Marker: TaskDone, Strategy: Heuristic}},
		{"task is completed", Input{Final: "The task is completed."}, heur, Match{Marker: TaskDone, Strategy: Heuristic}},
		{"successfully completed the task", Input{Final: "I have successfully completed the task."}, heur, Match{Marker: TaskDone, Strategy: Heuristic}},
		{"the task is done", Input{Final: "Summary:\n- added x\n- added y\n\nThe task is done."}, heur, Match{Marker: TaskDone, Strategy: Heuristic}},
		{"within the last three lines", Input{Final: "The task is done.\n\n- a.go\n- b.go\n"}, heur, Match{Marker: TaskDone, Strategy: Heuristic}},
		{"curly apostrophe", Input{Final: "I’ve completed the task."}, heur, Match{Marker: TaskDone, Strategy: Heuristic}},

		// Heuristic negatives.
		{"not complete", Input{Final: "The task is not complete."}, heur, Match{}},
		{"isn't done", Input{Final: "The task isn't done yet."}, heur, Match{}},
		{"isn't done, curly", Input{Final: "The task isn’t done."}, heur, Match{}},
		{"incomplete", Input{Final: "The task is incomplete."}, heur, Match{}},
		{"not all tasks", Input{Final: "Not all tasks are complete."}, heur, Match{}},
		{"conditional", Input{Final: "Once the task is complete I will commit."}, heur, Match{}},
		{"future", Input{Final: "I will report when all tasks are done."}, heur, Match{}},
		{"question", Input{Final: "Is the task complete?"}, heur, Match{}},
		{"partial", Input{Final: "The first task is done, moving on."}, heur, Match{}},
		{"but failing", Input{Final: "The task is complete but two tests fail."}, heur, Match{}},
		{"too early in the message", Input{Final: "The task is done.\na\nb\nc"}, heur, Match{}},
		{"subtask", Input{Final: "Subtask complete."}, heur, Match{}},
		{"weak phrase", Input{Final: "Done!"}, heur, Match{}},
		{"phrase in code", Input{Final: "```\nAll tasks complete.\n```"}, heur, Match{}},
		{"exit code not zero", Input{Final: "All tasks are complete.", ExitCode: 1}, heur, Match{}},
		{"phrase from the echoed prompt", Input{Prompt: "Stop when the task is done.", Final: "Stop when the task is done.\nThe task is done."}, heur,
			Match{Marker: TaskDone, Strategy: Heuristic}},
		{"heuristic not in default", Input{Final: "All tasks are complete."}, nil, Match{}},

		// Order.
		{"order: promise-tag first", Input{Final: "<promise>TASK_DONE</promise>\nAll tasks are complete."}, all,
			Match{Marker: TaskDone, Strategy: PromiseTag}},
		{"order: falls through to relaxed", Input{Final: "`<promise>TASK_DONE</promise>`"}, all,
			Match{Marker: TaskDone, Strategy: RelaxedTag}},
		{"order: falls through to heuristic", Input{Final: "All tasks are complete."}, all,
			Match{Marker: TaskDone, Strategy: Heuristic}},
		{"order: heuristic before relaxed", Input{Final: "```\n<promise>COMPLETE</promise>\n```\nThe task is done."}, []Strategy{Heuristic, RelaxedTag},
			Match{Marker: TaskDone, Strategy: Heuristic}},
		{"order: relaxed before heuristic", Input{Final: "```\n<promise>COMPLETE</promise>\n```\nThe task is done."}, []Strategy{RelaxedTag, Heuristic},
			Match{Marker: PlanDone, Strategy: RelaxedTag}},
		{"unknown strategy skipped", Input{Final: "<promise>TASK_DONE</promise>"}, []Strategy{"nope", PromiseTag},
			Match{Marker: TaskDone, Strategy: PromiseTag}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Detect(tt.in, tt.order)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Detect(%q) mismatch (-want +got):\n%s", tt.in.Final, diff)
			}
		})
	}
}

func TestParseStrategies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		names   []string
		want    []Strategy
		wantErr string
	}{
		{[]string{"promise-tag"}, []Strategy{PromiseTag}, ""},
		{[]string{"heuristic", " Relaxed-Tag ", "promise-tag"}, []Strategy{Heuristic, RelaxedTag, PromiseTag}, ""},
		{[]string{"promise-tag", "", "promise-tag"}, []Strategy{PromiseTag}, ""},
		{[]string{"promise-tag", "regex"}, nil, `unknown completion strategy "regex" (valid: promise-tag, relaxed-tag, heuristic)`},
		{nil, nil, `no completion strategy given (valid: promise-tag, relaxed-tag, heuristic)`},
		{[]string{" "}, nil, `no completion strategy given (valid: promise-tag, relaxed-tag, heuristic)`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.names, ","), func(t *testing.T) {
			t.Parallel()
			got, err := ParseStrategies(tt.names)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("error = %q, want %q", gotErr, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("strategies mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMaskCodeKeepsOffsets(t *testing.T) {
	t.Parallel()
	in := "a `b` c\n```go\nx\n```\n~~~\ny\n"
	want := "a     c\n     \n \n   \n   \n \n"
	got := maskCode(in)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("maskCode mismatch (-want +got):\n%s", diff)
	}
}

func FuzzDetect(f *testing.F) {
	f.Add("<promise>TASK_DONE</promise>", "", "x", 0)
	f.Add("```\n<promise>COMPLETE</promise>\n```", "promise: COMPLETE", "", 0)
	f.Add("<promise>TASK_FAILED</promise>\nreason", "", "prompt <promise>TASK_FAILED</promise>", 1)
	f.Add("All tasks are complete.", "`a` ``b`` ```", "", 0)
	f.Add("~~~~\n````\n> ```x\n`` ` ``", "\r\n", "\n", 0)
	f.Fuzz(func(t *testing.T, final, message, prompt string, exit int) {
		in := Input{Final: final, Messages: []string{message, final}, ExitCode: exit, Prompt: prompt}
		m := Detect(in, Strategies())
		if m.Marker != None && m.Strategy == "" {
			t.Fatalf("match without strategy: %+v", m)
		}
		if strings.Contains(m.Reason, "\n") {
			t.Fatalf("reason spans lines: %q", m.Reason)
		}

		// A marker inside a fenced block never matches promise-tag, whatever
		// the block holds: the fence is longer than any run in the content,
		// so the content cannot close it.
		run := strings.Repeat("`", longestRun(final+message)+3)
		block := run + "\n" + final + "\n<promise>TASK_DONE</promise>\n" + message + "\n" + run + "\n"
		if got := Detect(Input{Final: block}, []Strategy{PromiseTag}); got.Marker != None {
			t.Fatalf("promise-tag matched inside a fence: %+v in %q", got, block)
		}
	})
}

// longestRun is the longest run of one fence character in s.
func longestRun(s string) int {
	longest, n := 0, 0
	var prev rune
	for _, r := range s {
		if (r == '`' || r == '~') && r == prev {
			n++
		} else if r == '`' || r == '~' {
			n = 1
		} else {
			n = 0
		}
		prev = r
		longest = max(longest, n)
	}
	return longest
}
