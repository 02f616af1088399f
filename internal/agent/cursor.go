package agent

import (
	"encoding/json"
	"strings"
)

// cursor is the Cursor agent CLI adapter.
type cursor struct{ base }

// NewCursor returns the adapter for the Cursor agent CLI.
func NewCursor(opts Options) (Adapter, error) {
	b, err := newBase("cursor", opts)
	return cursor{b}, err
}

// cursorSpec is what ralph knows about the Cursor agent CLI.
func cursorSpec() Spec {
	return Spec{
		Name:    "cursor",
		New:     NewCursor,
		Dialect: "cursor-stream-json",
		Install: "curl https://cursor.com/install -fsS | bash",
		Credentials: Credentials{
			EnvVars: []string{"CURSOR_API_KEY"},
			Files:   []string{"~/.config/cursor/auth.json", "~/.cursor/cli-config.json"},
			Login:   "run `cursor-agent login`, or set CURSOR_API_KEY",
			Keyring: true,
		},
		Hosts: []string{"cursor.com", "*.cursor.com", "*.cursor.sh"},
		// ~/.cursor/cli-config.json holds the permissions, mcp.json MCP
		// servers: reported, never written back.
		ConfigDirs: append(xdg("config", "cursor"), "~/.cursor"),
		// Earlier chats (a database each).
		Scratch: []string{"~/.cursor/chats"},
		// The Cursor editor's extensions, which share the directory.
		ReadOnly: []string{"~/.cursor/extensions"},
		// The login.
		WriteBack: xdg("config", "cursor/auth.json"),
		Env:       []string{"CURSOR_*"},
	}
}

func (cursor) Name() string { return "cursor" }

// Invocation runs `cursor-agent -p --output-format stream-json --force
// --trust [--model M]` with the prompt on stdin (print mode reads a piped
// stdin as the prompt). --trust trusts the workspace, which headless runs
// otherwise stop to ask about.
func (c cursor) Invocation(req Request) (Invocation, error) {
	return c.stdinInvocation(layout{
		exe:   "cursor-agent",
		flags: []string{"-p", "--output-format", "stream-json", "--force", "--trust"},
		model: "--model",
	}, req), nil
}

func (cursor) NewDecoder() Decoder { return newCursorDecoder() }

// cursorDecoder reads Cursor's stream-json: Claude Code's shape for
// system, user, assistant and result lines, plus its own tool_call lines
// (started, completed) and thinking lines. Its result text is all the
// assistant text of the run joined; the final text is the last assistant
// message instead, as for every other agent.
type cursorDecoder struct {
	*claudeDecoder
	usage *Usage // from the result line, where a version reports it

	// The line's tool_call: {"shellToolCall": {"args": ..., "result":
	// ...}} or, in older versions, {"function": {"name", "arguments"},
	// "result": ...}. The first entry in name order is the call; its value
	// is kept raw and read once the line has proved valid.
	call          []byte
	callName      string
	hasCall       bool
	callResult    []byte // the "result" entry beside "function"
	hasCallResult bool
	sub           *jsonScanner // reads the kept values
}

func newCursorDecoder() *cursorDecoder {
	d := &cursorDecoder{claudeDecoder: newClaudeDecoder(), sub: newJSONScanner()}
	d.extra = d.readToolCall
	return d
}

// readToolCall reads the tool_call member of a line.
func (d *cursorDecoder) readToolCall(s *jsonScanner, name []byte) {
	if string(name) != "tool_call" {
		return
	}
	if s.null() {
		d.hasCall, d.hasCallResult = false, false
		return
	}
	if !s.object() {
		return
	}
	for s.more() {
		key := string(s.name())
		if key == "result" {
			d.callResult, d.hasCallResult = append(d.callResult[:0], s.raw()...), s.err == nil
			continue
		}
		if d.hasCall && key > d.callName {
			continue
		}
		d.callName = key
		d.call, d.hasCall = append(d.call[:0], s.raw()...), s.err == nil
	}
}

func (d *cursorDecoder) Line(line []byte, emit func(Event)) {
	d.hasCall, d.hasCallResult = false, false
	if !d.read(line) {
		return
	}
	l := &d.l
	switch string(l.typ) {
	case "tool_call":
		d.toolCall(emit)
		return
	case "thinking":
		return // not the agent's words
	case "result":
		if l.hasUsage {
			u := l.usage.camel
			d.usage = &u
		}
	}
	d.apply(emit)
}

