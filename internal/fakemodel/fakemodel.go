// Package fakemodel is a scriptable fake model server for tests: the
// Anthropic Messages, OpenAI Responses and Chat Completions, and Gemini
// APIs on 127.0.0.1, answering from a queue of scripted turns.
//
// It lets the real agent CLIs (Claude Code, Codex, Gemini CLI, OpenCode,
// Qwen Code, droid, Copilot) run offline in end-to-end tests: a test
// scripts "call the shell tool with `touch done.txt`", then "say
// <promise>TASK_DONE</promise>", or a 429, a 529, a hang, and points the
// CLI's base URL at the server. Every request is logged for assertions.
//
// Requests that carry tools are the agent's own turns and take the next
// scripted turn; requests without tools (titles, quota probes, next-speaker
// checks) are the CLIs' side calls and get a short canned answer, so that
// they never eat the script. The package is test support: nothing in the
// product imports it.
package fakemodel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configure a server.
type Options struct {
	// Addr is the address to listen on; default 127.0.0.1:0 (a free port).
	Addr string
	// Log, when set, receives one line per request as it is answered.
	Log io.Writer
	// KeepBodies keeps each request's body in the request log.
	KeepBodies bool
	// OnRequest, when set, is called with each request once answered,
	// body included.
	OnRequest func(Request)
	// SideText answers side calls (requests without tools); default "OK".
	SideText string
	// Unscripted answers the agent's turns once the script is used up;
	// default a text saying so (no completion marker, so the run notices).
	Unscripted *Turn
}

// Request is one logged request.
type Request struct {
	Time   time.Time
	Method string
	Path   string // path and query
	// API is "anthropic", "responses", "chat", "gemini", "count_tokens",
	// "models" or "unknown".
	API    string
	Model  string
	Stream bool
	// Tools lists the names of the tools the request offered.
	Tools []string
	// Side says the request carried no tools and got the canned answer
	// instead of a scripted turn.
	Side bool
	// ToolResult says the request's last message is a tool result.
	ToolResult bool
	// Answer describes what the server answered ("text \"...\"", "shell
	// \"touch x\" via Bash", "error 429", "hang").
	Answer string
	Status int
	// Prompt is the start of the last user text, for logs.
	Prompt string
	// Body is the request body (in Requests only with KeepBodies).
	Body []byte
}

// Server is a running fake model server.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT, without a path.
	URL string

	opts Options
	ln   net.Listener
	srv  *http.Server
	done chan struct{} // closed by Close: hung requests return

	mu     sync.Mutex
	queue  []Turn
	log    []Request
	nextID int
	closed bool
}

// Start starts a server on 127.0.0.1 on a free port.
func Start(opts Options) (*Server, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fake model server: %w", err)
	}
	if opts.SideText == "" {
		opts.SideText = "OK"
	}
	s := &Server{opts: opts, ln: ln, done: make(chan struct{}), URL: "http://" + ln.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server; requests left hanging return at once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// Script appends turns to the queue the agent's requests are answered
// from, in order.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, turns...)
}

// Pending returns how many scripted turns are left (a turn that answers
// every request counts as one).
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// LogText returns the request log, one line per request.
func (s *Server) LogText() string {
	var b strings.Builder
	for _, r := range s.Requests() {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// String is the request's log line.
func (r Request) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", r.Time.Format("15:04:05.000"), r.Method, r.Path)
	if r.API != "" {
		fmt.Fprintf(&b, " api=%s", r.API)
	}
	if r.Model != "" {
		fmt.Fprintf(&b, " model=%s", r.Model)
	}
	if r.Stream {
		b.WriteString(" stream")
	}
	if len(r.Tools) > 0 {
		fmt.Fprintf(&b, " tools=%d", len(r.Tools))
	}
	if r.ToolResult {
		b.WriteString(" after-tool")
	}
	if r.Side {
		b.WriteString(" side")
	}
	fmt.Fprintf(&b, " → %d %s", r.Status, r.Answer)
	if r.Prompt != "" {
		fmt.Fprintf(&b, " (prompt %s)", quoteShort(r.Prompt))
	}
	return b.String()
}

// next takes the turn that answers the agent's next request.
func (s *Server) next() Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		if s.opts.Unscripted != nil {
			return *s.opts.Unscripted
		}
		return Text("fake model: no turn scripted for this request")
	}
	t := s.queue[0]
	switch {
	case t.repeat < 0:
		// answers every request: stays
	case t.repeat > 1:
		s.queue[0].repeat--
	default:
		s.queue = s.queue[1:]
	}
	return t
}

func (s *Server) id() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return s.nextID
}

func (s *Server) record(r Request) {
	kept := r
	if !s.opts.KeepBodies {
		kept.Body = nil
	}
	s.mu.Lock()
	s.log = append(s.log, kept)
	s.mu.Unlock()
	if s.opts.Log != nil {
		fmt.Fprintln(s.opts.Log, r.String())
	}
	if s.opts.OnRequest != nil {
		s.opts.OnRequest(r)
	}
}

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
