package agent

import (
	"slices"
	"strings"
	"time"
)

// droid is the Factory droid adapter.
type droid struct{ base }

// NewDroid returns the adapter for Factory's droid.
func NewDroid(opts Options) (Adapter, error) {
	b, err := newBase("droid", opts)
	return droid{b}, err
}

// droidSpec is what ralph knows about Factory's droid.
func droidSpec() Spec {
	return Spec{
		Name:    "droid",
		New:     NewDroid,
		Dialect: "droid-stream-json",
		Install: "npm install -g droid (or curl -fsSL https://app.factory.ai/cli | sh)",
		Credentials: Credentials{
			EnvVars: []string{"FACTORY_API_KEY"},
			Files:   []string{"~/.factory/auth.json"},
			Login:   "run `droid` and log in, or set FACTORY_API_KEY",
			Keyring: true,
		},
		Hosts: []string{"factory.ai", "*.factory.ai"},
		// settings.json names hooks, mcp.json MCP servers: reported,
		// never written back.
		ConfigDirs: []string{"~/.factory"},
		// Earlier sessions and their artifacts, logs, caches (certificates,
		// the session index), telemetry, the state of background tasks.
		Scratch: []string{"~/.factory/sessions", "~/.factory/artifacts", "~/.factory/logs", "~/.factory/cache",
			"~/.factory/certs", "~/.factory/telemetry", "~/.factory/background-*.json", "~/.factory/task-invocations.json"},
		// The tools it downloads (ripgrep).
		ReadOnly: []string{"~/.factory/bin"},
		// The login (plain, or encrypted), and this run's sessions.
		WriteBack:  []string{"~/.factory/auth.json", "~/.factory/auth.encrypted", "~/.factory/sessions/**/*.jsonl"},
		OwnSession: sessionsIn("sessions", slashed),
		Env:        []string{"FACTORY_*"},
	}
}

func (droid) Name() string { return "droid" }

// Invocation runs `droid exec -o stream-json --skip-permissions-unsafe [-m
// M]` with the prompt on stdin (droid exec reads a redirected stdin when
// no prompt argument is given).
func (d droid) Invocation(req Request) (Invocation, error) {
	return d.stdinInvocation(layout{
		exe:   "droid",
		flags: []string{"exec", "-o", "stream-json", "--skip-permissions-unsafe"},
		model: "-m",
	}, req), nil
}

func (d droid) NewDecoder() Decoder { return newDroidDecoder(d.now) }

// droidLine is what the decoder reads of one `droid exec -o stream-json`
// line.
type droidLine struct {
	typ, role    []byte
	sessionID    string
	text         string
	id           string
	toolName     string
	toolID       string
	parameters   keyArgs
	value        []byte // the head of a tool result's text: what truncate keeps
	message      string
	finalText    string
	hasFinalText bool
	numTurns     int
	usage        claudeUsage
	hasUsage     bool
}

func (l *droidLine) reset() {
	*l = droidLine{typ: l.typ[:0], role: l.role[:0], value: l.value[:0]}
}

func (l *droidLine) read(s *jsonScanner) {
	s.object()
	for s.more() {
		switch string(s.name()) {
		case "type":
			readBytes(s, &l.typ)
		case "session_id":
			s.str(&l.sessionID)
		case "role":
			readBytes(s, &l.role)
		case "text":
			s.str(&l.text)
		case "id":
			s.str(&l.id)
		case "toolName":
			s.str(&l.toolName)
		case "toolId":
			s.str(&l.toolID)
		case "parameters":
			l.parameters.read(s)
		case "value":
			l.value = readToolResult(s, l.value[:0])
		case "message":
			s.str(&l.message)
		case "finalText":
			readOptStr(s, &l.finalText, &l.hasFinalText)
		case "numTurns":
			s.int(&l.numTurns)
		case "usage":
			l.usage.read(s, &l.hasUsage)
		}
	}
}

// droidDecoder decodes droid's stream-json: messages, tool calls and
// results, errors, and a final completion event with the usage.
type droidDecoder struct {
	now       func() time.Time
	res       Result
	lastText  string
	messages  []string
	tools     map[string]string
	errors    []string
	completed bool

	s *jsonScanner
	l droidLine // the line being decoded
}

func newDroidDecoder(now func() time.Time) *droidDecoder {
	return &droidDecoder{now: now, tools: map[string]string{}, s: newJSONScanner()}
}

func (d *droidDecoder) Line(line []byte, emit func(Event)) {
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
	switch string(l.typ) {
	case "message":
		if string(l.role) != "assistant" || l.text == "" {
			return
		}
		d.lastText = l.text
		d.messages = appendMessage(d.messages, l.text)
		emit(Event{Kind: EventText, Text: l.text})
	case "tool_call":
		if len(d.tools) >= maxToolNames {
			clear(d.tools)
		}
		name := firstNonBlank(l.toolName, l.toolID)
		d.tools[l.id] = name
		emit(Event{Kind: EventToolCall, Tool: name, ToolInput: l.parameters.String()})
	case "tool_result":
		emit(Event{Kind: EventToolResult, Tool: firstNonBlank(d.tools[l.id], l.toolID), Text: truncateBytes(l.value, maxToolResult)})
	case "error":
		d.errors = append(d.errors, l.message)
		emit(Event{Kind: EventError, Text: l.message})
	case "completion":
		d.completed = true
		if l.hasFinalText {
			d.res.FinalText = l.finalText
		}
		d.res.Turns = l.numTurns
		if l.hasUsage {
			d.res.Usage = l.usage.usage()
		}
		u := d.res.Usage
		emit(Event{Kind: EventResult, Text: d.res.FinalText, Usage: &u})
	}
}

func (d *droidDecoder) Finish() Result {
	r := d.res
	if r.FinalText == "" {
		r.FinalText = d.lastText
	}
	r.Messages = slices.Clone(d.messages)
	if len(d.errors) > 0 && !d.completed {
		r.IsError = true
		// "429 Number of request tokens ..." from the agent loop, then
		// "Exec failed" from the CLI: both say something.
		r.ErrorText = strings.Join(d.errors, "; ")
		r.HTTPStatus = statusIn(d.errors...)
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
