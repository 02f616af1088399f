package agent

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// claudeLine is what the decoder reads of one Claude Code stream-json
// line: the fields it uses, for every line type at once. Everything else
// (tool_use_result copies of tool output, stream_event deltas, ...) is
// checked and skipped without being built.
type claudeLine struct {
	typ, subtype, sessionID []byte

	parent    string // parent_tool_use_id
	hasParent bool
	message   claudeMessage
	hasMsg    bool
	err       errorField

	// system/api_retry
	attempt, maxRetries, errorStatus int

	// rate_limit_event
	rateLimit    rateLimitInfo
	hasRateLimit bool

	// result
	result         string
	hasResult      bool
	isError        bool
	apiErrorStatus int
	errors         []string
	numTurns       int
	cost           float64
	hasCost        bool
	usage          claudeUsage
	hasUsage       bool
	contextWindows []modelWindow // modelUsage[*].contextWindow
}

type claudeMessage struct {
	id       string
	parts    []claudePart // content, when a list
	usage    claudeUsage
	hasUsage bool
}

type claudePart struct {
	typ       string
	text      string
	id, name  string
	input     keyArgs
	toolUseID string
	// content is the head of a tool result's text: what truncate keeps.
	content []byte
}

type rateLimitInfo struct {
	status        string
	resetsAt      float64
	rateLimitType string
	// utilization is the share of the window used, 0-1 (some versions).
	utilization    float64
	hasUtilization bool
}

type modelWindow struct {
	model string
	size  int64
}

type claudeUsage struct {
	InputTokens   int64
	OutputTokens  int64
	CacheRead     int64
	CacheCreation int64
	// camel is Cursor's spelling of the same counts (inputTokens, ...).
	camel Usage
}

func (u claudeUsage) usage() Usage {
	return Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheCreation}
}

// read reads a usage object; like encoding/json into a pointer to a
// struct, null clears it and a second object adds to the first.
func (u *claudeUsage) read(s *jsonScanner, has *bool) {
	if s.null() {
		*u, *has = claudeUsage{}, false
		return
	}
	if !s.object() {
		return
	}
	*has = true
	for s.more() {
		switch string(s.name()) {
		case "input_tokens":
			s.int64(&u.InputTokens)
		case "output_tokens":
			s.int64(&u.OutputTokens)
		case "cache_read_input_tokens":
			s.int64(&u.CacheRead)
		case "cache_creation_input_tokens":
			s.int64(&u.CacheCreation)
		case "inputTokens":
			s.int64(&u.camel.InputTokens)
		case "outputTokens":
			s.int64(&u.camel.OutputTokens)
		case "cacheReadTokens":
			s.int64(&u.camel.CacheReadTokens)
		case "cacheWriteTokens":
			s.int64(&u.camel.CacheWriteTokens)
		}
	}
}

// errorField is an "error" member: a string, or an object with a message.
type errorField struct {
	text     string
	isString bool
}

// read replaces f with the next value, whatever its type.
func (f *errorField) read(s *jsonScanner) {
	*f = errorField{}
	switch s.kind() {
	case '"':
		f.isString = s.str(&f.text)
	case '{':
		s.object()
		for s.more() {
			if string(s.name()) == "message" {
				s.str(&f.text)
			}
		}
	default:
		s.skip()
	}
}

// message is the error's text, as a string or as its object's message.
func (f errorField) message() string { return f.text }

// str is the error when it is a string.
func (f errorField) str() string {
	if f.isString {
		return f.text
	}
	return ""
}

// readOptStr reads a string member that encoding/json would have decoded
// into a *string: null clears it.
func readOptStr(s *jsonScanner, dst *string, has *bool) {
	if s.null() {
		*dst, *has = "", false
		return
	}
	if s.str(dst) {
		*has = true
	}
}

// readBytes copies the next value's content to *dst when it is a string.
func readBytes(s *jsonScanner, dst *[]byte) {
	if b, ok := s.strBytes(); ok {
		*dst = append((*dst)[:0], b...)
	}
}

// Bounds on what a decoder keeps.
const (
	maxMessages     = 20
	maxMessageBytes = 64 << 10
	maxToolResult   = 1000
	maxToolInput    = 200
	maxToolNames    = 1000
)

