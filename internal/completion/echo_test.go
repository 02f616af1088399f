package completion

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/prompt"
)

// markerPrompt is how ralph's prompts name the markers: each on a line
// of its own, after the line that says when to write it.
const markerPrompt = `# Task US-001: Add a greeting

Implement hello.sh.

When the task is implemented and verified, end your final message with this line:
<promise>TASK_DONE</promise>

If you cannot finish it, end your final message instead with this line, followed by a one-line reason:
<promise>TASK_FAILED</promise> the reason, in one line
`

// TestDetectPlainText: the agent's own marker counts in plain-text
// output, however it says it; an echo of the prompt, whole or partial,
// quoted or numbered, never does.
func TestDetectPlainText(t *testing.T) {
	t.Parallel()
	quoted := "> " + strings.ReplaceAll(strings.TrimSpace(markerPrompt), "\n", "\n> ")
	tests := []struct {
		name  string
		final string
		want  Marker
	}{
		{"marker on its own last line", "Implemented hello.sh; the tests pass.\n<promise>TASK_DONE</promise>", TaskDone},
		{"marker after words on the line", "All good. <promise>TASK_DONE</promise>", TaskDone},
		{"marker alone", "<promise>TASK_DONE</promise>\n", TaskDone},
		{"failed with its reason", "Tried twice.\n<promise>TASK_FAILED</promise> the database is down", TaskFailed},
		{"own marker after a blank line", "Done.\n\n<promise>TASK_DONE</promise>\n\n", TaskDone},
		{"own marker after the whole echo", markerPrompt + "\nWorking...\nDone.\n<promise>TASK_DONE</promise>", TaskDone},
		{"whole echo", markerPrompt, None},
		{"whole echo, twice", markerPrompt + markerPrompt, None},
		{"echo, then nothing of its own", "Reading my instructions:\n" + markerPrompt + "\nLet me start.", None},
		{"the end of the prompt echoed", "When the task is implemented and verified, end your final message with this line:\n<promise>TASK_DONE</promise>\n\nok", None},
		{"echo re-indented", "  When the task is implemented and verified, end your final message with this line:\n    <promise>TASK_DONE</promise>", None},
		{"echo quoted", quoted, None},
		{"echo quoted, one line", "The prompt says:\n> <promise>TASK_DONE</promise>\nI will.", None},
		{"grep of the prompt's markers", "<promise>TASK_DONE</promise>\n<promise>TASK_FAILED</promise> the reason, in one line", None},
		{"grep -n of one line", "prompt.md:6:<promise>TASK_DONE</promise>\nworking", None},
		{"cat -n", "     5\tWhen the task is implemented and verified, end your final message with this line:\n     6\t<promise>TASK_DONE</promise>", None},
		{"CRLF echo", strings.ReplaceAll(markerPrompt, "\n", "\r\n"), None},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Detect(Input{Final: tt.final, Messages: []string{tt.final}, Prompt: markerPrompt}, []Strategy{PromiseTag})
			if got.Marker != tt.want {
				t.Errorf("Detect = %q, want %q; own words: %q", got.Marker, tt.want, stripEcho(tt.final, markerPrompt))
			}
		})
	}
}

func TestStripEcho(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, text, prompt, want string }{
		{"no prompt", "a\nb", "", "a\nb"},
		{"a lone prompt line stays", "summary\n<promise>TASK_DONE</promise>", "say\n<promise>TASK_DONE</promise>\n",
			"summary\n<promise>TASK_DONE</promise>"},
		{"two prompt lines go", "summary\nend your reply with\n<promise>TASK_DONE</promise>", "end your reply with\n<promise>TASK_DONE</promise>\n",
			"summary\n"},
		{"short prompt lines tell nothing", "```\n<promise>TASK_DONE</promise>", "```\nrun it\n```\n<promise>TASK_DONE</promise>",
			"```\n<promise>TASK_DONE</promise>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, stripEcho(tt.text, tt.prompt)); diff != "" {
				t.Errorf("stripEcho (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzStripEcho: whatever the prompt, echoing it whole never makes a
// claim; nor does echoing it quoted, numbered or in part (two lines or
// more) where every line of the echo is a prompt line long enough to
// count. The agent's own claim, after its own words, is never removed.
func FuzzStripEcho(f *testing.F) {
	f.Add(markerPrompt, "All done.", 0, 3)
	f.Add(prompt.Default("runner"), "Implemented and verified.", 10, 40)
	f.Add("a\n<promise>COMPLETE</promise>\nb", "ok", 0, 2)
	f.Add("x: 1:<promise>TASK_DONE</promise>", "> quoted", 0, 1)
	f.Fuzz(func(t *testing.T, p, own string, from, n int) {
		for _, echo := range []string{p, p + "\n" + p, "Reading it:\n" + p + "\nStarting."} {
			if m := Detect(Input{Final: echo, Prompt: p}, Strategies()); m.Marker != None {
				t.Fatalf("the whole prompt echoed is a claim %q: %q", m.Marker, echo)
			}
		}
		for _, echo := range echoes(p, from, n) {
			if m := Detect(Input{Final: echo, Prompt: p}, Strategies()); m.Marker != None && recognisable(echo, p) {
				t.Fatalf("an echo of the prompt is a claim %q: %q (prompt %q)", m.Marker, echo, p)
			}
		}
		own = strings.TrimSpace(strings.ReplaceAll(own, "\n", " "))
		if own == "" || strings.Contains(p, own) || strings.ContainsAny(own, "\r`~>|") {
			return
		}
		text := own + "\n<promise>TASK_DONE</promise>"
		if got := Detect(Input{Final: text, Prompt: p}, []Strategy{PromiseTag}); got.Marker != TaskDone &&
			!strings.Contains(p, text) && promiseTag(text).Marker == TaskDone {
			t.Fatalf("the agent's own claim was removed: %q (prompt %q) -> %q", text, p, stripEcho(text, p))
		}
	})
}

// echoes are ways to echo the prompt p in part: quoted, numbered, and its
// lines from..from+n (two at least).
func echoes(p string, from, n int) []string {
	lines := strings.Split(strings.ReplaceAll(p, "\r\n", "\n"), "\n")
	quoted, numbered := make([]string, len(lines)), make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = "> " + l
		numbered[i] = "prompt.md:" + string(rune('1'+i%9)) + ":" + l
	}
	out := []string{strings.Join(quoted, "\n"), strings.Join(numbered, "\n")}
	if len(lines) >= 2 {
		from = ((from % len(lines)) + len(lines)) % len(lines)
		n = max(2, ((n%len(lines))+len(lines))%len(lines))
		if to := min(len(lines), from+n); to-from >= 2 {
			out = append(out, strings.Join(lines[from:to], "\n"))
		}
	}
	return out
}

// recognisable reports whether every non-blank line of echo is a line of
// p long enough for the rules to count it.
func recognisable(echo, p string) bool {
	said := map[string]bool{}
	for line := range strings.SplitSeq(strings.ReplaceAll(p, "\r\n", "\n"), "\n") {
		if k, _ := echoKey(line); len(k) >= minEchoLine {
			said[k] = true
		}
	}
	for line := range strings.SplitSeq(echo, "\n") {
		if k, _ := echoKey(line); k != "" && !said[k] {
			return false
		}
	}
	return true
}
