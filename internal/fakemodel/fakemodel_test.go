package fakemodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const marker = "All done. <promise>TASK_DONE</promise>"

func start(t *testing.T, turns ...Turn) *Server {
	t.Helper()
	s, err := Start(Options{KeepBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	s.Script(turns...)
	return s
}

// post sends body (JSON-encoded unless a string) and returns the response
// with its body read.
func post(t *testing.T, url string, body any) (*http.Response, []byte) {
	t.Helper()
	var b []byte
	if s, ok := body.(string); ok {
		b = []byte(s)
	} else {
		b, _ = json.Marshal(body)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

type event struct {
	name string
	data string
}

// readSSE splits a text/event-stream body into events.
func readSSE(t *testing.T, body []byte) []event {
	t.Helper()
	var evs []event
	var cur event
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				evs = append(evs, cur)
			}
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return evs
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return m
}

// get walks a decoded JSON value: get(m, "message", "usage", "input_tokens").
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func positive(v any) bool {
	f, ok := v.(float64)
	return ok && f > 0
}

func anthropicTools(t *testing.T) []map[string]any {
	t.Helper()
	return []map[string]any{
		{"name": "Read", "input_schema": map[string]any{"type": "object"}},
		{"name": "Bash", "input_schema": schema(t, shellSchemas["claude"].schema)},
		{"type": "web_search_20250305", "name": "web_search"},
	}
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	s := start(t, Shell("touch done.txt"), Text(marker))
	req := map[string]any{"model": "claude-x", "stream": true, "tools": anthropicTools(t),
		"messages": []any{map[string]any{"role": "user", "content": "do the task"}}}

	resp, body := post(t, s.URL+"/v1/messages?beta=true", req)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	evs := readSSE(t, body)
	var names []string
	var input strings.Builder
	for _, e := range evs {
		names = append(names, e.name)
		d := decode(t, e.data)
		if d["type"] != e.name {
			t.Errorf("event %s has type %v", e.name, d["type"])
		}
		if get(d, "delta", "type") == "input_json_delta" {
			input.WriteString(get(d, "delta", "partial_json").(string))
		}
	}
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	start := decode(t, evs[0].data)
	if !positive(get(start, "message", "usage", "input_tokens")) {
		t.Errorf("message_start usage: %s", evs[0].data)
	}
	block := decode(t, evs[1].data)
	if get(block, "content_block", "type") != "tool_use" || get(block, "content_block", "name") != "Bash" {
		t.Errorf("content_block_start: %s", evs[1].data)
	}
	if diff := cmp.Diff(map[string]any{"command": "touch done.txt", "description": shellDescription}, decode(t, input.String())); diff != "" {
		t.Errorf("tool input (-want +got):\n%s", diff)
	}
	delta := decode(t, evs[4].data)
	if get(delta, "delta", "stop_reason") != "tool_use" || !positive(get(delta, "usage", "output_tokens")) {
		t.Errorf("message_delta: %s", evs[4].data)
	}

	// The tool result comes back: the final text.
	req["messages"] = append(req["messages"].([]any),
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": ""}}})
	_, body = post(t, s.URL+"/v1/messages", req)
	var text, stop string
	for _, e := range readSSE(t, body) {
		d := decode(t, e.data)
		if get(d, "delta", "type") == "text_delta" {
			text += get(d, "delta", "text").(string)
		}
		if r, ok := get(d, "delta", "stop_reason").(string); ok {
			stop = r
		}
	}
	if text != marker || stop != "end_turn" {
		t.Errorf("final text %q, stop %q", text, stop)
	}
	if u := get(decode(t, readSSE(t, body)[0].data), "message", "usage"); !positive(get(u, "cache_read_input_tokens")) || !positive(get(u, "input_tokens")) {
		t.Errorf("usage after a tool result: %v: want cache reads and fresh input", u)
	}

	log := s.Requests()
	if len(log) != 2 || log[0].API != "anthropic" || log[0].ToolResult || !log[1].ToolResult || log[1].Side {
		t.Errorf("request log:\n%s", s.LogText())
	}
	if diff := cmp.Diff([]string{"Read", "Bash"}, log[0].Tools); diff != "" {
		t.Errorf("logged tools (server tools dropped) (-want +got):\n%s", diff)
	}
	if !strings.Contains(log[0].Answer, `shell "touch done.txt" via Bash`) || log[0].Prompt != "do the task" {
		t.Errorf("log line: %s", log[0])
	}
	if s.Pending() != 0 {
		t.Errorf("%d turns left", s.Pending())
	}
	if log[0].InputTokens <= 0 || log[0].OutputTokens <= 0 || log[0].CacheReadTokens != 0 || log[1].CacheReadTokens <= 0 {
		t.Errorf("logged usage: %+v, %+v", log[0], log[1])
	}
}

func TestAnthropicJSON(t *testing.T) {
	t.Parallel()
	s := start(t, Text(marker))
	_, body := post(t, s.URL+"/v1/messages", map[string]any{"model": "m", "tools": anthropicTools(t),
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}}})
	m := decode(t, string(body))
	if get(m, "content", 0, "text") != marker || get(m, "stop_reason") != "end_turn" || !positive(get(m, "usage", "input_tokens")) {
		t.Errorf("response: %s", body)
	}
}

func TestCountTokens(t *testing.T) {
	t.Parallel()
	s := start(t, Text("unused"))
	_, body := post(t, s.URL+"/v1/messages/count_tokens", map[string]any{"messages": []any{}})
	if !positive(get(decode(t, string(body)), "input_tokens")) {
		t.Errorf("count_tokens: %s", body)
	}
	_, body = post(t, s.URL+"/v1beta/models/gemini-x:countTokens", map[string]any{"contents": []any{}})
	if !positive(get(decode(t, string(body)), "totalTokens")) {
		t.Errorf("countTokens: %s", body)
	}
	if s.Pending() != 1 {
		t.Error("token counts took a scripted turn")
	}
}

func responsesTools(t *testing.T) []map[string]any {
	t.Helper()
	return []map[string]any{
		{"type": "function", "name": "exec_command", "parameters": schema(t, shellSchemas["codex"].schema)},
		{"type": "web_search"},
	}
}

func TestResponsesStream(t *testing.T) {
	t.Parallel()
	s := start(t, Shell("touch done.txt"), Text(marker))
	req := map[string]any{"model": "gpt-x", "stream": true, "tools": responsesTools(t),
		"input": []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "do it"}}}}}

	_, body := post(t, s.URL+"/v1/responses", req)
	evs := readSSE(t, body)
	var call map[string]any
	var seq []float64
	for _, e := range evs {
		d := decode(t, e.data)
		seq = append(seq, d["sequence_number"].(float64))
		if e.name == "response.output_item.done" {
			call = d["item"].(map[string]any)
		}
	}
	if evs[0].name != "response.created" || evs[len(evs)-1].name != "response.completed" {
		t.Fatalf("first %s, last %s", evs[0].name, evs[len(evs)-1].name)
	}
	for i, n := range seq {
		if n != float64(i) {
			t.Fatalf("sequence numbers %v", seq)
		}
	}
	if call["type"] != "function_call" || call["name"] != "exec_command" {
		t.Fatalf("item: %v", call)
	}
	if diff := cmp.Diff(map[string]any{"cmd": "touch done.txt"}, decode(t, call["arguments"].(string))); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
	done := decode(t, evs[len(evs)-1].data)
	if !positive(get(done, "response", "usage", "input_tokens")) || !positive(get(done, "response", "usage", "output_tokens")) {
		t.Errorf("response.completed: %s", evs[len(evs)-1].data)
	}

	req["input"] = append(req["input"].([]any),
		map[string]any{"type": "function_call", "call_id": call["call_id"], "name": "exec_command", "arguments": "{}"},
		map[string]any{"type": "function_call_output", "call_id": call["call_id"], "output": "ok"})
	_, body = post(t, s.URL+"/v1/responses", req)
	var text string
	var msg map[string]any
	for _, e := range readSSE(t, body) {
		d := decode(t, e.data)
		switch e.name {
		case "response.output_text.delta":
			text += d["delta"].(string)
		case "response.output_item.done":
			msg = d["item"].(map[string]any)
		}
	}
	if text != marker || get(msg, "content", 0, "text") != marker {
		t.Errorf("text %q, message %v", text, msg)
	}
	if !s.Requests()[1].ToolResult {
		t.Error("second request not logged as after a tool")
	}
}