// claudeDecoder decodes Claude Code's stream-json. Qwen Code, Amp and Cursor
// print the same shape.
type claudeDecoder struct {
	res       Result
	gotResult bool
	lastText  string   // the last main-thread assistant text
	messages  []string // bounded, oldest first

	// Usage per assistant message: Claude prints one line per content
	// block, each repeating its message's usage, so lines are summed per
	// message id.
	msgID     string
	prevUsage Usage // the messages before msgID
	curUsage  Usage // msgID's latest usage
	sentUsage Usage
	turn      Usage // the last main-thread turn, for context use
	gotTurn   bool

	tools          map[string]string // tool_use id → tool name
	rejected       bool              // a rate_limit_event said the limit was hit
	quota          []QuotaWindow     // the latest rate_limit_event per window
	resetAt        time.Time
	retryStatus    int // the HTTP status of the last API retry
	inclusiveInput bool

	s *jsonScanner
	l claudeLine // the line being decoded
	// extra, when set, reads top-level members the Claude shape does not
	// have (Cursor's tool_call); a member it leaves is skipped.
	extra func(s *jsonScanner, name []byte)
}

// usage converts a line's usage; with inclusiveInput (Qwen Code, whose
// input_tokens include the cache reads, OpenAI style) the cache is taken
// out of the input.
func (d *claudeDecoder) usage(cu claudeUsage) Usage {
	u := cu.usage()
	if d.inclusiveInput {
		u.InputTokens = max(0, u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens)
	}
	return u
}

func newClaudeDecoder() *claudeDecoder {
	return &claudeDecoder{tools: map[string]string{}, s: newJSONScanner()}
}

func (d *claudeDecoder) Line(line []byte, emit func(Event)) {
	if d.read(line) {
		d.apply(emit)
	}
}

// read decodes line into d.l and reports whether it was a JSON object;
// anything else is noise. A line is checked whole, but for a user line
// (tool results) that names its type first: once the session is known,
// it is read up to its message only.
func (d *claudeDecoder) read(line []byte) bool {
	s, l := d.s, &d.l
	if !s.start(line) {
		return false
	}
	l.reset()
	s.object()
	userLine := false // a user line that said so first
	for first := true; s.more(); first = false {
		name := s.name()
		switch string(name) {
		case "type":
			readBytes(s, &l.typ)
			userLine = first && string(l.typ) == "user"
		case "subtype":
			readBytes(s, &l.subtype)
		case "session_id":
			readBytes(s, &l.sessionID)
		case "parent_tool_use_id":
			readOptStr(s, &l.parent, &l.hasParent)
		case "message":
			l.readMessage(s)
			if userLine && d.res.SessionID != "" && s.err == nil {
				// A user line carries tool results, and Claude Code
				// prints their output again after the message, in
				// tool_use_result: nothing there is used, so the rest of
				// the line is neither read nor checked.
				return true
			}
		case "error":
			l.err.read(s)
		case "attempt":
			s.int(&l.attempt)
		case "max_retries":
			s.int(&l.maxRetries)
		case "error_status":
			s.int(&l.errorStatus)
		case "rate_limit_info":
			l.readRateLimit(s)
		case "result":
			readOptStr(s, &l.result, &l.hasResult)
		case "is_error":
			s.bool(&l.isError)
		case "api_error_status":
			s.int(&l.apiErrorStatus)
		case "errors":
			l.readErrors(s)
		case "num_turns":
			s.int(&l.numTurns)
		case "total_cost_usd":
			if s.null() {
				l.cost, l.hasCost = 0, false
			} else if s.float(&l.cost) {
				l.hasCost = true
			}
		case "usage":
			l.usage.read(s, &l.hasUsage)
		case "modelUsage":
			l.readModelUsage(s)
		default:
			if d.extra != nil {
				d.extra(s, name)
			}
		}
	}
	return s.end()
}

// reset empties l for the next line, keeping its buffers.
func (l *claudeLine) reset() {
	parts := l.message.parts[:0]
	*l = claudeLine{
		typ: l.typ[:0], subtype: l.subtype[:0], sessionID: l.sessionID[:0],
		errors: l.errors[:0], contextWindows: l.contextWindows[:0],
	}
	l.message.parts = parts
}

func (l *claudeLine) readMessage(s *jsonScanner) {
	m := &l.message
	if s.null() {
		*m, l.hasMsg = claudeMessage{parts: m.parts[:0]}, false
		return
	}
	if !s.object() {
		return
	}
	l.hasMsg = true
	for s.more() {
		switch string(s.name()) {
		case "id":
			s.str(&m.id)
		case "content":
			// Parts, or a plain string (a user's prompt), which has none.
			m.parts = m.parts[:0]
			if !s.array() {
				continue
			}
			for s.more() {
				if s.kind() != '{' {
					continue
				}
				// A new part, keeping the buffer an earlier line left there.
				m.parts = slices.Grow(m.parts, 1)[:len(m.parts)+1]
				p := &m.parts[len(m.parts)-1]
				*p = claudePart{content: p.content[:0]}
				p.read(s)
			}
		case "usage":
			m.usage.read(s, &m.hasUsage)
		}
	}
}

