package fakemodel

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// anthropicAPI is the Messages API: POST /v1/messages, streamed (SSE) or
// not.
type anthropicAPI struct{}

func (anthropicAPI) name() string { return "anthropic" }

type anthropicReq struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Type        string         `json:"type"`
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	OutputFormat *jsonFormat `json:"output_format"`
	OutputConfig *struct {
		Format *jsonFormat `json:"format"`
	} `json:"output_config"`
}

type jsonFormat struct {
	Type   string         `json:"type"`
	Schema map[string]any `json:"schema"`
}

type anthropicPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (anthropicAPI) parse(_ *http.Request, body []byte) (*call, error) {
	var req anthropicReq
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("messages request: %w", err)
	}
	c := &call{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		// Server tools (web_search_20250305, ...) run at the API, not in
		// the client: only client tools can be called.
		if t.Type != "" && t.Type != "custom" {
			continue
		}
		c.tools = append(c.tools, tool{Name: t.Name, Kind: "function", Schema: t.InputSchema})
	}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		last := req.Messages[n-1].Content
		var s string
		if json.Unmarshal(last, &s) == nil {
			c.prompt = s
		} else {
			var parts []anthropicPart
			_ = json.Unmarshal(last, &parts)
			for _, p := range parts {
				switch p.Type {
				case "tool_result":
					c.afterTool = true
				case "text":
					c.prompt = p.Text
				}
			}
		}
	}
	switch {
	case req.OutputFormat != nil && req.OutputFormat.Schema != nil:
		c.jsonSchema = req.OutputFormat.Schema
	case req.OutputConfig != nil && req.OutputConfig.Format != nil && req.OutputConfig.Format.Schema != nil:
		c.jsonSchema = req.OutputConfig.Format.Schema
	}
	return c, nil
}

// anthropicUsage counts input without the cache reads, which Anthropic
// reports apart.
func anthropicUsage(u usage, output int) map[string]any {
	return map[string]any{"input_tokens": u.input - u.cacheRead, "output_tokens": output,
		"cache_read_input_tokens": u.cacheRead, "cache_creation_input_tokens": 0}
}

func anthropicStop(rep reply) string {
	if rep.call != nil {
		return "tool_use"
	}
	return "end_turn"
}

func (anthropicAPI) writeStream(w *sse, c *call, rep reply) {
	msg := map[string]any{"id": "msg_" + rep.id, "type": "message", "role": "assistant", "model": c.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(rep.usage, 1)}
	w.event("message_start", map[string]any{"type": "message_start", "message": msg})
	i := 0
	if rep.text != "" {
		w.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, chunk := range chunks(rep.text) {
			w.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": chunk}})
		}
		w.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	if tc := rep.call; tc != nil {
		w.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_" + tc.ID, "name": tc.Name, "input": map[string]any{}}})
		w.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": mustJSON(tc.Args)}})
		w.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	w.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStop(rep), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": rep.usage.output}})
	w.event("message_stop", map[string]any{"type": "message_stop"})
}

func (anthropicAPI) writeJSON(w http.ResponseWriter, c *call, rep reply) {
	content := []any{}
	if rep.text != "" {
		content = append(content, map[string]any{"type": "text", "text": rep.text})
	}
	if tc := rep.call; tc != nil {
		content = append(content, map[string]any{"type": "tool_use", "id": "toolu_" + tc.ID, "name": tc.Name, "input": tc.Args})
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": "msg_" + rep.id, "type": "message", "role": "assistant",
		"model": c.model, "content": content, "stop_reason": anthropicStop(rep), "stop_sequence": nil,
		"usage": anthropicUsage(rep.usage, rep.usage.output)})
}

// writeError answers {"type":"error","error":{...}}. A usage limit also
// carries the unified rate-limit headers a subscription's limit comes
// with, which Claude Code reads for the reset time.
func (anthropicAPI) writeError(w http.ResponseWriter, t Turn) {
	retryHeaders(w, t)
	if !t.Reset.IsZero() {
		h := w.Header()
		reset := strconv.FormatInt(t.Reset.Unix(), 10)
		h.Set("anthropic-ratelimit-unified-status", "rejected")
		h.Set("anthropic-ratelimit-unified-reset", reset)
		h.Set("anthropic-ratelimit-unified-5h-status", "rejected")
		h.Set("anthropic-ratelimit-unified-5h-reset", reset)
		h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
	}
	writeJSON(w, t.Status, map[string]any{"type": "error",
		"error": map[string]any{"type": t.ErrType, "message": t.Message}})
}

// retryHeaders sets Retry-After (whole seconds, rounded up) and its
// millisecond variant, and X-Should-Retry when the turn forbids retries.
func retryHeaders(w http.ResponseWriter, t Turn) {
	if t.NoRetry {
		w.Header().Set("X-Should-Retry", "false")
	}
	if t.RetryAfter <= 0 {
		return
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(t.RetryAfter.Seconds()))))
	w.Header().Set("Retry-After-Ms", strconv.FormatInt(t.RetryAfter.Milliseconds(), 10))
}

// chunks splits text into a few pieces, the way a model streams it.
func chunks(s string) []string {
	const size = 24
	var out []string
	for len(s) > size {
		cut := strings.LastIndexByte(s[:size], ' ')
		if cut <= 0 {
			cut = size
			for cut < len(s) && !isRuneStart(s[cut]) {
				cut++
			}
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
