package agent

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCommandInvocation(t *testing.T) {
	t.Parallel()
	req := Request{Prompt: "fix {prompt_file} bug", PromptFile: "/run/p.md", Model: "m1"}
	tests := []struct {
		name string
		opts Options
		want Invocation
	}{
		{
			name: "stdin",
			opts: Options{Command: "agent", Args: []string{"--yes"}, Env: map[string]string{"K": "v"}},
			want: Invocation{Argv: []string{"agent", "--yes"}, EnvSet: []string{"K=v"}, Prompt: PromptStdin, Stdin: req.Prompt},
		},
		{
			name: "prompt argument",
			opts: Options{Command: "agent", Args: []string{"run", "--msg={prompt}", "--model", "{model}"}, ExtraArgs: []string{"-v"}},
			// The prompt's own "{prompt_file}" is left alone.
			want: Invocation{Argv: []string{"agent", "run", "--msg=fix {prompt_file} bug", "--model", "m1", "-v"}, Prompt: PromptArg},
		},
		{
			name: "prompt file",
			opts: Options{Command: "agent", Args: []string{"-f", "{prompt_file}"}},
			want: Invocation{Argv: []string{"agent", "-f", "/run/p.md"}, Prompt: PromptFile},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := New("command", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Invocation(req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Invocation (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"no command", Options{}, "no command set"},
		{"unknown output", Options{Command: "x", Output: "xml"}, `unknown output "xml": want one of text, claude-stream-json, codex-json, gemini-stream-json, opencode-json, droid-stream-json, copilot-json, cursor-stream-json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New("command", tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	a, err := New("command", Options{Command: "x", Args: []string{"{prompt_file}"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invocation(Request{Prompt: "p"}); err == nil {
		t.Error("Invocation with {prompt_file} and no prompt file: no error")
	}
}

func TestTextDecoder(t *testing.T) {
	t.Parallel()
	a, err := New("command", Options{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	got, events := decode(t, a.NewDecoder(), []byte("working\r\n\ndone <promise>TASK_DONE</promise>\n"))
	final := "working\n\ndone <promise>TASK_DONE</promise>"
	if diff := cmp.Diff(Result{FinalText: final, Messages: []string{final}, RawText: true}, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	wantEvents := []Event{
		{Kind: EventText, Text: "working"},
		{Kind: EventText, Text: ""},
		{Kind: EventText, Text: "done <promise>TASK_DONE</promise>"},
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// A long output keeps its end, where the marker is.
	long := strings.Repeat("filler line\n", 100000) + "<promise>COMPLETE</promise>\n"
	got, _ = decode(t, a.NewDecoder(), []byte(long))
	if len(got.FinalText) > maxTextTail || !got.RawText || !strings.HasSuffix(got.FinalText, "\n<promise>COMPLETE</promise>") {
		t.Errorf("FinalText is %d bytes ending %q", len(got.FinalText), got.FinalText[len(got.FinalText)-30:])
	}
}

func TestCommandClaudeDialect(t *testing.T) {
	t.Parallel()
	a, err := New("command", Options{Command: "my-claude-wrapper", Output: "claude-stream-json"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := decode(t, a.NewDecoder(), readFixture(t, "claude-stream-sample.jsonl"))
	if got.SessionID != "e95169ba-fea8-4f4f-9902-5ed5d5091502" || got.Usage.InputTokens != 209 {
		t.Errorf("claude-stream-json dialect decoded %+v", got)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		a, err := New(name, Options{Command: "x"})
		if err != nil {
			t.Errorf("New(%q): %v", name, err)
			continue
		}
		if a.Name() != name {
			t.Errorf("New(%q).Name() = %q", name, a.Name())
		}
	}
	_, err := New("clod", Options{})
	if want := `unknown agent "clod": want one of claude, codex, gemini, opencode, droid, copilot, qwen, amp, cursor, kiro, command`; err == nil || err.Error() != want {
		t.Errorf("New(clod) = %v, want %q", err, want)
	}
	_, err = New("cloude", Options{})
	if want := `unknown agent "cloude" (did you mean "claude"?)`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("New(cloude) = %v, want it to start %q", err, want)
	}
}
