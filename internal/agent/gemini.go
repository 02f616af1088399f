package agent

import (
	"slices"
	"strings"
	"time"
)

// gemini is the Gemini CLI adapter.
type gemini struct{ base }

// NewGemini returns the adapter for the Gemini CLI.
func NewGemini(opts Options) (Adapter, error) {
	b, err := newBase("gemini", opts)
	return gemini{b}, err
}

// geminiSpec is what ralph knows about the Gemini CLI.
func geminiSpec() Spec {
	return Spec{
		Name:             "gemini",
		New:              NewGemini,
		Dialect:          "gemini-stream-json",
		ResolvesFileRefs: true,
		Install:          "npm install -g @google/gemini-cli",
		Credentials: Credentials{
			EnvVars: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_APPLICATION_CREDENTIALS"},
			Files:   []string{"~/.gemini/oauth_creds.json"},
			Login:   "run `gemini` and choose Login with Google, or set GEMINI_API_KEY",
		},
		Hosts: []string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com", "accounts.google.com"},
		// settings.json names hooks and MCP servers: reported, never
		// written back.
		ConfigDirs: []string{"~/.gemini"},
		// tmp holds each project's chats, logs, checkpoints and plans;
		// history each project's shadow git repository.
		Scratch: []string{"~/.gemini/tmp", "~/.gemini/history"},
		// The tools it downloads (ripgrep).
		ReadOnly: []string{"~/.gemini/tmp/bin"},
		// The login (oauth_creds.json, or the encrypted file keychain
		// where there is no system one), and this run's chats (gemini
		// --resume finds them).
		WriteBack:  []string{"~/.gemini/oauth_creds.json", "~/.gemini/gemini-credentials.json", "~/.gemini/tmp/*/chats/*"},
		OwnSession: sessionsIn("tmp", geminiSlug),
		Env:        []string{"GEMINI_*", "GOOGLE_*"},
	}
}

func (gemini) Name() string { return "gemini" }

// Invocation runs `gemini -o stream-json --yolo --skip-trust [-m M]` with
// the prompt on stdin: with stdin not a terminal the CLI runs headless and
// reads its prompt there (-p would only be appended to it).
func (g gemini) Invocation(req Request) (Invocation, error) {
	return g.stdinInvocation(layout{
		exe:   "gemini",
		flags: []string{"-o", "stream-json", "--yolo", "--skip-trust"},
		model: "-m",
	}, req), nil
}

func (g gemini) NewDecoder() Decoder { return newGeminiDecoder(g.now) }

// FinishRun reads the HTTP status from the exit code when the stream did
// not give it: on an API error the CLI exits with the status, which the
// shell sees modulo 256 (429 exits 173).
func (g gemini) FinishRun(req Request, res *Result) {
	if res.IsError && res.HTTPStatus == 0 {
		res.HTTPStatus = statusFromExit(res.ExitCode)
		if k := statusKind(res.HTTPStatus, res.ErrorText); k != ErrorNone && (res.ErrorKind == ErrorNone || res.ErrorKind == ErrorOther) {
			res.ErrorKind = k
		}
	}
	if res.ExitCode == 41 && !res.TimedOut && !res.IdleTimedOut && !res.Interrupted {
		// FATAL_AUTHENTICATION_ERROR
		res.IsError, res.ErrorKind = true, ErrorFatal
	}
	g.base.FinishRun(req, res)
}

// statusFromExit maps an exit code back to the HTTP status it may be.
func statusFromExit(code int) int {
	for _, s := range []int{400, 401, 403, 404, 408, 429, 500, 502, 503, 504, 529} {
		if code > 0 && s%256 == code {
			return s
		}
	}
	return 0
}

// geminiLine is what the decoder reads of one Gemini CLI stream-json line.
type geminiLine struct {
	typ, role  []byte
	sessionID  string
	model      string // init: the model, or "auto"
	content    string
	delta      bool
	toolName   string
	toolID     string
	parameters keyArgs
	status     string
	output     []byte // the head of a tool's output: what truncate keeps
	message    string // error events
	err        struct{ typ, message string }
	hasErr     bool
	stats      geminiStats
	hasStats   bool
}

type geminiStats struct {
	inputTokens, outputTokens, cached int64
	input                             int64 // input_tokens less cached
	hasInput                          bool
}

func (l *geminiLine) reset() {
	*l = geminiLine{typ: l.typ[:0], role: l.role[:0], output: l.output[:0]}
}

func (l *geminiLine) read(s *jsonScanner) {
	s.object()
	for s.more() {
		switch string(s.name()) {
		case "type":
			readBytes(s, &l.typ)
		case "session_id":
			s.str(&l.sessionID)
		case "model":
			s.str(&l.model)
		case "role":
			readBytes(s, &l.role)
		case "content":
			s.str(&l.content)
		case "delta":
			s.bool(&l.delta)
		case "tool_name":
			s.str(&l.toolName)
		case "tool_id":
			s.str(&l.toolID)
		case "parameters":
			l.parameters.read(s)
		case "status":
			s.str(&l.status)
		case "output":
			if s.kind() == '"' {
				l.output = s.strHead(l.output[:0], maxToolResult+1)
			}
		case "message":
			s.str(&l.message)
		case "error":
			l.readError(s)
		case "stats":
			l.readStats(s)
		}
	}
}