func TestResponsesJSON(t *testing.T) {
	t.Parallel()
	s := start(t, Text(marker))
	_, body := post(t, s.URL+"/v1/responses", map[string]any{"model": "m", "input": "hi", "tools": responsesTools(t)})
	m := decode(t, string(body))
	if get(m, "status") != "completed" || get(m, "output", 0, "content", 0, "text") != marker || !positive(get(m, "usage", "total_tokens")) {
		t.Errorf("response: %s", body)
	}
}

func chatTools(t *testing.T) []map[string]any {
	t.Helper()
	return []map[string]any{{"type": "function", "function": map[string]any{"name": "Execute", "parameters": schema(t, shellSchemas["droid"].schema)}}}
}

func TestChatStream(t *testing.T) {
	t.Parallel()
	for _, includeUsage := range []bool{false, true} {
		t.Run("include_usage="+strconv.FormatBool(includeUsage), func(t *testing.T) {
			t.Parallel()
			s := start(t, Shell("touch done.txt"), Text(marker))
			req := map[string]any{"model": "m", "stream": true, "tools": chatTools(t),
				"messages": []any{map[string]any{"role": "user", "content": "do it"}}}
			if includeUsage {
				req["stream_options"] = map[string]any{"include_usage": true}
			}
			read := func(body []byte) (text, name, args, finish string, usage map[string]any) {
				evs := readSSE(t, body)
				if last := evs[len(evs)-1]; last.data != "[DONE]" {
					t.Fatalf("last event %q, want [DONE]", last.data)
				}
				for _, e := range evs[:len(evs)-1] {
					d := decode(t, e.data)
					if u, ok := d["usage"].(map[string]any); ok {
						usage = u
					}
					if s, ok := get(d, "choices", 0, "delta", "content").(string); ok {
						text += s
					}
					if s, ok := get(d, "choices", 0, "delta", "tool_calls", 0, "function", "name").(string); ok {
						name = s
					}
					if s, ok := get(d, "choices", 0, "delta", "tool_calls", 0, "function", "arguments").(string); ok {
						args += s
					}
					if s, ok := get(d, "choices", 0, "finish_reason").(string); ok {
						finish = s
					}
				}
				return
			}
			_, body := post(t, s.URL+"/v1/chat/completions", req)
			_, name, args, finish, usage := read(body)
			if name != "Execute" || finish != "tool_calls" || !positive(usage["prompt_tokens"]) {
				t.Errorf("tool call %q %q, usage %v", name, finish, usage)
			}
			if diff := cmp.Diff(map[string]any{"command": "touch done.txt", "summary": shellDescription}, decode(t, args)); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
			req["messages"] = append(req["messages"].([]any), map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "ok"})
			_, body = post(t, s.URL+"/v1/chat/completions", req)
			text, _, _, finish, usage := read(body)
			if text != marker || finish != "stop" || !positive(usage["completion_tokens"]) || !positive(get(usage, "prompt_tokens_details", "cached_tokens")) {
				t.Errorf("text %q, finish %q, usage %v", text, finish, usage)
			}
		})
	}
}

