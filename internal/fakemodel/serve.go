package fakemodel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxBody bounds a request body: the CLIs send their whole system prompt
// and tool schemas, a few hundred KB.
const maxBody = 32 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.RequestURI(), Body: body}
	defer func() { s.record(rec) }()
	if err != nil {
		rec.Status, rec.Answer = http.StatusBadRequest, "unreadable body"
		http.Error(w, err.Error(), rec.Status)
		return
	}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodGet && (strings.HasSuffix(path, "/models") || strings.Contains(path, "/models/")):
		rec.API, rec.Status, rec.Answer = "models", http.StatusOK, "model list"
		s.models(w, r)
		return
	case r.Method == http.MethodHead || r.Method == http.MethodGet && (path == "/" || path == "/v1" || path == "/v1/"):
		rec.Status, rec.Answer = http.StatusOK, "ok"
		w.WriteHeader(http.StatusOK)
		return
	case r.Method != http.MethodPost:
		rec.API, rec.Status, rec.Answer = "unknown", http.StatusNotFound, "not found"
		http.NotFound(w, r)
		return
	}

	var api apiShape
	switch {
	case strings.HasSuffix(path, "/messages/count_tokens"):
		rec.API = "count_tokens"
		rec.Status, rec.Answer = http.StatusOK, "token count"
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": estimateTokens(body)})
		return
	case strings.HasSuffix(path, ":countTokens"):
		rec.API = "count_tokens"
		rec.Status, rec.Answer = http.StatusOK, "token count"
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": estimateTokens(body)})
		return
	case strings.HasSuffix(path, "/messages"):
		api = anthropicAPI{}
	case strings.HasSuffix(path, "/responses"):
		api = responsesAPI{}
	case strings.HasSuffix(path, "/chat/completions"):
		api = chatAPI{}
	case strings.HasSuffix(path, ":streamGenerateContent"), strings.HasSuffix(path, ":generateContent"):
		api = geminiAPI{}
	default:
		rec.API, rec.Status, rec.Answer = "unknown", http.StatusNotFound, "not found"
		http.NotFound(w, r)
		return
	}
	c, err := api.parse(r, body)
	rec.API = api.name()
	if err != nil {
		rec.Status, rec.Answer = http.StatusBadRequest, "bad request: "+err.Error()
		api.writeError(w, Status(http.StatusBadRequest, err.Error()))
		return
	}
	c.inputTokens = estimateTokens(body)
	rec.Model, rec.Stream, rec.ToolResult, rec.Prompt = c.model, c.stream, c.afterTool, c.prompt
	for _, t := range c.tools {
		rec.Tools = append(rec.Tools, t.Name)
	}

	var t Turn
	if len(c.tools) == 0 || c.jsonSchema != nil {
		rec.Side = true
		t = s.sideTurn(c)
	} else {
		t = s.next()
	}
	rec.Answer = t.Describe()
	switch t.Kind {
	case KindHang:
		rec.Status = 0
		select {
		case <-r.Context().Done():
			rec.Answer += " (client gave up)"
		case <-s.done:
			rec.Answer += " (server closed)"
		}
		return
	case KindError:
		rec.Status = t.Status
		api.writeError(w, t)
		return
	default:
		// The other values need nothing here.
	}
	rep, err := s.reply(c, t)
	if err != nil {
		rec.Status, rec.Answer = http.StatusInternalServerError, "cannot script: "+err.Error()
		api.writeError(w, Status(http.StatusInternalServerError, "fake model: "+err.Error()))
		return
	}
	if rep.call != nil {
		rec.Answer += " via " + rep.call.Name
	}
	rec.Status = http.StatusOK
	rec.InputTokens, rec.CacheReadTokens, rec.OutputTokens = rep.usage.input, rep.usage.cacheRead, rep.usage.output
	if c.stream {
		api.writeStream(newSSE(w), c, rep)
	} else {
		api.writeJSON(w, c, rep)
	}
}

// sideTurn answers a side call: JSON shaped by the requested schema when
// the client asked for JSON, the canned text otherwise.
func (s *Server) sideTurn(c *call) Turn {
	if c.jsonSchema != nil {
		return Text(string(fakeJSON(c.jsonSchema)))
	}
	return Text(s.opts.SideText)
}

// reply is one scripted answer made concrete for one request: the text,
// the tool call with its arguments, the token counts.
type reply struct {
	id    string
	text  string
	call  *toolCall
	usage usage
}