func (p *claudePart) read(s *jsonScanner) {
	s.object()
	for s.more() {
		switch string(s.name()) {
		case "type":
			s.str(&p.typ)
		case "text":
			s.str(&p.text)
		case "id":
			s.str(&p.id)
		case "name":
			s.str(&p.name)
		case "input":
			p.input.read(s)
		case "tool_use_id":
			s.str(&p.toolUseID)
		case "content":
			p.content = readToolResult(s, p.content[:0])
		}
	}
}

// readToolResult appends the head of a tool result's text to dst: the
// content is a string, or text parts joined by newlines. Only what
// truncate(text, maxToolResult) keeps is unquoted; the rest of a tool's
// output, megabytes at times, is checked and skipped.
func readToolResult(s *jsonScanner, dst []byte) []byte {
	const n = maxToolResult + 1 // truncate looks at one byte past the cut
	switch s.kind() {
	case '"':
		dst = s.strHead(dst, n)
	case '[':
		dst = readTextParts(s, dst, n)
	default:
		s.skip()
	}
	return dst
}

// readTextParts reads a list of content parts and appends at least the
// first n bytes of its text parts joined by newlines (all of it when
// shorter).
func readTextParts(s *jsonScanner, dst []byte, n int) []byte {
	if !s.array() {
		return dst
	}
	var text []byte
	first := true
	for s.more() {
		if !s.object() {
			continue
		}
		isText := false
		text = text[:0]
		for s.more() {
			switch string(s.name()) {
			case "type":
				if b, ok := s.strBytes(); ok {
					isText = string(b) == "text"
				}
			case "text":
				if s.kind() == '"' && len(dst) <= n {
					text = s.strHead(text[:0], n)
				}
			}
		}
		if !isText || len(dst) > n {
			continue // once past n, later parts change nothing
		}
		if !first {
			dst = append(dst, '\n')
		}
		first = false
		dst = append(dst, text...)
	}
	return dst
}

func (l *claudeLine) readRateLimit(s *jsonScanner) {
	if s.null() {
		l.rateLimit, l.hasRateLimit = rateLimitInfo{}, false
		return
	}
	if !s.object() {
		return
	}
	l.hasRateLimit = true
	for s.more() {
		switch string(s.name()) {
		case "status":
			s.str(&l.rateLimit.status)
		case "resetsAt":
			s.float(&l.rateLimit.resetsAt)
		case "rateLimitType":
			s.str(&l.rateLimit.rateLimitType)
		case "utilization":
			l.rateLimit.hasUtilization = s.float(&l.rateLimit.utilization)
		}
	}
}

func (l *claudeLine) readErrors(s *jsonScanner) {
	if s.null() {
		l.errors = l.errors[:0]
		return
	}
	if !s.array() {
		return
	}
	l.errors = l.errors[:0]
	for s.more() {
		var e string
		s.str(&e)
		l.errors = append(l.errors, e)
	}
}

// readModelUsage reads modelUsage[*].contextWindow; as in a map, a model
// named twice keeps its last entry.
func (l *claudeLine) readModelUsage(s *jsonScanner) {
	if s.null() {
		l.contextWindows = l.contextWindows[:0]
		return
	}
	if !s.object() {
		return
	}
	for s.more() {
		w := modelWindow{model: string(s.name())}
		if s.object() {
			for s.more() {
				if string(s.name()) == "contextWindow" {
					s.int64(&w.size)
				}
			}
		}
		i := slices.IndexFunc(l.contextWindows, func(o modelWindow) bool { return o.model == w.model })
		if i < 0 {
			l.contextWindows = append(l.contextWindows, w)
		} else {
			l.contextWindows[i] = w
		}
	}
}