func TestChatJSON(t *testing.T) {
	t.Parallel()
	s := start(t, Shell("ls"))
	_, body := post(t, s.URL+"/v1/chat/completions", map[string]any{"model": "m", "tools": chatTools(t),
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "x"}}}}})
	m := decode(t, string(body))
	if get(m, "choices", 0, "finish_reason") != "tool_calls" || get(m, "choices", 0, "message", "tool_calls", 0, "function", "name") != "Execute" ||
		!positive(get(m, "usage", "total_tokens")) {
		t.Errorf("response: %s", body)
	}
}

func geminiRequest(t *testing.T, afterTool bool) map[string]any {
	t.Helper()
	contents := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "do it"}}}}
	if afterTool {
		contents = append(contents,
			map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{}}}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "run_shell_command", "response": map[string]any{}}}}})
	}
	return map[string]any{"contents": contents, "tools": []any{map[string]any{"functionDeclarations": []any{
		map[string]any{"name": "read_file", "parametersJsonSchema": map[string]any{"type": "object"}},
		map[string]any{"name": "run_shell_command", "parametersJsonSchema": schema(t, shellSchemas["gemini"].schema)}}}}}
}

func TestGeminiStream(t *testing.T) {
	t.Parallel()
	s := start(t, Shell("touch done.txt"), Text(marker))
	url := s.URL + "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
	_, body := post(t, url, geminiRequest(t, false))
	evs := readSSE(t, body)
	last := decode(t, evs[len(evs)-1].data)
	fc := get(last, "candidates", 0, "content", "parts", 0, "functionCall")
	if get(fc, "name") != "run_shell_command" || get(fc, "args", "command") != "touch done.txt" {
		t.Errorf("function call: %s", evs[len(evs)-1].data)
	}
	if get(last, "candidates", 0, "finishReason") != "STOP" || !positive(get(last, "usageMetadata", "promptTokenCount")) {
		t.Errorf("last chunk: %s", evs[len(evs)-1].data)
	}

	_, body = post(t, url, geminiRequest(t, true))
	var text string
	for _, e := range readSSE(t, body) {
		text += get(decode(t, e.data), "candidates", 0, "content", "parts", 0, "text").(string)
	}
	if text != marker {
		t.Errorf("text %q", text)
	}
	log := s.Requests()
	if log[0].Model != "gemini-x" || !log[0].Stream || !log[1].ToolResult {
		t.Errorf("log:\n%s", s.LogText())
	}
}