func (l *geminiLine) readError(s *jsonScanner) {
	if s.null() {
		l.err.typ, l.err.message, l.hasErr = "", "", false
		return
	}
	if !s.object() {
		return
	}
	l.hasErr = true
	for s.more() {
		switch string(s.name()) {
		case "type":
			s.str(&l.err.typ)
		case "message":
			s.str(&l.err.message)
		}
	}
}

func (l *geminiLine) readStats(s *jsonScanner) {
	st := &l.stats
	if s.null() {
		*st, l.hasStats = geminiStats{}, false
		return
	}
	if !s.object() {
		return
	}
	l.hasStats = true
	for s.more() {
		switch string(s.name()) {
		case "input_tokens":
			s.int64(&st.inputTokens)
		case "output_tokens":
			s.int64(&st.outputTokens)
		case "cached":
			s.int64(&st.cached)
		case "input":
			if s.null() {
				st.input, st.hasInput = 0, false
			} else if s.int64(&st.input) {
				st.hasInput = true
			}
		}
	}
}

// geminiDecoder decodes the Gemini CLI's stream-json (Qwen Code's is
// Claude-shaped instead). Assistant text arrives in deltas; a message is
// the deltas between two other events.
type geminiDecoder struct {
	now      func() time.Time
	res      Result
	cur      strings.Builder // the assistant message being streamed
	lastText string
	messages []string
	tools    map[string]string
	errText  string // the last error event

	s *jsonScanner
	l geminiLine // the line being decoded
}

func newGeminiDecoder(now func() time.Time) *geminiDecoder {
	return &geminiDecoder{now: now, tools: map[string]string{}, s: newJSONScanner()}
}

func (d *geminiDecoder) Line(line []byte, emit func(Event)) {
	l := &d.l
	if !d.s.start(line) {
		return
	}
	l.reset()
	l.read(d.s)
	if !d.s.end() {
		return
	}
	typ := string(l.typ)
	assistant := string(l.role) == "assistant"
	if typ != "message" || !assistant {
		d.flush(emit)
	}
	switch typ {
	case "init":
		d.res.SessionID = l.sessionID
		if l.model != "auto" {
			d.res.Model = l.model // priced by it when the CLI reports no cost
		}
	case "message":
		if !assistant {
			return
		}
		if !l.delta {
			d.flush(emit) // a whole message
		}
		if d.cur.Len() < 2*maxMessageBytes {
			d.cur.WriteString(l.content)
		}
		if !l.delta {
			d.flush(emit)
		}
	case "tool_use":
		if len(d.tools) >= maxToolNames {
			clear(d.tools)
		}
		d.tools[l.toolID] = l.toolName
		emit(Event{Kind: EventToolCall, Tool: l.toolName, ToolInput: l.parameters.String()})
	case "tool_result":
		text := string(l.output)
		if l.hasErr && l.err.message != "" {
			text = l.err.message
		}
		emit(Event{Kind: EventToolResult, Tool: d.tools[l.toolID], Text: truncate(text, maxToolResult)})
	case "error":
		d.errText = l.message
		emit(Event{Kind: EventError, Text: l.message})
	case "result":
		d.result(l, emit)
	}
}

// flush ends the assistant message being streamed.
func (d *geminiDecoder) flush(emit func(Event)) {
	if d.cur.Len() == 0 {
		return
	}
	text := d.cur.String()
	d.cur.Reset()
	if strings.TrimSpace(text) == "" {
		return
	}
	d.lastText = text
	d.messages = appendMessage(d.messages, text)
	emit(Event{Kind: EventText, Text: text})
}

func (d *geminiDecoder) result(l *geminiLine, emit func(Event)) {
	r := &d.res
	if l.hasStats {
		st := l.stats
		in := max(0, st.inputTokens-st.cached)
		if st.hasInput {
			in = st.input
		}
		r.Usage = Usage{InputTokens: in, OutputTokens: st.outputTokens, CacheReadTokens: st.cached}
	}
	if l.status == "error" {
		r.IsError = true
		if l.hasErr {
			r.ErrorText = l.err.message
		}
		r.ErrorText = firstNonBlank(r.ErrorText, d.errText, "error")
		emit(Event{Kind: EventError, Text: r.ErrorText})
	}
	u := r.Usage
	emit(Event{Kind: EventResult, Text: d.lastText, Usage: &u})
}

func (d *geminiDecoder) Finish() Result {
	d.flush(func(Event) {})
	r := d.res
	r.FinalText = d.lastText
	r.Messages = slices.Clone(d.messages)
	if r.IsError {
		r.HTTPStatus = statusIn(r.ErrorText)
		r.ErrorKind = ErrorOther
		if mentionsUsageLimit(r.ErrorText) {
			r.ErrorKind = ErrorUsageLimit
		} else if k := statusKind(r.HTTPStatus, r.ErrorText); k != ErrorNone {
			r.ErrorKind = k
		}
		if r.ErrorKind == ErrorUsageLimit || r.ErrorKind == ErrorRateLimit {
			r.ResetAt, _ = parseReset(r.ErrorText, d.now())
		}
	}
	return r
}

func firstNonBlank(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
