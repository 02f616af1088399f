package agent

import (
	"encoding/json"
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
		ConfigDirs: []string{"~/.factory"},
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

// droidLine is the envelope of one `droid exec -o stream-json` line.
type droidLine struct {
	Type       string                     `json:"type"`
	SessionID  string                     `json:"session_id"`
	Role       string                     `json:"role"`
	Text       string                     `json:"text"`
	ID         string                     `json:"id"`
	ToolName   string                     `json:"toolName"`
	ToolID     string                     `json:"toolId"`
	Parameters map[string]json.RawMessage `json:"parameters"`
	IsError    bool                       `json:"isError"`
	Value      json.RawMessage            `json:"value"`
	Source     string                     `json:"source"`
	Message    string                     `json:"message"`
	FinalText  *string                    `json:"finalText"`
	NumTurns   int                        `json:"numTurns"`
	Usage      *claudeUsage               `json:"usage"`
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
}

func newDroidDecoder(now func() time.Time) *droidDecoder {
	return &droidDecoder{now: now, tools: map[string]string{}}
}

func (d *droidDecoder) Line(line []byte, emit func(Event)) {
	var l droidLine
	if !decodeLine(line, &l) {
		return
	}
	if d.res.SessionID == "" {
		d.res.SessionID = l.SessionID
	}
	switch l.Type {
	case "message":
		if l.Role != "assistant" || l.Text == "" {
			return
		}
		d.lastText = l.Text
		d.messages = appendMessage(d.messages, l.Text)
		emit(Event{Kind: EventText, Text: l.Text})
	case "tool_call":
		if len(d.tools) >= maxToolNames {
			clear(d.tools)
		}
		name := firstNonBlank(l.ToolName, l.ToolID)
		d.tools[l.ID] = name
		emit(Event{Kind: EventToolCall, Tool: name, ToolInput: keyArg(l.Parameters)})
	case "tool_result":
		emit(Event{Kind: EventToolResult, Tool: firstNonBlank(d.tools[l.ID], l.ToolID), Text: truncate(toolResultText(l.Value), maxToolResult)})
	case "error":
		d.errors = append(d.errors, l.Message)
		emit(Event{Kind: EventError, Text: l.Message})
	case "completion":
		d.completed = true
		if l.FinalText != nil {
			d.res.FinalText = *l.FinalText
		}
		d.res.Turns = l.NumTurns
		if l.Usage != nil {
			d.res.Usage = l.Usage.usage()
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
