package fakemodel

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"time"
)

// chatAPI is OpenAI Chat Completions: POST /v1/chat/completions, streamed
// (SSE, ending in [DONE]) or not.
type chatAPI struct{}

func (chatAPI) name() string { return "chat" }

type chatReq struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

func (chatAPI) parse(_ *http.Request, body []byte) (*call, error) {
	var req chatReq
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("chat completions request: %w", err)
	}
	c := &call{model: req.Model, stream: req.Stream}
	c.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	for _, t := range req.Tools {
		if t.Function.Name != "" {
			c.tools = append(c.tools, tool{Name: t.Function.Name, Kind: "function", Schema: t.Function.Parameters})
		}
	}
	if n := len(req.Messages); n > 0 {
		c.afterTool = req.Messages[n-1].Role == "tool"
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			c.prompt = contentText(req.Messages[i].Content)
			break
		}
	}
	if rf := req.ResponseFormat; rf != nil {
		switch {
		case rf.JSONSchema != nil && rf.JSONSchema.Schema != nil:
			c.jsonSchema = rf.JSONSchema.Schema
		case rf.Type == "json_object" || rf.Type == "json_schema":
			c.jsonSchema = map[string]any{}
		}
	}
	return c, nil
}

// contentText is the text of an OpenAI message content: a string, or the
// last text part.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i].Text != "" {
			return parts[i].Text
		}
	}
	return ""
}

func chatUsage(u usage) map[string]any {
	return map[string]any{"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.cacheRead},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0}}
}

func chatFinish(rep reply) string {
	if rep.call != nil {
		return "tool_calls"
	}
	return "stop"
}

func (chatAPI) writeStream(w *sse, c *call, rep reply) {
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-" + rep.id, "object": "chat.completion.chunk", "created": created,
			"model": c.model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	w.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, s := range chunks(rep.text) {
		w.event("", chunk(map[string]any{"content": s}, nil))
	}
	if tc := rep.call; tc != nil {
		w.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_" + tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil))
		w.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": mustJSON(tc.Args)}}}}, nil))
	}
	last := chunk(map[string]any{}, chatFinish(rep))
	if !c.includeUsage {
		// Clients that did not ask for the usage chunk still read usage
		// from the last one.
		last["usage"] = chatUsage(rep.usage)
	}
	w.event("", last)
	if c.includeUsage {
		w.event("", map[string]any{"id": "chatcmpl-" + rep.id, "object": "chat.completion.chunk", "created": created,
			"model": c.model, "choices": []any{}, "usage": chatUsage(rep.usage)})
	}
	w.event("", "[DONE]")
}

func (chatAPI) writeJSON(w http.ResponseWriter, c *call, rep reply) {
	msg := map[string]any{"role": "assistant", "content": nil}
	if rep.text != "" {
		msg["content"] = rep.text
	}
	if tc := rep.call; tc != nil {
		msg["tool_calls"] = []any{map[string]any{"id": "call_" + tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": mustJSON(tc.Args)}}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": "chatcmpl-" + rep.id, "object": "chat.completion",
		"created": time.Now().Unix(), "model": c.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": chatFinish(rep)}},
		"usage":   chatUsage(rep.usage)})
}

func (chatAPI) writeError(w http.ResponseWriter, t Turn) { openAIError(w, t) }

// openAIError answers {"error":{...}}; a usage limit says
// usage_limit_reached with its reset time, the way Codex reads it.
func openAIError(w http.ResponseWriter, t Turn) {
	retryHeaders(w, t)
	e := map[string]any{"message": t.Message, "type": t.ErrType, "code": t.ErrType, "param": nil}
	if !t.Reset.IsZero() {
		e["type"], e["code"] = "usage_limit_reached", "usage_limit_reached"
		e["plan_type"] = "plus"
		e["resets_at"] = t.Reset.Unix()
		e["resets_in_seconds"] = max(int(time.Until(t.Reset).Seconds()), 0)
	}
	writeJSON(w, t.Status, map[string]any{"error": e})
}

// responsesAPI is OpenAI Responses: POST /v1/responses, streamed (SSE
// with typed events) or not.
type responsesAPI struct{}

func (responsesAPI) name() string { return "responses" }

type responsesReq struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Type       string         `json:"type"`
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters"`
	} `json:"tools"`
	Input json.RawMessage `json:"input"`
	Text  *struct {
		Format *jsonFormat `json:"format"`
	} `json:"text"`
}

