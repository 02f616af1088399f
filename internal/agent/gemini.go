package agent

import (
	"encoding/json"
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
		ConfigDirs: []string{"~/.gemini"},
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

// geminiLine is the envelope of one Gemini CLI stream-json line.
type geminiLine struct {
	Type       string                     `json:"type"`
	SessionID  string                     `json:"session_id"`
	Role       string                     `json:"role"`
	Content    string                     `json:"content"`
	Delta      bool                       `json:"delta"`
	ToolName   string                     `json:"tool_name"`
	ToolID     string                     `json:"tool_id"`
	Parameters map[string]json.RawMessage `json:"parameters"`
	Status     string                     `json:"status"`
	Output     string                     `json:"output"`
	Message    string                     `json:"message"` // error events
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *struct {
		InputTokens  int64  `json:"input_tokens"`
		OutputTokens int64  `json:"output_tokens"`
		Cached       int64  `json:"cached"`
		Input        *int64 `json:"input"` // input_tokens less cached
	} `json:"stats"`
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
}

func newGeminiDecoder(now func() time.Time) *geminiDecoder {
	return &geminiDecoder{now: now, tools: map[string]string{}}
}

func (d *geminiDecoder) Line(line []byte, emit func(Event)) {
	var l geminiLine
	if !decodeLine(line, &l) {
		return
	}
	if l.Type != "message" || l.Role != "assistant" {
		d.flush(emit)
	}
	switch l.Type {
	case "init":
		d.res.SessionID = l.SessionID
	case "message":
		if l.Role != "assistant" {
			return
		}
		if !l.Delta {
			d.flush(emit) // a whole message
		}
		if d.cur.Len() < 2*maxMessageBytes {
			d.cur.WriteString(l.Content)
		}
		if !l.Delta {
			d.flush(emit)
		}
	case "tool_use":
		if len(d.tools) >= maxToolNames {
			clear(d.tools)
		}
		d.tools[l.ToolID] = l.ToolName
		emit(Event{Kind: EventToolCall, Tool: l.ToolName, ToolInput: keyArg(l.Parameters)})
	case "tool_result":
		text := l.Output
		if l.Error != nil && l.Error.Message != "" {
			text = l.Error.Message
		}
		emit(Event{Kind: EventToolResult, Tool: d.tools[l.ToolID], Text: truncate(text, maxToolResult)})
	case "error":
		d.errText = l.Message
		emit(Event{Kind: EventError, Text: l.Message})
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

func (d *geminiDecoder) result(l geminiLine, emit func(Event)) {
	r := &d.res
	if s := l.Stats; s != nil {
		in := max(0, s.InputTokens-s.Cached)
		if s.Input != nil {
			in = *s.Input
		}
		r.Usage = Usage{InputTokens: in, OutputTokens: s.OutputTokens, CacheReadTokens: s.Cached}
	}
	if l.Status == "error" {
		r.IsError = true
		if l.Error != nil {
			r.ErrorText = l.Error.Message
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