func TestGeminiJSON(t *testing.T) {
	t.Parallel()
	s := start(t, Text(marker).Times(2))
	_, body := post(t, s.URL+"/v1beta/models/g:generateContent", geminiRequest(t, false))
	m := decode(t, string(body))
	if get(m, "candidates", 0, "content", "parts", 0, "text") != marker || !positive(get(m, "usageMetadata", "totalTokenCount")) {
		t.Errorf("generateContent: %s", body)
	}
	// A stream without alt=sse is one JSON array.
	_, body = post(t, s.URL+"/v1beta/models/g:streamGenerateContent", geminiRequest(t, false))
	var arr []any
	if err := json.Unmarshal(body, &arr); err != nil || get(arr, 0, "candidates", 0, "content", "parts", 0, "text") != marker {
		t.Errorf("streamGenerateContent without alt=sse: %s (%v)", body, err)
	}
}

func TestSideCallsKeepTheScript(t *testing.T) {
	t.Parallel()
	s := start(t, Shell("touch a"))
	// A title request: no tools.
	_, body := post(t, s.URL+"/v1/chat/completions", map[string]any{"model": "m",
		"messages": []any{map[string]any{"role": "user", "content": "title this"}}})
	if got := get(decode(t, string(body)), "choices", 0, "message", "content"); got != "OK" {
		t.Errorf("side answer %v", got)
	}
	// Gemini CLI's next-speaker check: JSON by schema, even with tools.
	req := geminiRequest(t, false)
	req["generationConfig"] = map[string]any{"responseMimeType": "application/json", "responseJsonSchema": map[string]any{
		"type": "OBJECT", "properties": map[string]any{"next_speaker": map[string]any{"type": "STRING", "enum": []any{"model", "user"}}}}}
	_, body = post(t, s.URL+"/v1beta/models/g:generateContent", req)
	text, _ := get(decode(t, string(body)), "candidates", 0, "content", "parts", 0, "text").(string)
	if text != `{"next_speaker":"user"}` {
		t.Errorf("next speaker answer %q", text)
	}
	if s.Pending() != 1 {
		t.Errorf("side calls took scripted turns: %d left", s.Pending())
	}
	for _, r := range s.Requests() {
		if !r.Side {
			t.Errorf("not logged as side: %s", r)
		}
	}
}

