package agent

import (
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
	dirs := []string{"$CODEX_HOME", "~/.codex"}
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
		Hosts: []string{"api.openai.com", "*.openai.com", "chatgpt.com", "*.chatgpt.com"},
		// CODEX_HOME replaces ~/.codex. config.toml names MCP servers and
		// a notify program, rules/ the commands allowed without asking:
		// reported, never written back.
		ConfigDirs: dirs,
		// Earlier sessions, logs, shell snapshots, helper links made at
		// each start, its databases (threads, logs, goals, memories,
		// queue: made afresh when missing), the system skills it
		// unpacks at each start, and its lock files.
		Scratch: under(dirs, "sessions", "archived_sessions", "log", "shell_snapshots", "tmp",
			"*.sqlite*", "skills/.system", "thread-writer-locks"),
		// The login, and this run's sessions (codex resume finds them).
		WriteBack:  under(dirs, "auth.json", "sessions/**/*.jsonl"),
		OwnSession: codexSession,
		Env:        []string{"OPENAI_*", "CODEX_*"},
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

// codexLine is what the decoder reads of one `codex exec --json` line.
type codexLine struct {
	typ      []byte
	threadID string
	message  string // error
	item     codexItem
	hasItem  bool
	usage    codexUsage // turn.completed
	hasUsage bool
	err      codexError // turn.failed
	hasErr   bool
}

func (l *codexLine) reset() {
	*l = codexLine{typ: l.typ[:0], item: codexItem{output: l.item.output[:0], changes: l.item.changes[:0]}}
}

type codexItem struct {
	id      string
	typ     string
	text    string // agent_message, reasoning
	message string // error
	command string
	// output is the head of aggregated_output (command_execution) or of
	// the result's text parts (mcp_tool_call): what truncate keeps.
	output    []byte
	resultOut []byte
	changes   []codexChange // file_change
	server    string        // mcp_tool_call
	tool      string
	arguments keyArgs
	err       codexError
	hasErr    bool
	query     string // web_search
}

type codexChange struct {
	path, kind string
}

// codexUsage counts a thread's tokens so far: input includes the cached
// (and cache-written) tokens, output includes reasoning.
type codexUsage struct {
	InputTokens       int64
	CachedInputTokens int64
	CacheWriteTokens  int64
	OutputTokens      int64
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
	Message         string
	Type            string
	ResetsInSeconds *float64
	ResetsAt        *int64
}

func (e *codexError) read(s *jsonScanner, has *bool) {
	if s.null() {
		*e, *has = codexError{}, false
		return
	}
	if !s.object() {
		return
	}
	*has = true
	for s.more() {
		switch string(s.name()) {
		case "message":
			s.str(&e.Message)
		case "type":
			s.str(&e.Type)
		case "resets_in_seconds":
			var f float64
			if s.null() {
				e.ResetsInSeconds = nil
			} else if s.float(&f) {
				e.ResetsInSeconds = &f
			}
		case "resets_at":
			var n int64
			if s.null() {
				e.ResetsAt = nil
			} else if s.int64(&n) {
				e.ResetsAt = &n
			}
		}
	}
}

func (l *codexLine) read(s *jsonScanner) {
	s.object()
	for s.more() {
		switch string(s.name()) {
		case "type":
			readBytes(s, &l.typ)
		case "thread_id":
			s.str(&l.threadID)
		case "message":
			s.str(&l.message)
		case "item":
			l.readItem(s)
		case "usage":
			l.readUsage(s)
		case "error":
			l.err.read(s, &l.hasErr)
		}
	}
}

func (l *codexLine) readUsage(s *jsonScanner) {
	if s.null() {
		l.usage, l.hasUsage = codexUsage{}, false
		return
	}
	if !s.object() {
		return
	}
	l.hasUsage = true
	u := &l.usage
	for s.more() {
		switch string(s.name()) {
		case "input_tokens":
			s.int64(&u.InputTokens)
		case "cached_input_tokens":
			s.int64(&u.CachedInputTokens)
		case "cache_write_input_tokens":
			s.int64(&u.CacheWriteTokens)
		case "output_tokens":
			s.int64(&u.OutputTokens)
		}
	}
}

func (l *codexLine) readItem(s *jsonScanner) {
	it := &l.item
	if s.null() {
		*it, l.hasItem = codexItem{output: it.output[:0], changes: it.changes[:0]}, false
		return
	}
	if !s.object() {
		return
	}
	l.hasItem = true
	for s.more() {
		switch string(s.name()) {
		case "id":
			s.str(&it.id)
		case "type":
			s.str(&it.typ)
		case "text":
			s.str(&it.text)
		case "message":
			s.str(&it.message)
		case "command":
			s.str(&it.command)
		case "aggregated_output":
			if s.kind() == '"' {
				it.output = s.strHead(it.output[:0], maxToolResult+1)
			}
		case "changes":
			it.readChanges(s)
		case "server":
			s.str(&it.server)
		case "tool":
			s.str(&it.tool)
		case "arguments":
			// Kept raw and decoded apart before: a second "arguments"
			// replaces the first.
			it.arguments = keyArgs{}
			it.arguments.read(s)
		case "result":
			it.readResult(s)
		case "error":
			it.err.read(s, &it.hasErr)
		case "query":
			s.str(&it.query)
		}
	}
}

func (it *codexItem) readChanges(s *jsonScanner) {
	if s.null() {
		it.changes = it.changes[:0]
		return
	}
	if !s.array() {
		return
	}
	it.changes = it.changes[:0]
	for s.more() {
		var c codexChange
		if s.object() {
			for s.more() {
				switch string(s.name()) {
				case "path":
					s.str(&c.path)
				case "kind":
					s.str(&c.kind)
				}
			}
		}
		it.changes = append(it.changes, c)
	}
}

// readResult reads an MCP tool's result, {"content": [parts]}, keeping
// the head of its text parts.
func (it *codexItem) readResult(s *jsonScanner) {
	it.resultOut = it.resultOut[:0]
	if !s.object() {
		return
	}
	for s.more() {
		if string(s.name()) != "content" {
			continue
		}
		it.resultOut = it.resultOut[:0]
		if s.kind() == '[' {
			it.resultOut = readTextParts(s, it.resultOut, maxToolResult+1)
		}
	}
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

	failed    bool       // turn.failed
	completed bool       // a turn.completed after the last error
	errText   string     // turn.failed's message, else the last error event's
	errObj    codexError // the failure's structured error, if hasErrObj
	hasErrObj bool

	s *jsonScanner
	l codexLine // the line being decoded
}

func newCodexDecoder(now func() time.Time) *codexDecoder {
	return &codexDecoder{now: now, started: map[string]bool{}, s: newJSONScanner()}
}

func (d *codexDecoder) Line(line []byte, emit func(Event)) {
	l := &d.l
	if !d.s.start(line) {
		return
	}
	l.reset()
	l.read(d.s)
	if !d.s.end() {
		return
	}
	switch string(l.typ) {
	case "thread.started":
		d.res.SessionID = l.threadID
	case "turn.started":
		d.res.Turns++
	case "item.started":
		if l.hasItem {
			d.itemStarted(&l.item, emit)
		}
	case "item.completed":
		if l.hasItem {
			d.itemCompleted(&l.item, emit)
		}
	case "turn.completed":
		if l.hasUsage {
			// Cumulative for the thread: the latest replaces, never adds.
			d.usage, d.gotUsage = l.usage.usage(), true
			u := d.usage
			emit(Event{Kind: EventUsage, Usage: &u})
		}
		d.completed = true
	case "turn.failed":
		d.failed, d.completed = true, false
		last := d.errText
		if l.hasErr {
			d.errText, d.errObj, d.hasErrObj = l.err.Message, l.err, true
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
			d.errText = l.message
		}
		emit(Event{Kind: EventError, Text: l.message})
	}
}

func (d *codexDecoder) itemStarted(it *codexItem, emit func(Event)) {
	switch it.typ {
	case "command_execution", "mcp_tool_call", "web_search":
		if len(d.started) >= maxToolNames {
			clear(d.started)
		}
		d.started[it.id] = true
		emit(codexToolCall(it))
	}
}

func (d *codexDecoder) itemCompleted(it *codexItem, emit func(Event)) {
	switch it.typ {
	case "agent_message":
		if it.text == "" {
			return
		}
		d.lastText = it.text
		d.messages = appendMessage(d.messages, it.text)
		emit(Event{Kind: EventText, Text: it.text})
	case "command_execution", "mcp_tool_call", "web_search":
		if !d.started[it.id] {
			emit(codexToolCall(it))
		}
		delete(d.started, it.id)
		if it.typ == "web_search" {
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
		emit(Event{Kind: EventError, Text: it.message})
	}
}

func codexToolCall(it *codexItem) Event {
	switch it.typ {
	case "command_execution":
		return Event{Kind: EventToolCall, Tool: "shell", ToolInput: oneLine(it.command)}
	case "mcp_tool_call":
		return Event{Kind: EventToolCall, Tool: it.server + "." + it.tool, ToolInput: it.arguments.String()}
	case "web_search":
		return Event{Kind: EventToolCall, Tool: "web_search", ToolInput: oneLine(it.query)}
	}
	var paths []string
	for _, c := range it.changes {
		paths = append(paths, strings.TrimSpace(c.kind+" "+c.path))
	}
	return Event{Kind: EventToolCall, Tool: "file_change", ToolInput: oneLine(strings.Join(paths, ", "))}
}

// codexToolOutput returns the head of a tool's output.
func codexToolOutput(it *codexItem) string {
	if it.typ == "command_execution" {
		return string(it.output)
	}
	if it.hasErr && it.err.Message != "" {
		return it.err.Message
	}
	return string(it.resultOut)
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
		if d.hasErrObj {
			e := d.errObj
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
