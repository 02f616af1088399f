package agent

import (
	"encoding/json"
	"maps"
	"slices"
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
		ConfigDirs: append(xdg("config", "cursor"), "~/.cursor"),
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
}

func newCursorDecoder() *cursorDecoder { return &cursorDecoder{claudeDecoder: newClaudeDecoder()} }

type cursorLine struct {
	Type     string                     `json:"type"`
	Subtype  string                     `json:"subtype"`
	CallID   string                     `json:"call_id"`
	ToolCall map[string]json.RawMessage `json:"tool_call"`
	Usage    *struct {
		InputTokens      int64 `json:"inputTokens"`
		OutputTokens     int64 `json:"outputTokens"`
		CacheReadTokens  int64 `json:"cacheReadTokens"`
		CacheWriteTokens int64 `json:"cacheWriteTokens"`
	} `json:"usage"`
}

// cursorTool is one entry of tool_call: {"shellToolCall": {"args": ...,
// "result": ...}} or, in older versions, {"function": {"name", "arguments"}}.
type cursorTool struct {
	Args      map[string]json.RawMessage `json:"args"`
	Result    json.RawMessage            `json:"result"`
	Name      string                     `json:"name"`
	Arguments string                     `json:"arguments"`
}

func (d *cursorDecoder) Line(line []byte, emit func(Event)) {
	var l cursorLine
	if !decodeLine(line, &l) {
		return
	}
	switch l.Type {
	case "tool_call":
		d.toolCall(l, emit)
		return
	case "thinking":
		return // not the agent's words
	case "result":
		if u := l.Usage; u != nil {
			d.usage = &Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
		}
	}
	d.claudeDecoder.Line(line, emit)
}

func (d *cursorDecoder) toolCall(l cursorLine, emit func(Event)) {
	for _, key := range slices.Sorted(maps.Keys(l.ToolCall)) {
		if key == "result" {
			continue
		}
		var t cursorTool
		_ = json.Unmarshal(l.ToolCall[key], &t)
		if t.Result == nil {
			t.Result = l.ToolCall["result"] // beside a "function" entry
		}
		name := strings.TrimSuffix(key, "ToolCall")
		if key == "function" {
			name = t.Name
			_ = json.Unmarshal([]byte(t.Arguments), &t.Args)
		}
		switch l.Subtype {
		case "started":
			emit(Event{Kind: EventToolCall, Tool: name, ToolInput: keyArg(t.Args)})
		case "completed":
			emit(Event{Kind: EventToolResult, Tool: name, Text: truncate(cursorToolResult(t.Result), maxToolResult)})
		}
		return
	}
}

// cursorToolResult reads the text of a tool result:
// {"success": {"stdout", "stderr"} | {"content"}}, {"error": {...}}.
func cursorToolResult(raw json.RawMessage) string {
	var r struct {
		Success map[string]json.RawMessage `json:"success"`
		Error   json.RawMessage            `json:"error"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	if r.Success == nil {
		if msg := errorMessage(r.Error); msg != "" {
			return msg
		}
		return string(r.Error)
	}
	var parts []string
	for _, k := range []string{"stdout", "stderr", "content", "output", "message"} {
		var s string
		if json.Unmarshal(r.Success[k], &s) == nil && s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
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