type toolCall struct {
	ID   string
	Name string
	// Kind is the tool's kind in the request: "function", or the
	// Responses API's "local_shell" and "custom".
	Kind string
	Args map[string]any
	// Input is the raw input of a custom (freeform) tool.
	Input string
}

// usage counts a reply's tokens the OpenAI and Gemini way: input includes
// the cache reads (Anthropic counts them apart).
type usage struct {
	input, output, cacheRead int
}

func (s *Server) reply(c *call, t Turn) (reply, error) {
	n := s.id()
	rep := reply{id: fmt.Sprintf("fake_%d", n), text: t.Text}
	if t.Kind == KindToolCall {
		tc, err := chooseCall(c.tools, t)
		if err != nil {
			return reply{}, err
		}
		tc.ID = rep.id
		rep.call = &tc
	}
	out := estimateTokens([]byte(rep.text)) + 10
	if rep.call != nil {
		out += 20
	}
	rep.usage = usage{input: c.inputTokens, output: out}
	if c.afterTool {
		// A conversation that goes on re-sends what the last request
		// sent: as with a real prompt cache, half of it is read from
		// the cache.
		rep.usage.cacheRead = c.inputTokens / 2
	}
	return rep, nil
}

// estimateTokens counts about four bytes a token, at least one.
func estimateTokens(b []byte) int { return max(len(b)/4, 1) }

// call is what the server reads from one request, whatever its API.
type call struct {
	model  string
	stream bool
	tools  []tool
	// afterTool says the last message is a tool result.
	afterTool bool
	// prompt is the start of the last user text.
	prompt string
	// jsonSchema is the schema of a JSON answer the client asked for.
	jsonSchema map[string]any
	// jsonArray says a Gemini stream without alt=sse: one JSON array.
	jsonArray bool
	// includeUsage says a Chat Completions stream asked for the usage chunk.
	includeUsage bool
	inputTokens  int
}

// apiShape reads one API's requests and writes its answers.
type apiShape interface {
	name() string
	parse(r *http.Request, body []byte) (*call, error)
	writeStream(w *sse, c *call, rep reply)
	writeJSON(w http.ResponseWriter, c *call, rep reply)
	writeError(w http.ResponseWriter, t Turn)
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	ids := []string{"fake-model", "claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5", "gemini-2.5-pro", "gemini-2.5-flash"}
	switch {
	case strings.Contains(r.URL.Path, "/v1beta/"):
		var ms []map[string]any
		for _, id := range ids {
			ms = append(ms, map[string]any{"name": "models/" + id, "displayName": id,
				"inputTokenLimit": 1048576, "outputTokenLimit": 65536,
				"supportedGenerationMethods": []string{"generateContent", "countTokens"}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"models": ms})
	case r.URL.Query().Has("client_version"):
		// Codex asks for its own catalog shape; an empty one makes it use
		// its built-in defaults.
		writeJSON(w, http.StatusOK, map[string]any{"models": []any{}})
	default:
		// One shape that both OpenAI and Anthropic clients read.
		var data []map[string]any
		for _, id := range ids {
			data = append(data, map[string]any{"id": id, "object": "model", "type": "model",
				"display_name": id, "created": 1735689600, "created_at": "2025-01-01T00:00:00Z", "owned_by": "fake"})
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data,
			"has_more": false, "first_id": ids[0], "last_id": ids[len(ids)-1]})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = jsonEncode(w, v)
}

// sse writes server-sent events, flushing each.
type sse struct {
	w       http.ResponseWriter
	started bool
}

func newSSE(w http.ResponseWriter) *sse { return &sse{w: w} }

// event writes one event; name may be empty (OpenAI Chat, Gemini).
func (s *sse) event(name string, v any) {
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		s.w.WriteHeader(http.StatusOK)
	}
	var b bytes.Buffer
	if name != "" {
		fmt.Fprintf(&b, "event: %s\n", name)
	}
	b.WriteString("data: ")
	if raw, ok := v.(string); ok {
		b.WriteString(raw)
	} else {
		_ = jsonEncode(&b, v)
		b.Truncate(b.Len() - 1) // the encoder's newline
	}
	b.WriteString("\n\n")
	_, _ = s.w.Write(b.Bytes())
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

var errNoShell = errors.New("the request offers no shell-like tool")