func TestTimesAlwaysAndUnscripted(t *testing.T) {
	t.Parallel()
	s := start(t, Text("a").Times(2), Text("b"))
	req := map[string]any{"model": "m", "tools": chatTools(t), "messages": []any{map[string]any{"role": "user", "content": "x"}}}
	var got []string
	for range 4 {
		_, body := post(t, s.URL+"/v1/chat/completions", req)
		got = append(got, get(decode(t, string(body)), "choices", 0, "message", "content").(string))
	}
	want := []string{"a", "a", "b", "fake model: no turn scripted for this request"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}

	// Until: every request until the time, then the next turn.
	var clock atomic.Int64 // seconds past epoch, moved by the test
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return epoch.Add(time.Duration(clock.Load()) * time.Second) }
	s, err := Start(Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	s.Script(Text("held").Until(epoch.Add(time.Minute)), Text("next"))
	got = nil
	for range 2 {
		_, body := post(t, s.URL+"/v1/chat/completions", req)
		got = append(got, get(decode(t, string(body)), "choices", 0, "message", "content").(string))
	}
	clock.Store(60) // the held turn's time is over
	_, body := post(t, s.URL+"/v1/chat/completions", req)
	got = append(got, get(decode(t, string(body)), "choices", 0, "message", "content").(string))
	if diff := cmp.Diff([]string{"held", "held", "next"}, got); diff != "" {
		t.Errorf("Until answers (-want +got):\n%s", diff)
	}
	if UsageLimit(time.Now().Add(time.Hour)).until.IsZero() {
		t.Error("UsageLimit does not hold until its reset")
	}

	s = start(t, ServerError().Always())
	for range 3 {
		if resp, _ := post(t, s.URL+"/v1/chat/completions", req); resp.StatusCode != 500 {
			t.Errorf("status %d, want 500 every time", resp.StatusCode)
		}
	}
	if s.Pending() != 1 {
		t.Error("Always turn was used up")
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	reset := time.Date(2030, 1, 2, 19, 0, 0, 0, time.UTC)
	tests := []struct {
		name, path string
		api        string
		turn       Turn
		status     int
		headers    map[string]string
		body       map[string]any // paths into the body, "/"-separated
	}{
		{"anthropic 429", "/v1/messages", "anthropic", RateLimit(1500 * time.Millisecond), 429,
			map[string]string{"Retry-After": "2", "Retry-After-Ms": "1500"},
			map[string]any{"type": "error", "error/type": "rate_limit_error"}},
		{"anthropic usage limit", "/v1/messages", "anthropic", UsageLimit(reset), 429,
			map[string]string{"Anthropic-Ratelimit-Unified-Status": "rejected", "Anthropic-Ratelimit-Unified-Reset": strconv.FormatInt(reset.Unix(), 10)},
			map[string]any{"error/message": "You've hit your limit · resets 7pm (UTC)"}},
		{"anthropic 529", "/v1/messages", "anthropic", Overloaded(), 529, nil,
			map[string]any{"error/type": "overloaded_error"}},
		{"no retry", "/v1/messages", "anthropic", ServerError().WithoutRetry(), 500,
			map[string]string{"X-Should-Retry": "false"}, map[string]any{"error/type": "api_error"}},
		{"responses usage limit", "/v1/responses", "responses", UsageLimit(reset), 429, nil,
			map[string]any{"error/type": "usage_limit_reached", "error/resets_at": float64(reset.Unix())}},
		{"chat 429", "/v1/chat/completions", "chat", RateLimit(time.Second), 429,
			map[string]string{"Retry-After": "1"}, map[string]any{"error/code": "rate_limit_error"}},
		{"chat 500", "/v1/chat/completions", "chat", ServerError(), 500, nil, map[string]any{"error/type": "api_error"}},
		{"gemini 429", "/v1beta/models/g:streamGenerateContent?alt=sse", "gemini", RateLimit(3 * time.Second), 429, nil,
			map[string]any{"error/status": "RESOURCE_EXHAUSTED", "error/details/0/retryDelay": "3s"}},
		{"gemini daily quota", "/v1beta/models/g:generateContent", "gemini", UsageLimit(reset), 429, nil,
			map[string]any{"error/details/0/violations/0/quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}},
		{"gemini 503", "/v1beta/models/g:generateContent", "gemini", Status(503, "unavailable"), 503, nil,
			map[string]any{"error/status": "UNAVAILABLE", "error/code": float64(503)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, tt.turn)
			var req any
			switch tt.api {
			case "anthropic":
				req = map[string]any{"model": "m", "stream": true, "tools": anthropicTools(t), "messages": []any{}}
			case "responses":
				req = map[string]any{"model": "m", "stream": true, "tools": responsesTools(t), "input": "x"}
			case "chat":
				req = map[string]any{"model": "m", "stream": true, "tools": chatTools(t), "messages": []any{}}
			case "gemini":
				req = geminiRequest(t, false)
			}
			resp, body := post(t, s.URL+tt.path, req)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			for k, v := range tt.headers {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			var m any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			for path, want := range tt.body {
				var p []any
				for k := range strings.SplitSeq(path, "/") {
					if n, err := strconv.Atoi(k); err == nil {
						p = append(p, n)
					} else {
						p = append(p, k)
					}
				}
				if got := get(m, p...); got != want {
					t.Errorf("%s = %v, want %v (body %s)", path, got, want, body)
				}
			}
			if r := s.Requests()[0]; r.Status != tt.status || r.API != tt.api {
				t.Errorf("logged %s", r)
			}
		})
	}
}

func TestHang(t *testing.T) {
	t.Parallel()
	s := start(t, Hang(), Hang())
	req := map[string]any{"model": "m", "tools": chatTools(t), "messages": []any{}}
	b, _ := json.Marshal(req)

	// The client gives up.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/chat/completions", bytes.NewReader(b))
	if resp, err := http.DefaultClient.Do(r); err == nil {
		resp.Body.Close()
		t.Fatal("hung request answered")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	waitFor(t, func() bool { return len(s.Requests()) == 1 })
	if got := s.Requests()[0].Answer; got != "hang (client gave up)" {
		t.Errorf("logged %q", got)
	}

	// The server closes under a hung request: it returns.
	done := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", bytes.NewReader(b))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	waitFor(t, func() bool { return s.Pending() == 0 })
	_ = s.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close left a hung request hanging")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestModelsAndUnknownPaths(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, tt := range []struct{ path, key string }{
		{"/v1/models", "data"},
		{"/v1beta/models", "models"},
		{"/v1/models?client_version=0.1", "models"},
	} {
		resp, err := http.Get(s.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if _, ok := decode(t, string(body))[tt.key].([]any); !ok || resp.StatusCode != 200 {
			t.Errorf("GET %s: %d %s", tt.path, resp.StatusCode, body)
		}
	}
	resp, _ := post(t, s.URL+"/v1/embeddings", map[string]any{})
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	resp, _ = post(t, s.URL+"/v1/messages", "{not json")
	if resp.StatusCode != 400 {
		t.Errorf("bad JSON: %d", resp.StatusCode)
	}
	var apis []string
	for _, r := range s.Requests() {
		apis = append(apis, r.API)
	}
	if diff := cmp.Diff([]string{"models", "models", "models", "unknown", "anthropic"}, apis); diff != "" {
		t.Errorf("logged APIs (-want +got):\n%s", diff)
	}
}

func TestUsageLimitMessage(t *testing.T) {
	t.Parallel()
	for reset, want := range map[time.Time]string{
		time.Date(2030, 1, 1, 19, 0, 0, 0, time.UTC):  "You've hit your limit · resets 7pm (UTC)",
		time.Date(2030, 1, 1, 7, 30, 0, 0, time.UTC):  "You've hit your limit · resets 7:30am (UTC)",
		time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC):  "You've hit your limit · resets 12pm (UTC)",
		time.Date(2030, 1, 1, 0, 5, 0, 0, time.Local): "You've hit your limit · resets " + clock(time.Date(2030, 1, 1, 0, 5, 0, 0, time.Local).UTC()) + " (UTC)",
	} {
		if got := UsageLimit(reset).Message; got != want {
			t.Errorf("UsageLimit(%v).Message = %q, want %q", reset, got, want)
		}
	}
}
