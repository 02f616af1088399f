package fakemodel

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
)

// geminiAPI is the Gemini API: POST /v1beta/models/MODEL:generateContent
// and :streamGenerateContent (SSE with alt=sse, else one JSON array).
type geminiAPI struct{}

func (geminiAPI) name() string { return "gemini" }

type geminiReq struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string          `json:"text"`
			FunctionResponse json.RawMessage `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name                 string         `json:"name"`
			Parameters           map[string]any `json:"parameters"`
			ParametersJSONSchema map[string]any `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig *struct {
		ResponseMimeType   string         `json:"responseMimeType"`
		ResponseSchema     map[string]any `json:"responseSchema"`
		ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

func (geminiAPI) parse(r *http.Request, body []byte) (*call, error) {
	var req geminiReq
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("generateContent request: %w", err)
	}
	c := &call{}
	path := r.URL.Path
	if i := strings.LastIndex(path, "/models/"); i >= 0 {
		c.model, _, _ = strings.Cut(path[i+len("/models/"):], ":")
	}
	if strings.HasSuffix(path, ":streamGenerateContent") {
		// Without alt=sse the stream is one JSON array: written whole.
		c.stream = r.URL.Query().Get("alt") == "sse"
		c.jsonArray = !c.stream
	}
	for _, t := range req.Tools {
		for _, fd := range t.FunctionDeclarations {
			schema := fd.ParametersJSONSchema
			if schema == nil {
				schema = fd.Parameters
			}
			c.tools = append(c.tools, tool{Name: fd.Name, Kind: "function", Schema: schema})
		}
	}
	if n := len(req.Contents); n > 0 {
		last := req.Contents[n-1]
		for _, p := range last.Parts {
			if len(p.FunctionResponse) > 0 {
				c.afterTool = true
			}
			if p.Text != "" && last.Role == "user" {
				c.prompt = p.Text
			}
		}
	}
	if gc := req.GenerationConfig; gc != nil && gc.ResponseMimeType == "application/json" {
		c.jsonSchema = gc.ResponseJSONSchema
		if c.jsonSchema == nil {
			c.jsonSchema = gc.ResponseSchema
		}
		if c.jsonSchema == nil {
			c.jsonSchema = map[string]any{}
		}
	}
	return c, nil
}

func geminiUsage(u usage) map[string]any {
	return map[string]any{"promptTokenCount": u.input, "candidatesTokenCount": u.output,
		"totalTokenCount": u.input + u.output, "cachedContentTokenCount": u.cacheRead}
}

func geminiChunk(c *call, rep reply, parts []any, final bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": c.model, "responseId": rep.id}
	if final {
		cand["finishReason"] = "STOP"
		out["usageMetadata"] = geminiUsage(rep.usage)
	}
	return out
}

func geminiCall(tc *toolCall) map[string]any {
	return map[string]any{"functionCall": map[string]any{"id": "call_" + tc.ID, "name": tc.Name, "args": tc.Args}}
}

func (geminiAPI) writeStream(w *sse, c *call, rep reply) {
	texts := chunks(rep.text)
	if rep.call == nil && len(texts) > 0 {
		// The last text piece travels with the finish reason.
		for _, s := range texts[:len(texts)-1] {
			w.event("", geminiChunk(c, rep, []any{map[string]any{"text": s}}, false))
		}
		w.event("", geminiChunk(c, rep, []any{map[string]any{"text": texts[len(texts)-1]}}, true))
		return
	}
	for _, s := range texts {
		w.event("", geminiChunk(c, rep, []any{map[string]any{"text": s}}, false))
	}
	var parts []any
	if rep.call != nil {
		parts = append(parts, geminiCall(rep.call))
	}
	w.event("", geminiChunk(c, rep, parts, true))
}

func (geminiAPI) writeJSON(w http.ResponseWriter, c *call, rep reply) {
	var parts []any
	if rep.text != "" {
		parts = append(parts, map[string]any{"text": rep.text})
	}
	if rep.call != nil {
		parts = append(parts, geminiCall(rep.call))
	}
	resp := geminiChunk(c, rep, parts, true)
	if c.jsonArray {
		writeJSON(w, http.StatusOK, []any{resp})
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// writeError answers Google's error shape. A Retry-After goes in a
// RetryInfo detail too; a usage limit is a per-day quota, which Gemini CLI
// does not retry.
func (geminiAPI) writeError(w http.ResponseWriter, t Turn) {
	retryHeaders(w, t)
	var details []any
	if !t.Reset.IsZero() {
		details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []any{map[string]any{"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
				"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}}})
	} else if t.RetryAfter > 0 {
		details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": fmt.Sprintf("%ds", int(math.Ceil(t.RetryAfter.Seconds())))})
	}
	e := map[string]any{"code": t.Status, "message": t.Message, "status": googleStatus(t.Status)}
	if details != nil {
		e["details"] = details
	}
	writeJSON(w, t.Status, map[string]any{"error": e})
}

func googleStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503, 529:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}