// apply acts on the line read.
func (d *claudeDecoder) apply(emit func(Event)) {
	l := &d.l
	isResult := string(l.typ) == "result"
	if d.res.SessionID == "" || isResult && len(l.sessionID) > 0 {
		if len(l.sessionID) > 0 {
			d.res.SessionID = string(l.sessionID)
		}
	}
	switch string(l.typ) {
	case "system":
		if string(l.subtype) == "api_retry" {
			d.retryStatus = l.errorStatus
			emit(Event{Kind: EventError, Text: retryText(l)})
		}
	case "assistant":
		d.assistant(l, emit)
	case "user":
		d.user(l, emit)
	case "rate_limit_event":
		d.rateLimit(l, emit)
	case "result":
		d.result(l, emit)
	}
	// stream_event lines (--include-partial-messages) repeat, in pieces,
	// what the assistant lines then say whole: ignored, so no text is
	// counted twice.
}

func retryText(l *claudeLine) string {
	why := l.err.str()
	switch {
	case l.errorStatus != 0 && why != "":
		why = fmt.Sprintf("HTTP %d (%s)", l.errorStatus, why)
	case l.errorStatus != 0:
		why = fmt.Sprintf("HTTP %d", l.errorStatus)
	case why == "":
		why = "error"
	}
	return fmt.Sprintf("API retry %d/%d: %s", l.attempt, l.maxRetries, why)
}

func (d *claudeDecoder) assistant(l *claudeLine, emit func(Event)) {
	if !l.hasMsg {
		return
	}
	// A subagent's messages (Task tool) are not the agent's own words: they
	// never reach Messages or FinalText, and its tokens are not this
	// thread's context.
	sub := l.hasParent && l.parent != ""
	var texts []string
	for i := range l.message.parts {
		p := &l.message.parts[i]
		switch p.typ {
		case "text":
			if p.text == "" || sub {
				continue
			}
			texts = append(texts, p.text)
			emit(Event{Kind: EventText, Text: p.text})
		case "tool_use":
			if len(d.tools) >= maxToolNames {
				clear(d.tools)
			}
			d.tools[p.id] = p.name
			emit(Event{Kind: EventToolCall, Tool: p.name, ToolInput: p.input.String()})
		}
	}
	if len(texts) > 0 {
		d.lastText = strings.Join(texts, "\n")
		d.addMessage(d.lastText)
	}
	if !l.message.hasUsage || sub {
		return
	}
	u := d.usage(l.message.usage)
	if l.message.id == "" || l.message.id != d.msgID {
		d.prevUsage = d.prevUsage.Add(d.curUsage)
		d.msgID = l.message.id
	}
	d.curUsage, d.turn, d.gotTurn = u, u, true
	if sum := d.prevUsage.Add(d.curUsage); sum != d.sentUsage {
		d.sentUsage = sum
		emit(Event{Kind: EventUsage, Usage: &sum})
	}
}

func (d *claudeDecoder) addMessage(s string) {
	if len(s) > maxMessageBytes {
		// Keep the end: that is where markers are.
		s = string(utf8Start([]byte(s[len(s)-maxMessageBytes:])))
	}
	if len(d.messages) == maxMessages {
		d.messages = slices.Delete(d.messages, 0, 1)
	}
	d.messages = append(d.messages, s)
}

// user lines carry tool results: shown, never part of the agent's words.
func (d *claudeDecoder) user(l *claudeLine, emit func(Event)) {
	if !l.hasMsg {
		return
	}
	for i := range l.message.parts {
		p := &l.message.parts[i]
		if p.typ == "tool_result" {
			emit(Event{Kind: EventToolResult, Tool: d.tools[p.toolUseID], Text: truncateBytes(p.content, maxToolResult)})
		}
	}
}

// rateLimit reads rate_limit_event: "allowed" and "allowed_warning" are
// information; anything else means the subscription's limit was hit, and
// resetsAt (unix seconds) says until when.
func (d *claudeDecoder) rateLimit(l *claudeLine, emit func(Event)) {
	info := l.rateLimit
	if l.hasRateLimit && info.status != "" {
		d.noteQuota(info)
	}
	if !l.hasRateLimit || info.status == "" || strings.HasPrefix(info.status, "allowed") {
		return
	}
	d.rejected = true
	text := "rate limit " + info.status
	if info.rateLimitType != "" {
		text += " (" + info.rateLimitType + ")"
	}
	if info.resetsAt > 0 {
		d.resetAt = time.Unix(int64(info.resetsAt), 0).UTC()
		text += ", resets " + d.resetAt.Format(time.RFC3339)
	}
	emit(Event{Kind: EventError, Text: text})
}