func (responsesAPI) parse(_ *http.Request, body []byte) (*call, error) {
	var req responsesReq
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("responses request: %w", err)
	}
	c := &call{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		switch t.Type {
		case "function", "":
			c.tools = append(c.tools, tool{Name: t.Name, Kind: "function", Schema: t.Parameters})
		case "local_shell":
			c.tools = append(c.tools, tool{Name: "local_shell", Kind: "local_shell"})
		case "custom":
			c.tools = append(c.tools, tool{Name: t.Name, Kind: "custom"})
		}
	}
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		c.prompt = s
	} else {
		var items []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(req.Input, &items)
		for i, it := range items {
			switch {
			case it.Type == "function_call_output" || it.Type == "local_shell_call_output" || it.Type == "custom_tool_call_output":
				c.afterTool = i == len(items)-1
			case it.Role == "user":
				if t := contentText(it.Content); t != "" {
					c.prompt = t
				}
			}
		}
	}
	if req.Text != nil && req.Text.Format != nil && req.Text.Format.Type == "json_schema" {
		c.jsonSchema = req.Text.Format.Schema
		if c.jsonSchema == nil {
			c.jsonSchema = map[string]any{}
		}
	}
	return c, nil
}

func responsesUsage(u usage) map[string]any {
	return map[string]any{"input_tokens": u.input, "output_tokens": u.output, "total_tokens": u.input + u.output,
		"input_tokens_details":  map[string]any{"cached_tokens": u.cacheRead},
		"output_tokens_details": map[string]any{"reasoning_tokens": 0}}
}

// responseItems are the output items of a reply: a message, a tool call.
func responseItems(rep reply) []map[string]any {
	var items []map[string]any
	if rep.text != "" {
		items = append(items, map[string]any{"type": "message", "id": "msg_" + rep.id, "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rep.text, "annotations": []any{}}}})
	}
	if tc := rep.call; tc != nil {
		switch tc.Kind {
		case "local_shell":
			items = append(items, map[string]any{"type": "local_shell_call", "id": "lsh_" + rep.id, "call_id": "call_" + tc.ID,
				"status": "completed", "action": tc.Args})
		case "custom":
			items = append(items, map[string]any{"type": "custom_tool_call", "id": "ctc_" + rep.id, "call_id": "call_" + tc.ID,
				"name": tc.Name, "input": tc.Input, "status": "completed"})
		default:
			items = append(items, map[string]any{"type": "function_call", "id": "fc_" + rep.id, "call_id": "call_" + tc.ID,
				"name": tc.Name, "arguments": mustJSON(tc.Args), "status": "completed"})
		}
	}
	return items
}

func responseObject(c *call, rep reply, status string, output []map[string]any, u map[string]any) map[string]any {
	return map[string]any{"id": "resp_" + rep.id, "object": "response", "created_at": time.Now().Unix(),
		"status": status, "model": c.model, "output": output, "usage": u}
}

func (responsesAPI) writeStream(w *sse, c *call, rep reply) {
	seq := 0
	ev := func(name string, fields map[string]any) {
		fields["type"] = name
		fields["sequence_number"] = seq
		seq++
		w.event(name, fields)
	}
	ev("response.created", map[string]any{"response": responseObject(c, rep, "in_progress", []map[string]any{}, nil)})
	ev("response.in_progress", map[string]any{"response": responseObject(c, rep, "in_progress", []map[string]any{}, nil)})
	items := responseItems(rep)
	for i, it := range items {
		switch it["type"] {
		case "message":
			id := it["id"]
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "message",
				"id": id, "status": "in_progress", "role": "assistant", "content": []any{}}})
			ev("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, s := range chunks(rep.text) {
				ev("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": s})
			}
			ev("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": rep.text})
			ev("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": rep.text, "annotations": []any{}}})
		case "function_call":
			added := map[string]any{}
			maps.Copy(added, it)
			added["arguments"], added["status"] = "", "in_progress"
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			ev("response.function_call_arguments.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": it["arguments"]})
			ev("response.function_call_arguments.done", map[string]any{"item_id": it["id"], "output_index": i, "arguments": it["arguments"]})
		default:
			ev("response.output_item.added", map[string]any{"output_index": i, "item": it})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	ev("response.completed", map[string]any{"response": responseObject(c, rep, "completed", items, responsesUsage(rep.usage))})
}

func (responsesAPI) writeJSON(w http.ResponseWriter, c *call, rep reply) {
	writeJSON(w, http.StatusOK, responseObject(c, rep, "completed", responseItems(rep), responsesUsage(rep.usage)))
}

func (responsesAPI) writeError(w http.ResponseWriter, t Turn) { openAIError(w, t) }
