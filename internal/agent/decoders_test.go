package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fixedNow is the clock of decoder tests: reset times are read against it.
var fixedNow = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

// runDecoded decodes stream with the named agent's decoder and finishes
// the Result as Run does once the agent has exited with exitCode.
func runDecoded(t testing.TB, name string, stream []byte, exitCode int, stderr string) (Result, []Event) {
	t.Helper()
	return runDecodedIn(t, name, Options{}, Request{ScratchDir: t.TempDir()}, stream, exitCode, stderr)
}

func runDecodedIn(t testing.TB, name string, opts Options, req Request, stream []byte, exitCode int, stderr string) (Result, []Event) {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	if name == "command" && opts.Command == "" {
		opts.Command = "x"
	}
	a, err := New(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, events := decode(t, a.NewDecoder(), stream)
	res.ExitCode, res.Stderr = exitCode, stderr
	complete(a, req, &res)
	return res, events
}

// TestDecoderFixtures decodes every recorded stream (DESIGN.md §4: real
// runs of each CLI against the fake model server, a success and an HTTP
// 429) into its exact Result and events.
func TestDecoderFixtures(t *testing.T) {
	t.Parallel()
	const done = "All done. <promise>COMPLETE</promise>"
	const perMinute = "Number of request tokens has exceeded your per-minute rate limit (fake)"
	const codexWarning = "Model metadata for `gpt-5.1-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."
	const codex429 = "exceeded retry limit, last status: 429 Too Many Requests"
	const gemini429 = "[API Error: " + perMinute + "]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method"
	const copilot429 = "Failed to get response from the AI model; retried 5 times (total retry wait time: 5.34 seconds) Last error: 429 " + perMinute
	callFailed := Event{Kind: EventError, Text: "model call failed: HTTP 429: " + perMinute}
	tests := []struct {
		agent, fixture string
		exitCode       int
		want           Result
		wantEvents     []Event
	}{
		{
			agent: "codex", fixture: "codex-exec-json-sample.jsonl",
			want: Result{
				FinalText: done, Messages: []string{done}, SessionID: "01a1fcb2-c484-78c0-b254-e7eda25f3885",
				// input_tokens 400 include the 100 cached ones.
				Turns: 1, Usage: *usage(300, 60, 100, 0),
			},
			wantEvents: []Event{
				{Kind: EventError, Text: codexWarning},
				{Kind: EventToolCall, Tool: "shell", ToolInput: "/bin/bash -lc 'echo hi > file.txt'"},
				{Kind: EventToolResult, Tool: "shell"},
				{Kind: EventText, Text: done},
				{Kind: EventUsage, Usage: usage(300, 60, 100, 0)},
			},
		},
		{
			agent: "codex", fixture: "codex-exec-json-429-sample.jsonl", exitCode: 1,
			want: Result{
				SessionID: "01a1fcb2-d43c-7d81-b087-11d776c6e616", Turns: 1,
				IsError: true, ErrorKind: ErrorRateLimit, ErrorText: codex429, HTTPStatus: 429, ExitCode: 1,
			},
			wantEvents: []Event{
				{Kind: EventError, Text: codexWarning},
				{Kind: EventError, Text: "Reconnecting... 1/1 (" + codex429 + ")"},
				{Kind: EventError, Text: codex429},
			},
		},
		{
			agent: "gemini", fixture: "gemini-stream-sample.jsonl",
			want: Result{
				FinalText: done, Messages: []string{"I'll create the file now.", done},
				SessionID: "3bf66785-f721-4629-a438-bbb2a030550f", Usage: *usage(600, 90, 0, 0),
			},
			wantEvents: []Event{
				{Kind: EventText, Text: "I'll create the file now."},
				{Kind: EventToolCall, Tool: "run_shell_command", ToolInput: "echo hi > file.txt"},
				{Kind: EventToolResult, Tool: "run_shell_command"},
				{Kind: EventText, Text: done},
				{Kind: EventResult, Text: done, Usage: usage(600, 90, 0, 0)},
			},
		},
		{
			// The CLI exits with the HTTP status, which the shell sees as 429 % 256.
			agent: "gemini", fixture: "gemini-stream-429-sample.jsonl", exitCode: 173,
			want: Result{
				SessionID: "c4abc581-f58d-4740-a6e5-32e95a2227f7", Model: "gemini-2.5-pro",
				IsError: true, ErrorKind: ErrorRateLimit, ErrorText: gemini429, HTTPStatus: 429, ExitCode: 173,
			},
			wantEvents: []Event{
				{Kind: EventError, Text: gemini429},
				{Kind: EventResult, Usage: &Usage{}},
			},
		},
		{
			// No final event: tokens and cost are the sum of the steps.
			agent: "opencode", fixture: "opencode-json-sample.jsonl",
			want: Result{
				FinalText: done, Messages: []string{done}, SessionID: "ses_e03498145ffeIriGS34sJn5DKE",
				Turns: 2, Usage: *usage(400, 60, 0, 0), HasCost: true,
			},
			wantEvents: []Event{
				{Kind: EventToolCall, Tool: "bash", ToolInput: "echo hi > file.txt"},
				{Kind: EventToolResult, Tool: "bash", Text: "(no output)"},
				{Kind: EventUsage, Usage: usage(200, 30, 0, 0)},
				{Kind: EventText, Text: done},
				{Kind: EventUsage, Usage: usage(400, 60, 0, 0)},
			},
		},
		{
			// retry-after: 1 in the response headers.
			agent: "opencode", fixture: "opencode-json-429-sample.jsonl", exitCode: 1,
			want: Result{
				SessionID: "ses_e03495ee3ffepGVas7S0wTHa1W",
				IsError:   true, ErrorKind: ErrorRateLimit, ErrorText: perMinute, HTTPStatus: 429,
				ResetAt: fixedNow.Add(time.Second), ExitCode: 1,
			},
			wantEvents: []Event{{Kind: EventError, Text: perMinute}},
		},
		{
			agent: "droid", fixture: "droid-stream-json-sample.jsonl",
			want: Result{
				FinalText: done, Messages: []string{done}, SessionID: "b1e97ebc-5799-452c-8378-384973db9d5e",
				Turns: 2, Usage: *usage(400, 60, 0, 0),
			},
			wantEvents: []Event{
				{Kind: EventToolCall, Tool: "Execute", ToolInput: "echo hi > file.txt"},
				{Kind: EventToolResult, Tool: "Execute", Text: "Command completed successfully\n\n[Process exited with code 0]"},
				{Kind: EventText, Text: done},
				{Kind: EventResult, Text: done, Usage: usage(400, 60, 0, 0)},
			},
		},
		{
			agent: "droid", fixture: "droid-stream-json-429-sample.jsonl", exitCode: 1,
			want: Result{
				SessionID: "503e5923-1bdd-46b6-a9b0-0a18b6bcc705",
				IsError:   true, ErrorKind: ErrorRateLimit, ErrorText: "429 " + perMinute + "; Exec failed", HTTPStatus: 429, ExitCode: 1,
			},
			wantEvents: []Event{
				{Kind: EventError, Text: "429 " + perMinute},
				{Kind: EventError, Text: "Exec failed"},
			},
		},
		{
			// No usage file here: tokens come only from it.
			agent: "copilot", fixture: "copilot-json-sample.jsonl",
			want: Result{
				FinalText: done, Messages: []string{done}, SessionID: "c2ffc937-ed5c-4cdc-ac91-1e6c7ca901ff",
				Turns: 2, ContextWindow: 64000, ContextUsedPercent: 10500.0 / 64000 * 100,
			},
			wantEvents: []Event{
				{Kind: EventToolCall, Tool: "bash", ToolInput: "echo hi > file.txt"},
				{Kind: EventToolResult, Tool: "bash", Text: "\n<shellId: 0 completed with exit code 0>"},
				{Kind: EventText, Text: done},
				{Kind: EventResult, Text: done, Usage: &Usage{}},
			},
		},
		{
			agent: "copilot", fixture: "copilot-json-429-sample.jsonl", exitCode: 1,
			want: Result{
				SessionID: "791a4282-eb43-4f9f-ad66-7340ad7f18e5", Turns: 1,
				IsError: true, ErrorKind: ErrorRateLimit, ErrorText: copilot429, HTTPStatus: 429, ExitCode: 1,
			},
			wantEvents: []Event{
				callFailed, callFailed, callFailed, callFailed, callFailed, callFailed,
				{Kind: EventError, Text: copilot429},
				{Kind: EventResult, Usage: &Usage{}},
			},
		},
		{
			agent: "qwen", fixture: "qwen-stream-json-sample.jsonl",
			want: Result{
				FinalText: done, Messages: []string{done}, SessionID: "69ca4c72-9a24-4517-8253-048be5e3d9cf",
				Turns: 2, Usage: *usage(400, 60, 0, 0),
			},
			wantEvents: []Event{
				{Kind: EventToolCall, Tool: "run_shell_command", ToolInput: "echo hi > file.txt"},
				{Kind: EventUsage, Usage: usage(200, 30, 0, 0)},
				{Kind: EventToolResult, Tool: "run_shell_command", Text: "Command: echo hi > file.txt\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: 0\nSignal: 0\nProcess Group PGID: 28405"},
				{Kind: EventText, Text: done},
				{Kind: EventUsage, Usage: usage(400, 60, 0, 0)},
				{Kind: EventResult, Text: done, Usage: usage(400, 60, 0, 0)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			got, events := runDecoded(t, tt.agent, readFixture(t, tt.fixture), tt.exitCode, "")
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvents, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecoderFixturesAsDialects pins that each agent's Spec.Dialect is
// true: the command agent with that output decodes the agent's recorded
// stream as the agent's own adapter does.
func TestDecoderFixturesAsDialects(t *testing.T) {
	t.Parallel()
	fixtures := map[string]string{
		"claude":   "claude-stream-sample.jsonl",
		"codex":    "codex-exec-json-sample.jsonl",
		"gemini":   "gemini-stream-sample.jsonl",
		"opencode": "opencode-json-sample.jsonl",
		"droid":    "droid-stream-json-sample.jsonl",
		"copilot":  "copilot-json-sample.jsonl",
		"qwen":     "qwen-stream-json-sample.jsonl",
	}
	for _, spec := range Specs() {
		fixture, ok := fixtures[spec.Name]
		if !ok {
			continue // no recorded stream (Amp, Cursor, Kiro cannot run here)
		}
		stream := readFixture(t, fixture)
		want, _ := runDecoded(t, spec.Name, stream, 0, "")
		got, _ := runDecodedIn(t, "command", Options{Output: spec.Dialect}, Request{ScratchDir: t.TempDir()}, stream, 0, "")
		if diff := cmp.Diff(want, got, approx); diff != "" {
			t.Errorf("%s as %s (-want +got):\n%s", fixture, spec.Dialect, diff)
		}
	}
}

func TestCodexDecoder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		stream     string
		exitCode   int
		want       Result
		wantEvents []Event
	}{
		{
			// Usage is cumulative per thread: the last report is the total.
			name: "two turns, tools, cumulative usage",
			stream: `{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"i0","type":"reasoning","text":"thinking <promise>COMPLETE</promise>"}}
{"type":"item.started","item":{"id":"i1","type":"mcp_tool_call","server":"gh","tool":"search","arguments":{"query":"x"},"status":"in_progress"}}
{"type":"item.completed","item":{"id":"i1","type":"mcp_tool_call","server":"gh","tool":"search","arguments":{"query":"x"},"result":{"content":[{"type":"text","text":"found"}]},"status":"completed"}}
{"type":"item.completed","item":{"id":"i2","type":"file_change","changes":[{"path":"a.go","kind":"update"},{"path":"b.go","kind":"add"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"i3","type":"command_execution","command":"go test","aggregated_output":"ok","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"i4","type":"agent_message","text":"first"}}
{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":800,"output_tokens":50}}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"i5","type":"agent_message","text":"<promise>TASK_DONE</promise>"}}
{"type":"turn.completed","usage":{"input_tokens":2500,"cached_input_tokens":1800,"output_tokens":90}}
`,
			want: Result{
				FinalText: "<promise>TASK_DONE</promise>", Messages: []string{"first", "<promise>TASK_DONE</promise>"},
				SessionID: "t1", Turns: 2, Usage: *usage(700, 90, 1800, 0),
			},
			wantEvents: []Event{
				{Kind: EventToolCall, Tool: "gh.search", ToolInput: "x"},
				{Kind: EventToolResult, Tool: "gh.search", Text: "found"},
				{Kind: EventToolCall, Tool: "file_change", ToolInput: "update a.go, add b.go"},
				{Kind: EventToolCall, Tool: "shell", ToolInput: "go test"},
				{Kind: EventToolResult, Tool: "shell", Text: "ok"},
				{Kind: EventText, Text: "first"},
				{Kind: EventUsage, Usage: usage(200, 50, 800, 0)},
				{Kind: EventText, Text: "<promise>TASK_DONE</promise>"},
				{Kind: EventUsage, Usage: usage(700, 90, 1800, 0)},
			},
		},
		{
			name: "usage limit with a structured reset",
			stream: `{"type":"thread.started","thread_id":"t2"}
{"type":"turn.started"}
{"type":"error","message":"You've hit your usage limit. Upgrade to Pro or try again in 2 hours 5 minutes."}
{"type":"turn.failed","error":{"message":"You've hit your usage limit. Upgrade to Pro or try again in 2 hours 5 minutes.","type":"usage_limit_reached","resets_in_seconds":600}}
`,
			exitCode: 1,
			want: Result{
				SessionID: "t2", Turns: 1, IsError: true, ErrorKind: ErrorUsageLimit,
				ErrorText: "You've hit your usage limit. Upgrade to Pro or try again in 2 hours 5 minutes.",
				ResetAt:   fixedNow.Add(10 * time.Minute), ExitCode: 1,
			},
			wantEvents: []Event{{Kind: EventError, Text: "You've hit your usage limit. Upgrade to Pro or try again in 2 hours 5 minutes."}},
		},
		{
			name: "usage limit reset from the text",
			stream: `{"type":"error","message":"You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at 3:28 PM."}
`,
			exitCode: 1,
			want: Result{
				IsError: true, ErrorKind: ErrorUsageLimit,
				ErrorText: "You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at 3:28 PM.",
				ResetAt:   time.Date(2026, 11, 21, 15, 28, 0, 0, time.UTC), ExitCode: 1,
			},
			wantEvents: []Event{{Kind: EventError, Text: "You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at 3:28 PM."}},
		},
		{
			// A reconnect notice followed by a completed turn is no failure.
			name: "recovered error",
			stream: `{"type":"error","message":"Reconnecting... 1/5 (stream disconnected)"}
{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"done"}}
{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":1}}
`,
			want: Result{FinalText: "done", Messages: []string{"done"}, Usage: *usage(10, 1, 0, 0)},
			wantEvents: []Event{
				{Kind: EventError, Text: "Reconnecting... 1/5 (stream disconnected)"},
				{Kind: EventText, Text: "done"},
				{Kind: EventUsage, Usage: usage(10, 1, 0, 0)},
			},
		},
		{
			name:     "not logged in: only stderr",
			stream:   "",
			exitCode: 1,
			want: Result{
				IsError: true, ErrorKind: ErrorFatal, ErrorText: "Error: Not logged in. Run `codex login`.",
				ExitCode: 1, Stderr: "Error: Not logged in. Run `codex login`.\n",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stderr := ""
			if tt.want.Stderr != "" {
				stderr = tt.want.Stderr
			}
			got, events := runDecoded(t, "codex", []byte(tt.stream), tt.exitCode, stderr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvents, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGeminiDecoder(t *testing.T) {
	t.Parallel()
	stream := `{"type":"init","session_id":"g1","model":"gemini-2.5-pro"}
{"type":"message","role":"user","content":"<promise>COMPLETE</promise> is how you finish"}
{"type":"message","role":"assistant","content":"Work","delta":true}
{"type":"message","role":"assistant","content":"ing.","delta":true}
{"type":"tool_use","tool_name":"read_file","tool_id":"r1","parameters":{"file_path":"prompt.md"}}
{"type":"tool_result","tool_id":"r1","status":"error","output":"","error":{"type":"x","message":"no such file"}}
{"type":"error","severity":"warning","message":"Loop detected"}
{"type":"message","role":"assistant","content":"<promise>TASK_DONE</promise>"}
{"type":"result","status":"success","stats":{"total_tokens":1500,"input_tokens":1400,"output_tokens":100,"cached":1000,"input":400}}
`
	got, events := runDecoded(t, "gemini", []byte(stream), 0, "")
	want := Result{
		FinalText: "<promise>TASK_DONE</promise>", Messages: []string{"Working.", "<promise>TASK_DONE</promise>"},
		SessionID: "g1", Model: "gemini-2.5-pro", Usage: *usage(400, 100, 1000, 0),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	wantEvents := []Event{
		{Kind: EventText, Text: "Working."},
		{Kind: EventToolCall, Tool: "read_file", ToolInput: "prompt.md"},
		{Kind: EventToolResult, Tool: "read_file", Text: "no such file"},
		{Kind: EventError, Text: "Loop detected"},
		{Kind: EventText, Text: "<promise>TASK_DONE</promise>"},
		{Kind: EventResult, Text: "<promise>TASK_DONE</promise>", Usage: usage(400, 100, 1000, 0)},
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Exit codes: the HTTP status modulo 256, and the CLI's own fatal ones.
	for _, tt := range []struct {
		exit       int
		stream     string
		wantStatus int
		wantKind   ErrorKind
	}{
		{244, `{"type":"result","status":"error","error":{"message":"Internal error"}}`, 500, ErrorTransient},
		{17, `{"type":"result","status":"error","error":{"message":"overloaded?"}}`, 529, ErrorTransient},
		{145, `{"type":"result","status":"error","error":{"message":"[API Error: unauthorized]"}}`, 401, ErrorFatal},
		{41, ``, 0, ErrorFatal},
		{1, `{"type":"result","status":"error","error":{"message":"Quota exceeded for quota metric 'Requests per minute'. Please retry in 37.5s."}}`, 0, ErrorRateLimit},
		{1, `{"type":"result","status":"error","error":{"message":"Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Requests per day per user'. Please retry in 37.5s."}}`, 0, ErrorUsageLimit},
	} {
		got, _ := runDecoded(t, "gemini", []byte(tt.stream+"\n"), tt.exit, "")
		if got.HTTPStatus != tt.wantStatus || got.ErrorKind != tt.wantKind || !got.IsError {
			t.Errorf("exit %d, %s: status %d, kind %q, error %v; want %d, %q", tt.exit, tt.stream, got.HTTPStatus, got.ErrorKind, got.IsError, tt.wantStatus, tt.wantKind)
		}
		if tt.exit == 1 && !got.ResetAt.Equal(fixedNow.Add(37500*time.Millisecond)) {
			t.Errorf("reset %v, want in 37.5s", got.ResetAt)
		}
	}
}

func TestOpenCodeDecoder(t *testing.T) {
	t.Parallel()
	stream := `{"type":"step_start","sessionID":"s1","part":{"type":"step-start"}}
{"type":"text","sessionID":"s1","part":{"type":"text","text":"Reading."}}
{"type":"tool_use","sessionID":"s1","part":{"type":"tool","tool":"read","state":{"status":"error","input":{"filePath":"x","path":"x.md"},"error":"File not found"}}}
{"type":"step_finish","sessionID":"s1","part":{"type":"step-finish","tokens":{"input":100,"output":10,"reasoning":5,"cache":{"read":50,"write":20}},"cost":0.0125}}
{"type":"step_start","sessionID":"s1","part":{"type":"step-start"}}
{"type":"text","sessionID":"s1","part":{"type":"text","text":"<promise>TASK_DONE</promise>"}}
{"type":"step_finish","sessionID":"s1","part":{"type":"step-finish","tokens":{"input":30,"output":4,"reasoning":0,"cache":{"read":150,"write":0}},"cost":0.0025}}
`
	got, events := runDecoded(t, "opencode", []byte(stream), 0, "")
	want := Result{
		FinalText: "<promise>TASK_DONE</promise>", Messages: []string{"Reading.", "<promise>TASK_DONE</promise>"},
		SessionID: "s1", Turns: 2, Usage: *usage(130, 19, 200, 20), CostUSD: 0.015, HasCost: true,
	}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	wantEvents := []Event{
		{Kind: EventText, Text: "Reading."},
		{Kind: EventToolCall, Tool: "read", ToolInput: "x.md"},
		{Kind: EventToolResult, Tool: "read", Text: "File not found"},
		{Kind: EventUsage, Usage: usage(100, 15, 50, 20)},
		{Kind: EventText, Text: "<promise>TASK_DONE</promise>"},
		{Kind: EventUsage, Usage: usage(130, 19, 200, 20)},
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	auth := `{"type":"error","sessionID":"s2","error":{"name":"ProviderAuthError","data":{"providerID":"anthropic","message":"API key is missing"}}}` + "\n"
	got, _ = runDecoded(t, "opencode", []byte(auth), 1, "")
	if got.ErrorKind != ErrorFatal || got.ErrorText != "API key is missing" {
		t.Errorf("auth error: kind %q, text %q; want fatal", got.ErrorKind, got.ErrorText)
	}
}

func TestCopilotUsageFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	report := `{"currentModel":"gpt-4.1","totalPremiumRequestCost":1,"modelMetrics":{
		"gpt-4.1":{"usage":{"inputTokens":12000,"outputTokens":300,"cacheReadTokens":9000,"cacheWriteTokens":0}},
		"claude-haiku-4.5":{"usage":{"inputTokens":500,"outputTokens":20,"cacheReadTokens":0,"cacheWriteTokens":100}}}}`
	if err := os.WriteFile(filepath.Join(dir, copilotUsageFile), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := runDecodedIn(t, "copilot", Options{}, Request{ScratchDir: dir}, readFixture(t, "copilot-json-sample.jsonl"), 0, "")
	if want := *usage(3500, 320, 9000, 100); got.Usage != want {
		t.Errorf("Usage = %+v, want %+v", got.Usage, want)
	}
	// A broken file leaves the stream's count alone.
	if err := os.WriteFile(filepath.Join(dir, copilotUsageFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ = runDecodedIn(t, "copilot", Options{}, Request{ScratchDir: dir}, readFixture(t, "copilot-json-sample.jsonl"), 0, "")
	if got.Usage != (Usage{}) {
		t.Errorf("Usage = %+v from a broken file, want none", got.Usage)
	}
}

func TestCopilotDecoderErrors(t *testing.T) {
	t.Parallel()
	stream := `{"type":"session.error","data":{"errorType":"quota","message":"You have exceeded your monthly premium request allowance. It resets on Dec 1.","statusCode":402}}
{"type":"result","sessionId":"c9","exitCode":1,"usage":{}}
`
	got, _ := runDecoded(t, "copilot", []byte(stream), 1, "")
	want := Result{
		SessionID: "c9", IsError: true, ErrorKind: ErrorUsageLimit, HTTPStatus: 402,
		ErrorText: "You have exceeded your monthly premium request allowance. It resets on Dec 1.",
		ResetAt:   time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), ExitCode: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
}

func TestDroidDecoderCompletionWins(t *testing.T) {
	t.Parallel()
	// An error the agent recovered from is not the run's failure.
	stream := `{"type":"error","source":"agent_loop","message":"529 overloaded, retrying","session_id":"d1"}
{"type":"message","role":"assistant","text":"done","session_id":"d1"}
{"type":"completion","finalText":"done","numTurns":1,"session_id":"d1","usage":{"input_tokens":5,"output_tokens":1,"cache_read_input_tokens":7,"cache_creation_input_tokens":2}}
`
	got, _ := runDecoded(t, "droid", []byte(stream), 0, "")
	want := Result{FinalText: "done", Messages: []string{"done"}, SessionID: "d1", Turns: 1, Usage: *usage(5, 1, 7, 2)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
}

// TestClaudeShapedDecoders decodes constructed Amp and Qwen streams (Amp
// cannot run here) with the Claude decoder they share.
func TestClaudeShapedDecoders(t *testing.T) {
	t.Parallel()
	amp := `{"type":"system","subtype":"init","cwd":"/p","session_id":"T-1","tools":["Bash"],"mcp_servers":[]}
{"type":"assistant","message":{"id":"m1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"tu1","name":"Bash","input":{"cmd":"ls","command":"ls -la"}}],"usage":{"input_tokens":100,"cache_creation_input_tokens":50,"cache_read_input_tokens":0,"output_tokens":10}},"parent_tool_use_id":null,"session_id":"T-1"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"a.go","is_error":false}]},"parent_tool_use_id":null,"session_id":"T-1"}
{"type":"assistant","message":{"id":"m2","type":"message","role":"assistant","content":[{"type":"text","text":"<promise>TASK_DONE</promise>"}],"usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":150,"output_tokens":5}},"parent_tool_use_id":null,"session_id":"T-1"}
{"type":"result","subtype":"success","duration_ms":900,"is_error":false,"num_turns":2,"result":"<promise>TASK_DONE</promise>","session_id":"T-1"}
`
	got, _ := runDecoded(t, "amp", []byte(amp), 0, "")
	want := Result{
		FinalText: "<promise>TASK_DONE</promise>", Messages: []string{"<promise>TASK_DONE</promise>"},
		SessionID: "T-1", Turns: 2, Usage: *usage(120, 15, 150, 50),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("amp Result (-want +got):\n%s", diff)
	}

	ampErr := `{"type":"result","subtype":"error_during_execution","duration_ms":10,"is_error":true,"num_turns":0,"error":"Out of credits: add credits at ampcode.com/settings","session_id":"T-2"}` + "\n"
	got, _ = runDecoded(t, "amp", []byte(ampErr), 1, "")
	if got.ErrorKind != ErrorUsageLimit || got.ErrorText != "Out of credits: add credits at ampcode.com/settings" {
		t.Errorf("amp error: kind %q, text %q; want usage_limit and the error string", got.ErrorKind, got.ErrorText)
	}

	qwenErr := `{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"usage":{"input_tokens":0,"output_tokens":0},"error":{"message":"[API Error: 503 Service Unavailable]"},"session_id":"q1"}` + "\n"
	got, _ = runDecoded(t, "qwen", []byte(qwenErr), 1, "")
	if got.ErrorKind != ErrorTransient || got.HTTPStatus != 503 || got.ErrorText != "[API Error: 503 Service Unavailable]" {
		t.Errorf("qwen error: kind %q, status %d, text %q; want transient 503", got.ErrorKind, got.HTTPStatus, got.ErrorText)
	}
}

func TestCursorDecoder(t *testing.T) {
	t.Parallel()
	stream := `{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/p","session_id":"c-1","model":"Auto","permissionMode":"default"}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"say <promise>COMPLETE</promise> when done"}]},"session_id":"c-1"}
{"type":"thinking","subtype":"delta","text":"<promise>COMPLETE</promise>","session_id":"c-1"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Running the tests."}]},"session_id":"c-1","model_call_id":"mc1"}
{"type":"tool_call","subtype":"started","call_id":"call_1","tool_call":{"shellToolCall":{"args":{"command":"go test ./...","workingDirectory":""}}},"session_id":"c-1"}
{"type":"tool_call","subtype":"completed","call_id":"call_1","tool_call":{"shellToolCall":{"args":{"command":"go test ./..."},"result":{"success":{"exitCode":0,"stdout":"ok","stderr":""}}}},"session_id":"c-1"}
{"type":"tool_call","subtype":"started","call_id":"call_2","tool_call":{"function":{"name":"edit","arguments":"{\"path\":\"a.go\"}"}},"session_id":"c-1"}
{"type":"tool_call","subtype":"completed","call_id":"call_2","tool_call":{"function":{"name":"edit","arguments":"{\"path\":\"a.go\"}"},"result":{"error":{"message":"denied"}}},"session_id":"c-1"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"<promise>TASK_DONE</promise>"}]},"session_id":"c-1"}
{"type":"result","subtype":"success","duration_ms":4986,"duration_api_ms":4986,"is_error":false,"result":"Running the tests.<promise>TASK_DONE</promise>","session_id":"c-1","request_id":"r1","usage":{"inputTokens":900,"outputTokens":40,"cacheReadTokens":300,"cacheWriteTokens":0}}
`
	got, events := runDecoded(t, "cursor", []byte(stream), 0, "")
	want := Result{
		FinalText: "<promise>TASK_DONE</promise>", Messages: []string{"Running the tests.", "<promise>TASK_DONE</promise>"},
		SessionID: "c-1", Usage: *usage(900, 40, 300, 0),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	wantEvents := []Event{
		{Kind: EventText, Text: "Running the tests."},
		{Kind: EventToolCall, Tool: "shell", ToolInput: "go test ./..."},
		{Kind: EventToolResult, Tool: "shell", Text: "ok"},
		{Kind: EventToolCall, Tool: "edit", ToolInput: "a.go"},
		{Kind: EventToolResult, Tool: "edit", Text: "denied"},
		{Kind: EventText, Text: "<promise>TASK_DONE</promise>"},
		{Kind: EventResult, Text: "Running the tests.<promise>TASK_DONE</promise>", Usage: &Usage{}},
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Failure: the stream ends early, the error is on stderr.
	head, _, _ := strings.Cut(stream, `{"type":"tool_call"`)
	got, _ = runDecoded(t, "cursor", []byte(head), 1, "Error: You've hit your usage limit. Resets at 14:30.\n")
	if got.ErrorKind != ErrorUsageLimit || !got.IsError || !got.ResetAt.Equal(time.Date(2026, 11, 21, 14, 30, 0, 0, time.UTC)) {
		t.Errorf("usage limit on stderr: error %v, kind %q, reset %v", got.IsError, got.ErrorKind, got.ResetAt)
	}
}

func TestKiroDecoder(t *testing.T) {
	t.Parallel()
	out := "\x1b[1;32m> \x1b[0mI will run the tests.\r\n\x1b]8;;https://x\x07link\x1b]8;;\x07\n● Running: go test\n<promise>TASK_DONE</promise>\n\n ▸ Credits: 0.42 • Time: 12s\n"
	got, events := runDecoded(t, "kiro", []byte(out), 0, "")
	final := "> I will run the tests.\nlink\n● Running: go test\n<promise>TASK_DONE</promise>\n\n ▸ Credits: 0.42 • Time: 12s"
	want := Result{FinalText: final, Messages: []string{final}, RawText: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	if len(events) != 6 || events[0].Text != "> I will run the tests." {
		t.Errorf("events = %+v", events)
	}

	// A failed run: the error is on stderr.
	got, _ = runDecoded(t, "kiro", nil, 1, "error: You are not logged in, please log in with kiro-cli login\n")
	if got.ErrorKind != ErrorFatal || got.ErrorText != "error: You are not logged in, please log in with kiro-cli login" {
		t.Errorf("not logged in: kind %q, text %q", got.ErrorKind, got.ErrorText)
	}
}

func decoderFuzzSeeds(f *testing.F, fixtures ...string) {
	f.Helper()
	for _, name := range fixtures {
		data := readFixture(f, name)
		f.Add(data)
		for line := range bytes.Lines(data) {
			f.Add(line)
		}
	}
}

// fuzzDecoder checks what every decoder promises on any input: no panic,
// bounded messages, an error kind only on an error, and the same for the
// Result once finished after a failed exit.
func fuzzDecoder(t *testing.T, agent string, stream []byte) {
	t.Helper()
	for _, exit := range []int{0, 1, 173} {
		got, _ := runDecodedIn(t, agent, Options{}, Request{}, stream, exit, "")
		if len(got.Messages) > maxMessages {
			t.Fatalf("%d messages kept", len(got.Messages))
		}
		if got.ErrorKind != ErrorNone && !got.IsError {
			t.Fatalf("error kind %q without IsError", got.ErrorKind)
		}
		if got.IsError && got.ErrorKind == ErrorNone {
			t.Fatalf("IsError without a kind")
		}
	}
}

func FuzzDecodeCodex(f *testing.F) {
	decoderFuzzSeeds(f, "codex-exec-json-sample.jsonl", "codex-exec-json-429-sample.jsonl")
	f.Fuzz(func(t *testing.T, stream []byte) { fuzzDecoder(t, "codex", stream) })
}

func FuzzDecodeGemini(f *testing.F) {
	decoderFuzzSeeds(f, "gemini-stream-sample.jsonl", "gemini-stream-429-sample.jsonl")
	f.Fuzz(func(t *testing.T, stream []byte) { fuzzDecoder(t, "gemini", stream) })
}

func FuzzDecodeOpenCode(f *testing.F) {
	decoderFuzzSeeds(f, "opencode-json-sample.jsonl", "opencode-json-429-sample.jsonl")
	f.Fuzz(func(t *testing.T, stream []byte) { fuzzDecoder(t, "opencode", stream) })
}

func FuzzDecodeDroid(f *testing.F) {
	decoderFuzzSeeds(f, "droid-stream-json-sample.jsonl", "droid-stream-json-429-sample.jsonl")
	f.Fuzz(func(t *testing.T, stream []byte) { fuzzDecoder(t, "droid", stream) })
}

func FuzzDecodeCopilot(f *testing.F) {
	decoderFuzzSeeds(f, "copilot-json-sample.jsonl", "copilot-json-429-sample.jsonl")
	f.Fuzz(func(t *testing.T, stream []byte) { fuzzDecoder(t, "copilot", stream) })
}

func FuzzDecodeCursor(f *testing.F) {
	decoderFuzzSeeds(f, "claude-stream-sample.jsonl", "qwen-stream-json-sample.jsonl")
	f.Add([]byte(`{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{"shellToolCall":{"args":{"command":"ls"}}}}` + "\n" +
		`{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"function":{"name":"x","arguments":"{}"},"result":{"success":{"stdout":"a"}}}}` + "\n" +
		`{"type":"result","subtype":"success","is_error":false,"result":"ab","usage":{"inputTokens":1}}`))
	f.Fuzz(func(t *testing.T, stream []byte) { fuzzDecoder(t, "cursor", stream) })
}

func FuzzDecodeKiro(f *testing.F) {
	f.Add([]byte("\x1b[1m> hi\x1b[0m\n<promise>TASK_DONE</promise>\n"))
	f.Add([]byte("\x1b]8;;x\x07y\x1b]8;;\x07\r\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		fuzzDecoder(t, "kiro", stream)
		got, _ := runDecodedIn(t, "kiro", Options{}, Request{}, stream, 0, "")
		if len(got.FinalText) > maxTextTail || !got.RawText {
			t.Fatalf("FinalText %d bytes, RawText %v", len(got.FinalText), got.RawText)
		}
	})
}

// TestRunFinisher runs a stand-in for Copilot through Run: the adapter
// names a usage file in the run's scratch directory, the agent writes it,
// FinishRun reads it, and the directory is gone afterwards.
func TestRunFinisher(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pathFile := filepath.Join(dir, "usage-path")
	fixture, err := filepath.Abs("testdata/copilot-json-sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// $1 is --usage-output-file, $2 the file, $3 -p, $4 the prompt.
	script := `printf '%s' "$2" > "$PATHFILE"
printf '{"modelMetrics":{"gpt-4.1":{"usage":{"inputTokens":10,"outputTokens":2,"cacheReadTokens":4,"cacheWriteTokens":0}}}}' > "$2"
cat "$FIXTURE"`
	a, err := New("copilot", Options{
		Command: "/bin/sh", Args: []string{"-c", script, "sh"},
		Env: map[string]string{"PATHFILE": pathFile, "FIXTURE": fixture},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), a, Request{Prompt: "do the task", Dir: dir, Env: testEnv(), Timeout: 30 * time.Second}, Sink{})
	if err != nil {
		t.Fatal(err)
	}
	if want := *usage(6, 2, 4, 0); res.Usage != want || res.FinalText != "All done. <promise>COMPLETE</promise>" || res.IsError {
		t.Errorf("Run = usage %+v, final %q, error %v; want %+v from the usage file", res.Usage, res.FinalText, res.IsError, want)
	}
	usageFile, err := os.ReadFile(pathFile)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(string(usageFile)) != copilotUsageFile {
		t.Errorf("usage file %q", usageFile)
	}
	if _, err := os.Stat(filepath.Dir(string(usageFile))); !os.IsNotExist(err) {
		t.Errorf("scratch directory %s left behind (%v)", filepath.Dir(string(usageFile)), err)
	}
}

// Copilot's session.shutdown names the models it used: the one with the
// most tokens is the run's, for prices.
func TestCopilotShutdownNamesTheModel(t *testing.T) {
	t.Parallel()
	stream := `{"type":"session.shutdown","data":{"modelMetrics":{"gpt-5.4-mini":{"usage":{"inputTokens":100,"outputTokens":10}},"claude-sonnet-4-5":{"usage":{"inputTokens":5000,"outputTokens":300,"cacheReadTokens":1000}}}}}
`
	got, _ := runDecoded(t, "copilot", []byte(stream), 0, "")
	if got.Model != "claude-sonnet-4-5" {
		t.Errorf("Model = %q, want claude-sonnet-4-5", got.Model)
	}
	if want := *usage(4100, 310, 1000, 0); got.Usage != want {
		t.Errorf("Usage = %+v, want %+v", got.Usage, want)
	}
}
