package agent

import (
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
	data := xdg("data", "opencode")
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
		Hosts: []string{"opencode.ai", "*.opencode.ai", "models.dev", "api.anthropic.com", "api.openai.com"},
		// The config directory holds opencode.json (MCP servers) and
		// plugins; the cache the provider and plugin packages it
		// installs, code it runs: copied, reported, never written back.
		ConfigDirs: slices.Concat(xdg("config", "opencode"), data, xdg("cache", "opencode"), xdg("state", "opencode")),
		// Logs, each project's snapshot repository, the session store
		// (files before 1.x, a database since) and tool output.
		Scratch: under(data, "log", "snapshot", "storage", "tool-output", "worktree", "opencode*.db*"),
		// The language servers and tools it downloads.
		ReadOnly: under(data, "bin"),
		// The logins; sessions live in a database, which is not.
		WriteBack: under(data, "auth.json"),
		Env:       []string{"OPENCODE_*"},
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

// openCodeLine is what the decoder reads of one `opencode run --format
// json` line.
type openCodeLine struct {
	typ       []byte
	sessionID string
	part      openCodePart
	hasPart   bool
	err       openCodeError
	hasErr    bool
}

type openCodePart struct {
	typ, text, tool string
	state           struct {
		status string
		input  keyArgs
		output []byte // heads of the tool's output and error: what truncate keeps
		errOut []byte
	}
	hasState  bool
	tokens    struct{ input, output, reasoning, cacheRead, cacheWrite int64 }
	hasTokens bool
	cost      float64
	hasCost   bool
}

type openCodeError struct {
	name    string
	message string
	status  int
	headers map[string]string // the response's, for Retry-After
}

func (l *openCodeLine) reset() {
	p := &l.part
	*l = openCodeLine{typ: l.typ[:0]}
	l.part.state.output, l.part.state.errOut = p.state.output[:0], p.state.errOut[:0]
}

func (l *openCodeLine) read(s *jsonScanner) {
	s.object()
	for s.more() {
		switch string(s.name()) {
		case "type":
			readBytes(s, &l.typ)
		case "sessionID":
			s.str(&l.sessionID)
		case "part":
			l.readPart(s)
		case "error":
			l.readError(s)
		}
	}
}

func (l *openCodeLine) readPart(s *jsonScanner) {
	p := &l.part
	if s.null() {
		out, errOut := p.state.output[:0], p.state.errOut[:0]
		*p, l.hasPart = openCodePart{}, false
		p.state.output, p.state.errOut = out, errOut
		return
	}
	if !s.object() {
		return
	}
	l.hasPart = true
	for s.more() {
		switch string(s.name()) {
		case "type":
			s.str(&p.typ)
		case "text":
			s.str(&p.text)
		case "tool":
			s.str(&p.tool)
		case "state":
			p.readState(s)
		case "tokens":
			p.readTokens(s)
		case "cost":
			if s.null() {
				p.cost, p.hasCost = 0, false
			} else if s.float(&p.cost) {
				p.hasCost = true
			}
		}
	}
}

func (p *openCodePart) readState(s *jsonScanner) {
	st := &p.state
	if s.null() {
		st.status, st.input, p.hasState = "", keyArgs{}, false
		st.output, st.errOut = st.output[:0], st.errOut[:0]
		return
	}
	if !s.object() {
		return
	}
	p.hasState = true
	for s.more() {
		switch string(s.name()) {
		case "status":
			s.str(&st.status)
		case "input":
			st.input.read(s)
		case "output":
			if s.kind() == '"' {
				st.output = s.strHead(st.output[:0], maxToolResult+1)
			}
		case "error":
			if s.kind() == '"' {
				st.errOut = s.strHead(st.errOut[:0], maxToolResult+1)
			}
		}
	}
}

func (p *openCodePart) readTokens(s *jsonScanner) {
	t := &p.tokens
	if s.null() {
		*t, p.hasTokens = struct{ input, output, reasoning, cacheRead, cacheWrite int64 }{}, false
		return
	}
	if !s.object() {
		return
	}
	p.hasTokens = true
	for s.more() {
		switch string(s.name()) {
		case "input":
			s.int64(&t.input)
		case "output":
			s.int64(&t.output)
		case "reasoning":
			s.int64(&t.reasoning)
		case "cache":
			if !s.object() {
				continue
			}
			for s.more() {
				switch string(s.name()) {
				case "read":
					s.int64(&t.cacheRead)
				case "write":
					s.int64(&t.cacheWrite)
				}
			}
		}
	}
}

func (l *openCodeLine) readError(s *jsonScanner) {
	e := &l.err
	if s.null() {
		*e, l.hasErr = openCodeError{}, false
		return
	}
	if !s.object() {
		return
	}
	l.hasErr = true
	for s.more() {
		switch string(s.name()) {
		case "name":
			s.str(&e.name)
		case "data":
			if !s.object() {
				continue
			}
			for s.more() {
				switch string(s.name()) {
				case "message":
					s.str(&e.message)
				case "statusCode":
					s.int(&e.status)
				case "responseHeaders":
					e.readHeaders(s)
				}
			}
		}
	}
}

func (e *openCodeError) readHeaders(s *jsonScanner) {
	if s.null() {
		e.headers = nil
		return
	}
	if !s.object() {
		return
	}
	if e.headers == nil {
		e.headers = map[string]string{}
	}
	for s.more() {
		k := string(s.name())
		v := ""
		s.str(&v)
		e.headers[k] = v
	}
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

	s *jsonScanner
	l openCodeLine // the line being decoded
}

func newOpenCodeDecoder(now func() time.Time) *openCodeDecoder {
	return &openCodeDecoder{now: now, s: newJSONScanner()}
}

func (d *openCodeDecoder) Line(line []byte, emit func(Event)) {
	l := &d.l
	if !d.s.start(line) {
		return
	}
	l.reset()
	l.read(d.s)
	if !d.s.end() {
		return
	}
	if d.res.SessionID == "" {
		d.res.SessionID = l.sessionID
	}
	p := &l.part
	switch typ := string(l.typ); {
	case typ == "step_start":
		d.res.Turns++
	case typ == "text" && l.hasPart:
		if p.text == "" {
			return
		}
		d.lastText = p.text
		d.messages = appendMessage(d.messages, p.text)
		emit(Event{Kind: EventText, Text: p.text})
	case typ == "tool_use" && l.hasPart && p.hasState:
		emit(Event{Kind: EventToolCall, Tool: p.tool, ToolInput: p.state.input.String()})
		out := p.state.output
		if p.state.status == "error" {
			out = p.state.errOut
		}
		emit(Event{Kind: EventToolResult, Tool: p.tool, Text: truncateBytes(out, maxToolResult)})
	case typ == "step_finish" && l.hasPart:
		if p.hasTokens {
			t := p.tokens
			d.res.Usage = d.res.Usage.Add(Usage{
				InputTokens: t.input, OutputTokens: t.output + t.reasoning,
				CacheReadTokens: t.cacheRead, CacheWriteTokens: t.cacheWrite,
			})
			u := d.res.Usage
			emit(Event{Kind: EventUsage, Usage: &u})
		}
		if p.hasCost {
			d.res.CostUSD += p.cost
			d.res.HasCost = true
		}
	case typ == "error" && l.hasErr:
		d.error(&l.err, emit)
	}
}

func (d *openCodeDecoder) error(e *openCodeError, emit func(Event)) {
	msg := firstNonBlank(e.message, e.name, "error")
	d.errors = append(d.errors, msg)
	r := &d.res
	r.IsError = true
	if e.status != 0 {
		r.HTTPStatus = e.status
	}
	if e.name == "ProviderAuthError" {
		d.authErr = true
	}
	if at, ok := retryAfter(e.headers, d.now()); ok {
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
