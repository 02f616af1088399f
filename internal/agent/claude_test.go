package agent

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// decode runs a decoder over a stream the way Run does.
func decode(t testing.TB, d Decoder, stream []byte) (Result, []Event) {
	t.Helper()
	var events []Event
	lr := newLineReader(bytes.NewReader(stream), defaultLineLimits())
	for {
		line, err := lr.Next()
		if err != nil {
			break
		}
		d.Line(line, func(e Event) { events = append(events, e) })
	}
	return d.Finish(), events
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func usage(in, out, cacheRead, cacheWrite int64) *Usage {
	return &Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cacheRead, CacheWriteTokens: cacheWrite}
}

var approx = cmpopts.EquateApprox(0, 1e-12)

func TestClaudeDecoderFixtures(t *testing.T) {
	t.Parallel()
	const done = "All done. <promise>COMPLETE</promise>"
	const limited = "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit (fake)"
	// The two-turn run every sample but the 429 one records, with its
	// per-message input tokens.
	twoTurns := func(in1, in2 int64, final *Usage) []Event {
		return []Event{
			{Kind: EventText, Text: "I'll create the file now."},
			{Kind: EventUsage, Usage: usage(in1, 1, 0, 0)},
			{Kind: EventToolCall, Tool: "Bash", ToolInput: "echo hi > file.txt"},
			{Kind: EventToolResult, Tool: "Bash", Text: "(Bash completed with no output)"},
			{Kind: EventText, Text: done},
			{Kind: EventUsage, Usage: usage(in1+in2, 2, 0, 0)},
			{Kind: EventResult, Text: done, Usage: final},
		}
	}
	tests := []struct {
		fixture    string
		want       Result
		wantEvents []Event
	}{
		{
			fixture: "claude-stream-sample.jsonl",
			want: Result{
				FinalText: done, Messages: []string{"I'll create the file now.", done},
				SessionID: "e95169ba-fea8-4f4f-9902-5ed5d5091502",
				Turns:     2, Usage: *usage(209, 84, 0, 0), CostUSD: 0.003145, HasCost: true,
				ContextWindow: 1000000, ContextUsedPercent: 105.0 / 1000000 * 100,
			},
			wantEvents: twoTurns(104, 105, usage(209, 84, 0, 0)),
		},
		{
			fixture: "claude-stream-sample-2.1.329.jsonl",
			want: Result{
				FinalText: done, Messages: []string{"I'll create the file now.", done},
				SessionID: "dd422bd5-fe11-486c-9ca0-9342a464238c",
				Turns:     2, Usage: *usage(217, 84, 0, 0), CostUSD: 0.002548, HasCost: true,
				ContextWindow: 1000000, ContextUsedPercent: 109.0 / 1000000 * 100,
			},
			wantEvents: twoTurns(108, 109, usage(217, 84, 0, 0)),
		},
		{
			// With --include-partial-messages: the deltas must not count twice.
			fixture: "claude-stream-partial-sample.jsonl",
			want: Result{
				FinalText: done, Messages: []string{"I'll create the file now.", done},
				SessionID: "53fc2c68-08df-4610-b34b-dfac497fc83c",
				Turns:     2, Usage: *usage(309, 84, 0, 0), CostUSD: 0.003645, HasCost: true,
				ContextWindow: 1000000, ContextUsedPercent: 155.0 / 1000000 * 100,
			},
			wantEvents: twoTurns(154, 155, usage(309, 84, 0, 0)),
		},
		{
			// A 429: the subtype says success, is_error says otherwise.
			fixture: "claude-stream-429-sample.jsonl",
			want: Result{
				FinalText: limited, Messages: []string{limited},
				SessionID: "5d7cc359-b47b-4164-aec8-7037c2d4983b",
				IsError:   true, ErrorKind: ErrorRateLimit, ErrorText: limited, HTTPStatus: 429,
				Turns: 1, HasCost: true,
			},
			wantEvents: []Event{
				{Kind: EventError, Text: "API retry 1/2: HTTP 429 (rate_limit)"},
				{Kind: EventError, Text: "API retry 2/2: HTTP 429 (rate_limit)"},
				{Kind: EventText, Text: limited},
				{Kind: EventError, Text: limited},
				{Kind: EventResult, Text: limited, Usage: usage(0, 0, 0, 0)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			got, events := decode(t, newClaudeDecoder(), readFixture(t, tt.fixture))
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvents, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClaudeDecoderToolResultsAreNotWords pins that what tools print (a
// `cat prompt.md` holding the marker) never reaches the text completion
// scans.
func TestClaudeDecoderToolResultsAreNotWords(t *testing.T) {
	t.Parallel()
	stream := `{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/p/prompt.md"}}]}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"end with <promise>COMPLETE</promise>"}]}]}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"<promise>TASK_DONE</promise>"}]}}
{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Still working."}]}}
`
	got, events := decode(t, newClaudeDecoder(), []byte(stream))
	want := Result{FinalText: "Still working.", Messages: []string{"Still working."}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	wantEvents := []Event{
		{Kind: EventToolCall, Tool: "Read", ToolInput: "/p/prompt.md"},
		{Kind: EventToolResult, Tool: "Read", Text: "end with <promise>COMPLETE</promise>"},
		{Kind: EventToolResult, Text: "<promise>TASK_DONE</promise>"},
		{Kind: EventText, Text: "Still working."},
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestClaudeDecoderUserLineTail pins how much of a user line is read: up
// to its message when "type" comes first and the session is known, so the
// tool_use_result after it (the same output again) is neither decoded nor
// checked; any other line is checked whole.
func TestClaudeDecoderUserLineTail(t *testing.T) {
	t.Parallel()
	stream := `{"type":"system","subtype":"init","session_id":"s1"}
{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cat big"}}]},"session_id":"s1"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"out"}]},"session_id":"s1","tool_use_result":{"stdout":"out
{"message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"type last"}]},"type":"user","tool_use_result":{"stdout":"type last
`
	got, events := decode(t, newClaudeDecoder(), []byte(stream))
	if diff := cmp.Diff(Result{SessionID: "s1"}, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	wantEvents := []Event{
		{Kind: EventToolCall, Tool: "Bash", ToolInput: "cat big"},
		{Kind: EventToolResult, Tool: "Bash", Text: "out"},
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestClaudeDecoderLines(t *testing.T) {
	t.Parallel()
	reset := time.Unix(1778565600, 0).UTC()
	tests := []struct {
		name       string
		stream     string
		want       Result
		wantEvents []Event
	}{
		{
			name: "killed before the result line",
			stream: `{"type":"system","subtype":"init","session_id":"s1"}
{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"first"}],"usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":5,"cache_creation_input_tokens":1}}}
{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"second"},{"type":"text","text":"part"}],"usage":{"input_tokens":20,"output_tokens":3}}}
`,
			want: Result{FinalText: "second\npart", Messages: []string{"first", "second\npart"}, SessionID: "s1", Usage: *usage(30, 5, 5, 1)},
			wantEvents: []Event{
				{Kind: EventText, Text: "first"},
				{Kind: EventUsage, Usage: usage(10, 2, 5, 1)},
				{Kind: EventText, Text: "second"},
				{Kind: EventText, Text: "part"},
				{Kind: EventUsage, Usage: usage(30, 5, 5, 1)},
			},
		},
		{
			name: "usage limit from rate_limit_event",
			stream: `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1700000000,"rateLimitType":"seven_day"}}
{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1778565600,"rateLimitType":"five_hour","overageStatus":"rejected"}}
{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your limit · resets 2pm (Asia/Shanghai)","session_id":"s2","num_turns":1}
`,
			want: Result{
				FinalText: "You've hit your limit · resets 2pm (Asia/Shanghai)", SessionID: "s2",
				IsError: true, ErrorKind: ErrorUsageLimit, ErrorText: "You've hit your limit · resets 2pm (Asia/Shanghai)",
				HTTPStatus: 429, ResetAt: reset, Turns: 1,
				Quota: []QuotaWindow{
					{Window: "seven_day", Status: "allowed_warning", ResetsAt: time.Unix(1700000000, 0).UTC()},
					{Window: "five_hour", Status: "rejected", ResetsAt: reset},
				},
			},
			wantEvents: []Event{
				{Kind: EventError, Text: "rate limit rejected (five_hour), resets 2026-05-12T06:00:00Z"},
				{Kind: EventError, Text: "You've hit your limit · resets 2pm (Asia/Shanghai)"},
				{Kind: EventResult, Text: "You've hit your limit · resets 2pm (Asia/Shanghai)", Usage: &Usage{}},
			},
		},
		{
			name: "quota windows: the latest per window, utilization in percent",
			stream: `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1778565600,"rateLimitType":"five_hour","utilization":0.12}}
{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1779000000,"rateLimitType":"seven_day","utilization":0.5}}
{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1779000000,"rateLimitType":"seven_day","utilization":0.85}}
{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s3","num_turns":1,"total_cost_usd":0.1}
`,
			want: Result{
				FinalText: "ok", SessionID: "s3", Turns: 1, CostUSD: 0.1, HasCost: true,
				Quota: []QuotaWindow{
					{Window: "five_hour", Status: "allowed", Utilization: 12, HasUtilization: true, ResetsAt: reset},
					{Window: "seven_day", Status: "allowed_warning", Utilization: 85, HasUtilization: true, ResetsAt: time.Unix(1779000000, 0).UTC()},
				},
			},
			wantEvents: []Event{
				{Kind: EventResult, Text: "ok", Usage: &Usage{}},
			},
		},
		{
			name: "error subtype without result text",
			stream: `{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"trying"}]}}
{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":50,"total_cost_usd":1.5,"usage":{"input_tokens":7,"output_tokens":8}}
`,
			want: Result{
				FinalText: "trying", Messages: []string{"trying"}, IsError: true, ErrorKind: ErrorOther,
				ErrorText: "error_max_turns", Turns: 50, Usage: *usage(7, 8, 0, 0), CostUSD: 1.5, HasCost: true,
			},
			wantEvents: []Event{
				{Kind: EventText, Text: "trying"},
				{Kind: EventError, Text: "error_max_turns"},
				{Kind: EventResult, Text: "trying", Usage: usage(7, 8, 0, 0)},
			},
		},
		{
			name: "subagent messages are not the agent's",
			stream: `{"type":"assistant","parent_tool_use_id":"t1","message":{"id":"m9","content":[{"type":"text","text":"<promise>COMPLETE</promise>"},{"type":"tool_use","id":"t2","name":"Grep","input":{"pattern":"TODO\nmore"}}],"usage":{"input_tokens":99}}}
{"type":"assistant","parent_tool_use_id":null,"message":{"id":"m1","content":[{"type":"text","text":"mine"}]}}
`,
			want: Result{FinalText: "mine", Messages: []string{"mine"}},
			wantEvents: []Event{
				{Kind: EventToolCall, Tool: "Grep", ToolInput: "TODO …"},
				{Kind: EventText, Text: "mine"},
			},
		},
		{
			name: "noise, malformed and unknown lines",
			stream: `npm WARN something
{"type":"assistant","message":
{"type":"brand_new_event","x":1}
{"type":"assistant","message":{"content":"not a list"}}
{"type":"result","is_error":"yes","result":"ok","num_turns":1}
`,
			want:       Result{FinalText: "ok", Turns: 1},
			wantEvents: []Event{{Kind: EventResult, Text: "ok", Usage: &Usage{}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, events := decode(t, newClaudeDecoder(), []byte(tt.stream))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvents, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClassifyClaude(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status   int
		text     string
		rejected bool
		want     ErrorKind
	}{
		{429, "Number of request tokens has exceeded your per-minute rate limit", false, ErrorRateLimit},
		{429, "You've hit your limit · resets 7pm (Europe/Berlin)", false, ErrorUsageLimit},
		{429, "rate limited", true, ErrorUsageLimit},
		{0, "Claude AI usage limit reached|1712345678", false, ErrorUsageLimit},
		{529, "Overloaded", false, ErrorTransient},
		{500, "Internal server error", false, ErrorTransient},
		{503, "", true, ErrorTransient},
		{401, "Invalid API key", false, ErrorFatal},
		{403, "forbidden", false, ErrorFatal},
		{400, "prompt is too long", false, ErrorOther},
		{0, "error_during_execution", false, ErrorOther},
	}
	for _, tt := range tests {
		if got := classifyClaude(tt.status, tt.text, tt.rejected); got != tt.want {
			t.Errorf("classifyClaude(%d, %q, %v) = %q, want %q", tt.status, tt.text, tt.rejected, got, tt.want)
		}
	}
}

func TestClaudeStatusAndResetFromText(t *testing.T) {
	t.Parallel()
	stream := `{"type":"result","is_error":true,"api_error_status":null,"result":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"}
`
	got, _ := decode(t, newClaudeDecoder(), []byte(stream))
	if got.HTTPStatus != 529 || got.ErrorKind != ErrorTransient {
		t.Errorf("got status %d, kind %q; want 529, transient", got.HTTPStatus, got.ErrorKind)
	}
	stream = `{"type":"result","is_error":true,"result":"Claude AI usage limit reached|1712345678"}
`
	got, _ = decode(t, newClaudeDecoder(), []byte(stream))
	if want := time.Unix(1712345678, 0).UTC(); !got.ResetAt.Equal(want) || got.ErrorKind != ErrorUsageLimit {
		t.Errorf("got reset %v, kind %q; want %v, usage_limit", got.ResetAt, got.ErrorKind, want)
	}
}

func TestClaudeDecoderBoundsMessages(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 30 {
		b.WriteString(`{"type":"assistant","message":{"content":[{"type":"text","text":"msg ` + string(rune('a'+i%26)) + `"}]}}` + "\n")
	}
	b.WriteString(`{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("x", 100<<10) + `END"}]}}` + "\n")
	got, _ := decode(t, newClaudeDecoder(), []byte(b.String()))
	if len(got.Messages) != maxMessages {
		t.Fatalf("kept %d messages, want %d", len(got.Messages), maxMessages)
	}
	last := got.Messages[len(got.Messages)-1]
	if len(last) > maxMessageBytes || !strings.HasSuffix(last, "END") {
		t.Errorf("last message is %d bytes, ends %q; want at most %d, ending END", len(last), last[len(last)-5:], maxMessageBytes)
	}
	if got.Messages[0] != "msg l" { // 30 + 1 messages, the first 11 dropped
		t.Errorf("oldest kept message = %q, want %q", got.Messages[0], "msg l")
	}
}

func TestClaudeInvocation(t *testing.T) {
	t.Parallel()
	base := []string{"claude", "-p", "--output-format", "stream-json", "--verbose"}
	tests := []struct {
		name  string
		opts  Options
		model string
		want  Invocation
	}{
		{
			name: "defaults",
			want: Invocation{Argv: append(base, "--dangerously-skip-permissions"), Prompt: PromptStdin, Stdin: "do it"},
		},
		{
			name:  "model",
			model: "opus",
			want:  Invocation{Argv: append(base, "--model", "opus", "--dangerously-skip-permissions"), Prompt: PromptStdin, Stdin: "do it"},
		},
		{
			name:  "root",
			opts:  Options{Root: true},
			model: "sonnet",
			want: Invocation{
				Argv:   append(base, "--model", "sonnet", "--dangerously-skip-permissions"),
				EnvSet: []string{"IS_SANDBOX=1"}, Prompt: PromptStdin, Stdin: "do it",
			},
		},
		{
			name: "command, extra args and env",
			opts: Options{Command: "/opt/claude", ExtraArgs: []string{"--max-turns", "9"}, Env: map[string]string{"B": "2", "A": "1"}, Root: true},
			want: Invocation{
				Argv:   []string{"/opt/claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--max-turns", "9"},
				EnvSet: []string{"IS_SANDBOX=1", "A=1", "B=2"}, Prompt: PromptStdin, Stdin: "do it",
			},
		},
		{
			name:  "args replace the flags",
			opts:  Options{Args: []string{"-p", "--output-format", "stream-json"}},
			model: "haiku",
			want:  Invocation{Argv: []string{"claude", "-p", "--output-format", "stream-json", "--model", "haiku"}, Prompt: PromptStdin, Stdin: "do it"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := New("claude", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Invocation(Request{Prompt: "do it", Model: tt.model})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Invocation (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzDecodeClaude(f *testing.F) {
	for _, name := range []string{
		"claude-stream-sample.jsonl", "claude-stream-sample-2.1.329.jsonl",
		"claude-stream-partial-sample.jsonl", "claude-stream-429-sample.jsonl",
		"qwen-stream-json-sample.jsonl", // Qwen Code and Amp print Claude's shape
	} {
		data := readFixture(f, name)
		f.Add(data)
		for line := range bytes.Lines(data) {
			f.Add(line)
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		got, _ := decode(t, newClaudeDecoder(), stream)
		if len(got.Messages) > maxMessages {
			t.Fatalf("%d messages kept", len(got.Messages))
		}
		if got.ErrorKind != ErrorNone && !got.IsError {
			t.Fatalf("error kind %q without IsError", got.ErrorKind)
		}
	})
}
