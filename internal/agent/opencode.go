package agent

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// opencode is the OpenCode adapter.
type opencode struct{ base }

// NewOpenCode returns the adapter for OpenCode.
func NewOpenCode(opts Options) (Adapter, error) {
	b, err := newBase("opencode", opts)
	return opencode{b}, err
}

// openCodeSpec is what ralph knows about OpenCode.
func openCodeSpec() Spec {
	return Spec{
		Name:    "opencode",
		New:     NewOpenCode,
		Dialect: "opencode-json",
		Install: "npm install -g opencode-ai",
		Credentials: Credentials{
			EnvVars: []string{"OPENCODE_CONFIG_CONTENT", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"},
			Files:   xdg("data", "opencode/auth.json"),
			Login:   "run `opencode auth login`, or set your provider's API key",
		},
		ConfigDirs: slices.Concat(xdg("config", "opencode"), xdg("data", "opencode"), xdg("cache", "opencode"), xdg("state", "opencode")),
	}
}

func (opencode) Name() string { return "opencode" }

// Invocation runs `opencode run --format json --auto [-m PROVIDER/MODEL]`
// with the prompt on stdin (opencode run appends a piped stdin to its
// message arguments; with none, stdin is the message). --auto approves
// the permission requests opencode would otherwise reject in a run.
func (o opencode) Invocation(req Request) (Invocation, error) {
	return o.stdinInvocation(layout{
		exe:   "opencode",
		flags: []string{"run", "--format", "json", "--auto"},
		model: "-m",
	}, req), nil
}

func (o opencode) NewDecoder() Decoder { return newOpenCodeDecoder(o.now) }

// openCodeLine is the envelope of one `opencode run --format json` line.
type openCodeLine struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      *struct {
		Type  string `json:"type"`
		Text  string `json:"text"`
		Tool  string `json:"tool"`
		State *struct {
			Status string                     `json:"status"`
			Input  map[string]json.RawMessage `json:"input"`
			Output string                     `json:"output"`
			Error  string                     `json:"error"`
		} `json:"state"`
		Tokens *struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			Reasoning int64 `json:"reasoning"`
			Cache     struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
		Cost *float64 `json:"cost"`
	} `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message         string            `json:"message"`
			StatusCode      int               `json:"statusCode"`
			ResponseHeaders map[string]string `json:"responseHeaders"`
		} `json:"data"`
	} `json:"error"`
}

// openCodeDecoder decodes OpenCode's JSON events. There is no final event:
// tokens and cost are the sum of the step_finish parts, the final text is
// the last text part.
type openCodeDecoder struct {
	now      func() time.Time
	res      Result
	lastText string
	messages []string
	errors   []string
	authErr  bool
}

func newOpenCodeDecoder(now func() time.Time) *openCodeDecoder { return &openCodeDecoder{now: now} }

func (d *openCodeDecoder) Line(line []byte, emit func(Event)) {
	var l openCodeLine
	if !decodeLine(line, &l) {
		return
	}
	if d.res.SessionID == "" {
		d.res.SessionID = l.SessionID
	}
	p := l.Part
	switch {
	case l.Type == "step_start":
		d.res.Turns++
	case l.Type == "text" && p != nil:
		if p.Text == "" {
			return
		}
		d.lastText = p.Text
		d.messages = appendMessage(d.messages, p.Text)
		emit(Event{Kind: EventText, Text: p.Text})
	case l.Type == "tool_use" && p != nil && p.State != nil:
		emit(Event{Kind: EventToolCall, Tool: p.Tool, ToolInput: keyArg(p.State.Input)})
		out := p.State.Output
		if p.State.Status == "error" {
			out = p.State.Error
		}
		emit(Event{Kind: EventToolResult, Tool: p.Tool, Text: truncate(out, maxToolResult)})
	case l.Type == "step_finish" && p != nil:
		if t := p.Tokens; t != nil {
			d.res.Usage = d.res.Usage.Add(Usage{
				InputTokens: t.Input, OutputTokens: t.Output + t.Reasoning,
				CacheReadTokens: t.Cache.Read, CacheWriteTokens: t.Cache.Write,
			})
			u := d.res.Usage
			emit(Event{Kind: EventUsage, Usage: &u})
		}
		if p.Cost != nil {
			d.res.CostUSD += *p.Cost
			d.res.HasCost = true
		}
	case l.Type == "error" && l.Error != nil:
		d.error(l, emit)
	}
}

func (d *openCodeDecoder) error(l openCodeLine, emit func(Event)) {
	e := l.Error
	msg := firstNonBlank(e.Data.Message, e.Name, "error")
	d.errors = append(d.errors, msg)
	r := &d.res
	r.IsError = true
	if e.Data.StatusCode != 0 {
		r.HTTPStatus = e.Data.StatusCode
	}
	if e.Name == "ProviderAuthError" {
		d.authErr = true
	}
	if at, ok := retryAfter(e.Data.ResponseHeaders, d.now()); ok {
		r.ResetAt = at
	}
	emit(Event{Kind: EventError, Text: msg})
}

// retryAfter reads the Retry-After-Ms or Retry-After header (seconds or
// an HTTP date) of a response.
func retryAfter(headers map[string]string, now time.Time) (time.Time, bool) {
	header := func(name string) (string, bool) {
		for k, v := range headers {
			if strings.EqualFold(k, name) {
				return strings.TrimSpace(v), true
			}
		}
		return "", false
	}
	if v, ok := header("retry-after-ms"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n < maxReset.Milliseconds() {
			return now.Add(time.Duration(n) * time.Millisecond), true
		}
	}
	if v, ok := header("retry-after"); ok {
		if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 && n < maxReset.Seconds() {
			return now.Add(time.Duration(n * float64(time.Second))), true
		}
		if t, err := time.Parse(time.RFC1123, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func (d *openCodeDecoder) Finish() Result {
	r := d.res
	r.FinalText = d.lastText
	r.Messages = slices.Clone(d.messages)
	if r.IsError {
		r.ErrorText = strings.Join(d.errors, "; ")
		if r.HTTPStatus == 0 {
			r.HTTPStatus = statusIn(r.ErrorText)
		}
		r.ErrorKind = statusKind(r.HTTPStatus, r.ErrorText)
		switch {
		case d.authErr:
			r.ErrorKind = ErrorFatal
		case r.ErrorKind == ErrorNone && mentionsUsageLimit(r.ErrorText):
			r.ErrorKind = ErrorUsageLimit
		case r.ErrorKind == ErrorNone:
			r.ErrorKind = ErrorOther
		}
		if r.ResetAt.IsZero() && (r.ErrorKind == ErrorUsageLimit || r.ErrorKind == ErrorRateLimit) {
			r.ResetAt, _ = parseReset(r.ErrorText, d.now())
		}
	} else {
		r.ResetAt = time.Time{}
	}
	return r
}