// cursorTool is one entry of tool_call.
type cursorTool struct {
	args      keyArgs
	result    []byte // raw
	hasResult bool
	name      string
	arguments string
}

func (d *cursorDecoder) toolCall(emit func(Event)) {
	if !d.hasCall {
		return
	}
	var t cursorTool
	s := d.sub
	if s.start(d.call) {
		s.object()
		for s.more() {
			switch string(s.name()) {
			case "args":
				t.args.read(s)
			case "result":
				t.result, t.hasResult = append(t.result[:0], s.raw()...), s.err == nil
			case "name":
				s.str(&t.name)
			case "arguments":
				s.str(&t.arguments)
			}
		}
		if !s.end() {
			t = cursorTool{} // not an object: nothing decoded, as before
		}
	}
	if !t.hasResult {
		t.result, t.hasResult = d.callResult, d.hasCallResult // beside a "function" entry
	}
	name := strings.TrimSuffix(d.callName, "ToolCall")
	if d.callName == "function" {
		name = t.name
		t.args = d.functionArgs(t.args, t.arguments)
	}
	switch string(d.l.subtype) {
	case "started":
		emit(Event{Kind: EventToolCall, Tool: name, ToolInput: t.args.String()})
	case "completed":
		text := ""
		if t.hasResult {
			text = d.toolResult(t.result)
		}
		emit(Event{Kind: EventToolResult, Tool: name, Text: truncate(text, maxToolResult)})
	}
}

// functionArgs adds the arguments of an older version's function call, a
// JSON object in a string, to args; as encoding/json does, anything but an
// object or null leaves args as they are.
func (d *cursorDecoder) functionArgs(args keyArgs, arguments string) keyArgs {
	s := d.sub
	if strings.TrimSpace(arguments) == "null" {
		return keyArgs{}
	}
	if !s.start([]byte(arguments)) {
		return args
	}
	merged := args
	merged.read(s)
	if !s.end() {
		return args
	}
	return merged
}

// toolResult reads the text of a tool result: {"success": {"stdout",
// "stderr"} | {"content"}}, {"error": {...}}.
func (d *cursorDecoder) toolResult(raw []byte) string {
	s := d.sub
	if string(raw) == "null" {
		return ""
	}
	if !s.start(raw) {
		return ""
	}
	var (
		outs       [5][]byte // stdout, stderr, content, output, message
		hasSuccess bool
		errRaw     []byte
		hasErr     bool
		typeErr    bool
	)
	s.object()
	for s.more() {
		switch string(s.name()) {
		case "success":
			if s.null() {
				outs, hasSuccess = [5][]byte{}, false
				continue
			}
			if !s.object() {
				typeErr = true
				continue
			}
			hasSuccess = true
			for s.more() {
				i := cursorOutputIndex(s.name())
				if i < 0 {
					continue
				}
				outs[i] = outs[i][:0]
				if s.kind() == '"' {
					outs[i] = s.strHead(outs[i], maxToolResult+1)
				}
			}
		case "error":
			errRaw, hasErr = append(errRaw[:0], s.raw()...), true
		}
	}
	if !s.end() || typeErr {
		return ""
	}
	if !hasSuccess {
		if msg := errorMessage(errRaw); msg != "" {
			return msg
		}
		if !hasErr {
			return ""
		}
		return string(errRaw)
	}
	var parts []string
	for _, o := range outs {
		if len(o) > 0 {
			parts = append(parts, string(o))
		}
	}
	return strings.Join(parts, "\n")
}

// cursorOutputIndex ranks the members of a successful result that hold
// its output, in the order they are shown.
func cursorOutputIndex(name []byte) int {
	switch string(name) {
	case "stdout":
		return 0
	case "stderr":
		return 1
	case "content":
		return 2
	case "output":
		return 3
	case "message":
		return 4
	}
	return -1
}

// errorMessage reads an error value that is a string or an object with a
// message. Only Cursor's failed tool results need it, rarely, so it
// stays on encoding/json.
func errorMessage(raw json.RawMessage) string {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	var obj struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &obj)
	return obj.Message
}

func (d *cursorDecoder) Finish() Result {
	r := d.claudeDecoder.Finish()
	if d.lastText != "" && !r.IsError {
		r.FinalText = d.lastText
	}
	if d.usage != nil {
		r.Usage = *d.usage
	}
	return r
}