// noteQuota keeps the latest state of the event's window, for the loop's
// quota pacing.
func (d *claudeDecoder) noteQuota(info rateLimitInfo) {
	w := QuotaWindow{Window: cmp.Or(info.rateLimitType, "unknown"), Status: info.status}
	if info.hasUtilization {
		// Reported as a fraction (0.85); a value above 1 is taken as a
		// percentage already.
		w.Utilization, w.HasUtilization = info.utilization, true
		if w.Utilization <= 1 {
			w.Utilization *= 100
		}
	}
	if info.resetsAt > 0 {
		w.ResetsAt = time.Unix(int64(info.resetsAt), 0).UTC()
	}
	i := slices.IndexFunc(d.quota, func(q QuotaWindow) bool { return q.Window == w.Window })
	if i < 0 {
		d.quota = append(d.quota, w)
	} else {
		d.quota[i] = w
	}
}

func (d *claudeDecoder) result(l *claudeLine, emit func(Event)) {
	d.gotResult = true
	r := &d.res
	if l.hasResult {
		r.FinalText = l.result
	} else {
		r.FinalText = d.lastText // error subtypes carry no result text
	}
	r.IsError = l.isError
	r.HTTPStatus = l.apiErrorStatus
	r.Turns = l.numTurns
	if l.hasCost {
		r.CostUSD, r.HasCost = l.cost, true
	}
	if l.hasUsage {
		r.Usage = d.usage(l.usage)
	} else {
		r.Usage = d.prevUsage.Add(d.curUsage)
	}
	for _, m := range l.contextWindows {
		r.ContextWindow = max(r.ContextWindow, m.size)
	}
	r.ErrorText = ""
	if r.IsError {
		switch {
		case l.hasResult && l.result != "":
			r.ErrorText = l.result
		case len(l.errors) > 0:
			r.ErrorText = strings.Join(l.errors, "; ")
		case l.err.message() != "":
			// Qwen Code: "error": {"message": ...}; Amp: "error": "...".
			r.ErrorText = l.err.message()
		default:
			r.ErrorText = cmp.Or(string(l.subtype), "error")
		}
		emit(Event{Kind: EventError, Text: r.ErrorText})
	}
	u := r.Usage
	emit(Event{Kind: EventResult, Text: r.FinalText, Usage: &u})
}

func (d *claudeDecoder) Finish() Result {
	r := d.res
	if !d.gotResult {
		// Crashed or killed: the last thing the agent said is its final
		// text, and the tokens are what its messages reported.
		r.FinalText = d.lastText
		r.Usage = d.prevUsage.Add(d.curUsage)
	}
	r.Messages = slices.Clone(d.messages)
	r.ResetAt = d.resetAt
	r.Quota = slices.Clone(d.quota)
	if r.ContextWindow > 0 && d.gotTurn {
		used := d.turn.InputTokens + d.turn.CacheReadTokens + d.turn.CacheWriteTokens
		r.ContextUsedPercent = float64(used) / float64(r.ContextWindow) * 100
	}
	if r.IsError {
		if r.HTTPStatus == 0 {
			r.HTTPStatus = cmp.Or(statusInText(r.ErrorText), d.retryStatus)
		}
		r.ErrorKind = classifyClaude(r.HTTPStatus, r.ErrorText, d.rejected)
		if r.ResetAt.IsZero() {
			r.ResetAt = resetInText(r.ErrorText)
		}
	}
	return r
}

// classifyClaude reads the structured status first, the text only to tell
// a subscription's usage limit from a per-minute rate limit.
func classifyClaude(status int, text string, rejected bool) ErrorKind {
	usageLimit := rejected || mentionsUsageLimit(text)
	switch {
	case (status == 429 || status == 0) && usageLimit:
		return ErrorUsageLimit
	case status == 429:
		return ErrorRateLimit
	case status >= 500 && status <= 599:
		return ErrorTransient // 529 is "overloaded"
	case status == 401 || status == 403:
		return ErrorFatal
	}
	return ErrorOther
}

var (
	// "API Error: 500 {...}", "API Error: Request rejected (429) · ..."
	claudeStatusRE = regexp.MustCompile(`API Error: (?:(\d{3})\b|[^\n(]*\((\d{3})\))`)
	// "Claude AI usage limit reached|1712345678" (older Claude Code).
	resetRE = regexp.MustCompile(`usage limit reached\|(\d{9,11})`)
)

func statusInText(text string) int {
	m := claudeStatusRE.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1] + m[2])
	return n
}

func resetInText(text string) time.Time {
	m := resetRE.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return time.Unix(n, 0).UTC()
}
