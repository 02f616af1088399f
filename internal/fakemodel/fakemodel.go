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
// scripted turn. Requests without tools, or that ask for JSON by schema,
// are the CLIs' side calls (session titles, quota probes, Gemini CLI's
// model router and next-speaker check): they get a canned answer and never
// eat the script. The package is test support: nothing in the product
// imports it.
package fakemodel

import (
	"context"
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
	// Now is the clock Until and UsageLimit turns are held against;
	// default time.Now. Tests set it to move time without waiting.
	Now func() time.Time
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
	// InputTokens (cache reads included), CacheReadTokens and
	// OutputTokens are the usage the answer reported.
	InputTokens, CacheReadTokens, OutputTokens int
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
	if opts.Now == nil {
		opts.Now = time.Now
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
// every request, or every request until a time, counts as one until it is
// dropped).
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
	for len(s.queue) > 0 && !s.queue[0].until.IsZero() && !s.opts.Now().Before(s.queue[0].until) {
		s.queue = s.queue[1:] // its time is over
	}
	if len(s.queue) == 0 {
		return s.unscripted()
	}
	t := s.queue[0]
	switch {
	case !t.until.IsZero():
		// answers every request until its time is over: stays
	case t.repeat < 0:
		// answers every request: stays
	case t.repeat > 1:
		s.queue[0].repeat--
	default:
		s.queue = s.queue[1:]
	}
	return t
}

func (s *Server) unscripted() Turn {
	if s.opts.Unscripted != nil {
		return *s.opts.Unscripted
	}
	return Text("fake model: no turn scripted for this request")
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
