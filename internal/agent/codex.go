package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// codex is the OpenAI Codex CLI adapter.
type codex struct{ base }

// NewCodex returns the adapter for the Codex CLI.
func NewCodex(opts Options) (Adapter, error) {
	b, err := newBase("codex", opts)
	return codex{b}, err
}

// codexSpec is what ralph knows about the Codex CLI.
func codexSpec() Spec {
	return Spec{
		Name:    "codex",
		New:     NewCodex,
		Dialect: "codex-json",
		Install: "npm install -g @openai/codex",
		Credentials: Credentials{
			EnvVars: []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
			Files:   []string{"$CODEX_HOME/auth.json", "~/.codex/auth.json"},
			Login:   "run `codex login`, or set OPENAI_API_KEY",
		},
		// CODEX_HOME replaces ~/.codex.
		ConfigDirs: []string{"$CODEX_HOME", "~/.codex"},
	}
}

func (codex) Name() string { return "codex" }

// Invocation runs `codex exec --json --dangerously-bypass-approvals-and-sandbox
// --skip-git-repo-check [-m M] -` with the prompt on stdin ("-" tells codex
// exec to read it there; with a prompt argument it would read a piped stdin
// as more context).
func (c codex) Invocation(req Request) (Invocation, error) {
	return c.stdinInvocation(layout{
		exe:   "codex",
		flags: []string{"exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"},
		model: "-m",
		tail:  []string{"-"},
	}, req), nil
}

func (c codex) NewDecoder() Decoder { return newCodexDecoder(c.now) }

// codexLine is the envelope of one `codex exec --json` line.
type codexLine struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Message  string      `json:"message"` // error
	Item     *codexItem  `json:"item"`
	Usage    *codexUsage `json:"usage"` // turn.completed
	Error    *codexError `json:"error"` // turn.failed
}

type codexItem struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Text             string          `json:"text"`    // agent_message, reasoning
	Message          string          `json:"message"` // error
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	Changes          []codexChange   `json:"changes"` // file_change
	Server           string          `json:"server"`  // mcp_tool_call
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Error            *codexError     `json:"error"`
	Query            string          `json:"query"` // web_search
}

type codexChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// codexUsage counts a thread's tokens so far: input includes the cached
// (and cache-written) tokens, output includes reasoning.
type codexUsage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	CacheWriteTokens  int64 `json:"cache_write_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
}

func (u codexUsage) usage() Usage {
	return Usage{
		InputTokens:      max(0, u.InputTokens-u.CachedInputTokens-u.CacheWriteTokens),
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CachedInputTokens,
		CacheWriteTokens: u.CacheWriteTokens,
	}
}

// codexError is an error object; a usage-limit error from the backend
// carries its type and reset.
type codexError struct {
	Message         string   `json:"message"`
	Type            string   `json:"type"`
	ResetsInSeconds *float64 `json:"resets_in_seconds"`
	ResetsAt        *int64   `json:"resets_at"`
}

// codexDecoder decodes `codex exec --json`.
type codexDecoder struct {
	now      func() time.Time
	res      Result
	lastText string
	messages []string
	started  map[string]bool // tool items already shown at item.started
	usage    Usage
	gotUsage bool

	failed    bool        // turn.failed
	completed bool        // a turn.completed after the last error
	errText   string      // turn.failed's message, else the last error event's
	errObj    *codexError // the failure's structured error, if any
}

func newCodexDecoder(now func() time.Time) *codexDecoder {
	return &codexDecoder{now: now, started: map[string]bool{}}
}

func (d *codexDecoder) Line(line []byte, emit func(Event)) {
	var l codexLine
	if !decodeLine(line, &l) {
		return
	}
	switch l.Type {
	case "thread.started":
		d.res.SessionID = l.ThreadID
	case "turn.started":
		d.res.Turns++
	case "item.started":
		if l.Item != nil {
			d.itemStarted(*l.Item, emit)
		}
	case "item.completed":
		if l.Item != nil {
			d.itemCompleted(*l.Item, emit)
		}
	case "turn.completed":
		if l.Usage != nil {
			// Cumulative for the thread: the latest replaces, never adds.
			d.usage, d.gotUsage = l.Usage.usage(), true
			u := d.usage
			emit(Event{Kind: EventUsage, Usage: &u})
		}
		d.completed = true
	case "turn.failed":
		d.failed, d.completed = true, false
		last := d.errText
		if l.Error != nil {
			d.errText, d.errObj = l.Error.Message, l.Error
		}
		if d.errText != last {
			// Usually the error event before it said the same.
			emit(Event{Kind: EventError, Text: d.errText})
		}
	case "error":
		// Retry notices ("Reconnecting... 1/5") and fatal errors alike;
		// only one not followed by a completed turn fails the run.
		d.completed = false
		if !d.failed {
			d.errText = l.Message
		}
		emit(Event{Kind: EventError, Text: l.Message})
	}
}

func (d *codexDecoder) itemStarted(it codexItem, emit func(Event)) {
	switch it.Type {
	case "command_execution", "mcp_tool_call", "web_search":
		if len(d.started) >= maxToolNames {
			clear(d.started)
		}
		d.started[it.ID] = true
		emit(codexToolCall(it))
	}
}

func (d *codexDecoder) itemCompleted(it codexItem, emit func(Event)) {
	switch it.Type {
	case "agent_message":
		if it.Text == "" {
			return
		}
		d.lastText = it.Text
		d.messages = appendMessage(d.messages, it.Text)
		emit(Event{Kind: EventText, Text: it.Text})
	case "command_execution", "mcp_tool_call", "web_search":
		if !d.started[it.ID] {
			emit(codexToolCall(it))
		}
		delete(d.started, it.ID)
		if it.Type == "web_search" {
			return
		}
		ev := codexToolCall(it)
		ev.Kind, ev.ToolInput = EventToolResult, ""
		ev.Text = truncate(codexToolOutput(it), maxToolResult)
		emit(ev)
	case "file_change":
		emit(codexToolCall(it))
	case "error":
		// A warning ("Model metadata ... not found"): shown, not a failure.
		emit(Event{Kind: EventError, Text: it.Message})
	}
}

func codexToolCall(it codexItem) Event {
	switch it.Type {
	case "command_execution":
		return Event{Kind: EventToolCall, Tool: "shell", ToolInput: oneLine(it.Command)}
	case "mcp_tool_call":
		var args map[string]json.RawMessage
		_ = json.Unmarshal(it.Arguments, &args)
		return Event{Kind: EventToolCall, Tool: it.Server + "." + it.Tool, ToolInput: keyArg(args)}
	case "web_search":
		return Event{Kind: EventToolCall, Tool: "web_search", ToolInput: oneLine(it.Query)}
	}
	var paths []string
	for _, c := range it.Changes {
		paths = append(paths, strings.TrimSpace(c.Kind+" "+c.Path))
	}
	return Event{Kind: EventToolCall, Tool: "file_change", ToolInput: oneLine(strings.Join(paths, ", "))}
}

func codexToolOutput(it codexItem) string {
	if it.Type == "command_execution" {
		return it.AggregatedOutput
	}
	if it.Error != nil && it.Error.Message != "" {
		return it.Error.Message
	}
	var r struct {
		Content []claudePart `json:"content"`
	}
	_ = json.Unmarshal(it.Result, &r)
	var texts []string
	for _, p := range r.Content {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func (d *codexDecoder) Finish() Result {
	r := d.res
	r.FinalText = d.lastText
	r.Messages = d.messages
	r.Usage = d.usage
	if d.failed || d.errText != "" && !d.completed {
		r.IsError = true
		r.ErrorText = d.errText
		r.HTTPStatus = statusIn(d.errText)
		usageLimit := mentionsUsageLimit(d.errText)
		if e := d.errObj; e != nil {
			usageLimit = usageLimit || e.Type == "usage_limit_reached"
			switch {
			case e.ResetsInSeconds != nil:
				r.ResetAt = d.now().Add(time.Duration(*e.ResetsInSeconds * float64(time.Second)))
			case e.ResetsAt != nil:
				r.ResetAt = time.Unix(*e.ResetsAt, 0).UTC()
			}
		}
		switch {
		case usageLimit:
			r.ErrorKind = ErrorUsageLimit
		default:
			r.ErrorKind = statusKind(r.HTTPStatus, d.errText)
		}
		if r.ErrorKind == ErrorNone {
			r.ErrorKind = ErrorOther
		}
		if r.ResetAt.IsZero() && (r.ErrorKind == ErrorUsageLimit || r.ErrorKind == ErrorRateLimit) {
			r.ResetAt, _ = parseReset(d.errText, d.now())
		}
	}
	return r
}

// decodeLine unmarshals one JSON line into v, tolerating fields of an
// unexpected type (the rest is decoded); it reports false for noise.
func decodeLine(line []byte, v any) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	err := json.Unmarshal(line, v)
	var te *json.UnmarshalTypeError
	return err == nil || errors.As(err, &te)
}

// appendMessage adds one assistant message to a bounded list, keeping the
// end of a long one: that is where markers are.
func appendMessage(msgs []string, s string) []string {
	if len(s) > maxMessageBytes {
		s = string(utf8Start([]byte(s[len(s)-maxMessageBytes:])))
	}
	if len(msgs) == maxMessages {
		msgs = append(msgs[:0], msgs[1:]...)
	}
	return append(msgs, s)
}
