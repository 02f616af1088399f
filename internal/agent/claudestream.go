package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// claudeLine is the envelope of one Claude Code stream-json line: only the
// fields the decoder reads, for every line type at once.
type claudeLine struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	Message         *claudeMessage  `json:"message"`
	Error           json.RawMessage `json:"error"`

	// system/api_retry
	Attempt     int `json:"attempt"`
	MaxRetries  int `json:"max_retries"`
	ErrorStatus int `json:"error_status"`

	// rate_limit_event
	RateLimitInfo *struct {
		Status        string  `json:"status"`
		ResetsAt      float64 `json:"resetsAt"`
		RateLimitType string  `json:"rateLimitType"`
	} `json:"rate_limit_info"`

	// result
	Result         *string      `json:"result"`
	IsError        bool         `json:"is_error"`
	APIErrorStatus int          `json:"api_error_status"`
	Errors         []string     `json:"errors"`
	NumTurns       int          `json:"num_turns"`
	TotalCostUSD   *float64     `json:"total_cost_usd"`
	Usage          *claudeUsage `json:"usage"`
	ModelUsage     map[string]struct {
		ContextWindow int64 `json:"contextWindow"`
	} `json:"modelUsage"`
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Content json.RawMessage `json:"content"` // parts, or a plain string
	Usage   *claudeUsage    `json:"usage"`
}

type claudePart struct {
	Type      string                     `json:"type"`
	Text      string                     `json:"text"`
	ID        string                     `json:"id"`
	Name      string                     `json:"name"`
	Input     map[string]json.RawMessage `json:"input"`
	ToolUseID string                     `json:"tool_use_id"`
	Content   json.RawMessage            `json:"content"` // a string, or text parts
}

type claudeUsage struct {
	InputTokens   int64 `json:"input_tokens"`
	OutputTokens  int64 `json:"output_tokens"`
	CacheRead     int64 `json:"cache_read_input_tokens"`
	CacheCreation int64 `json:"cache_creation_input_tokens"`
}

func (u claudeUsage) usage() Usage {
	return Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheCreation}
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
	resetAt        time.Time
	retryStatus    int // the HTTP status of the last API retry
	inclusiveInput bool
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

func newClaudeDecoder() *claudeDecoder { return &claudeDecoder{tools: map[string]string{}} }

func (d *claudeDecoder) Line(line []byte, emit func(Event)) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var l claudeLine
	if err := json.Unmarshal(line, &l); err != nil {
		// A field of an unexpected type is skipped, the rest decoded;
		// anything else is noise.
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return
		}
	}
	if d.res.SessionID == "" || l.Type == "result" && l.SessionID != "" {
		d.res.SessionID = cmp.Or(l.SessionID, d.res.SessionID)
	}
	switch l.Type {
	case "system":
		if l.Subtype == "api_retry" {
			d.retryStatus = l.ErrorStatus
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

// errorMessage reads an error field that is a string or an object with a
// message.
func errorMessage(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &obj)
	return obj.Message
}

func retryText(l claudeLine) string {
	var why string
	_ = json.Unmarshal(l.Error, &why)
	switch {
	case l.ErrorStatus != 0 && why != "":
		why = fmt.Sprintf("HTTP %d (%s)", l.ErrorStatus, why)
	case l.ErrorStatus != 0:
		why = fmt.Sprintf("HTTP %d", l.ErrorStatus)
	case why == "":
		why = "error"
	}
	return fmt.Sprintf("API retry %d/%d: %s", l.Attempt, l.MaxRetries, why)
}

func (d *claudeDecoder) assistant(l claudeLine, emit func(Event)) {
	if l.Message == nil {
		return
	}
	// A subagent's messages (Task tool) are not the agent's own words: they
	// never reach Messages or FinalText, and its tokens are not this
	// thread's context.
	sub := l.ParentToolUseID != nil && *l.ParentToolUseID != ""
	var parts []claudePart
	_ = json.Unmarshal(l.Message.Content, &parts)
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text == "" || sub {
				continue
			}
			texts = append(texts, p.Text)
			emit(Event{Kind: EventText, Text: p.Text})
		case "tool_use":
			if len(d.tools) >= maxToolNames {
				clear(d.tools)
			}
			d.tools[p.ID] = p.Name
			emit(Event{Kind: EventToolCall, Tool: p.Name, ToolInput: keyArg(p.Input)})
		}
	}
	if len(texts) > 0 {
		d.lastText = strings.Join(texts, "\n")
		d.addMessage(d.lastText)
	}
	if l.Message.Usage == nil || sub {
		return
	}
	u := d.usage(*l.Message.Usage)
	if l.Message.ID == "" || l.Message.ID != d.msgID {
		d.prevUsage = d.prevUsage.Add(d.curUsage)
		d.msgID = l.Message.ID
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
func (d *claudeDecoder) user(l claudeLine, emit func(Event)) {
	if l.Message == nil {
		return
	}
	var parts []claudePart
	_ = json.Unmarshal(l.Message.Content, &parts)
	for _, p := range parts {
		if p.Type == "tool_result" {
			emit(Event{Kind: EventToolResult, Tool: d.tools[p.ToolUseID], Text: truncate(toolResultText(p.Content), maxToolResult)})
		}
	}
}

func toolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []claudePart
	_ = json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// rateLimit reads rate_limit_event: "allowed" and "allowed_warning" are
// information; anything else means the subscription's limit was hit, and
// resetsAt (unix seconds) says until when.
func (d *claudeDecoder) rateLimit(l claudeLine, emit func(Event)) {
	info := l.RateLimitInfo
	if info == nil || info.Status == "" || strings.HasPrefix(info.Status, "allowed") {
		return
	}
	d.rejected = true
	text := "rate limit " + info.Status
	if info.RateLimitType != "" {
		text += " (" + info.RateLimitType + ")"
	}
	if info.ResetsAt > 0 {
		d.resetAt = time.Unix(int64(info.ResetsAt), 0).UTC()
		text += ", resets " + d.resetAt.Format(time.RFC3339)
	}
	emit(Event{Kind: EventError, Text: text})
}

func (d *claudeDecoder) result(l claudeLine, emit func(Event)) {
	d.gotResult = true
	r := &d.res
	if l.Result != nil {
		r.FinalText = *l.Result
	} else {
		r.FinalText = d.lastText // error subtypes carry no result text
	}
	r.IsError = l.IsError
	r.HTTPStatus = l.APIErrorStatus
	r.Turns = l.NumTurns
	if l.TotalCostUSD != nil {
		r.CostUSD, r.HasCost = *l.TotalCostUSD, true
	}
	if l.Usage != nil {
		r.Usage = d.usage(*l.Usage)
	} else {
		r.Usage = d.prevUsage.Add(d.curUsage)
	}
	for _, m := range l.ModelUsage {
		r.ContextWindow = max(r.ContextWindow, m.ContextWindow)
	}
	r.ErrorText = ""
	if r.IsError {
		switch {
		case l.Result != nil && *l.Result != "":
			r.ErrorText = *l.Result
		case len(l.Errors) > 0:
			r.ErrorText = strings.Join(l.Errors, "; ")
		case errorMessage(l.Error) != "":
			// Qwen Code: "error": {"message": ...}; Amp: "error": "...".
			r.ErrorText = errorMessage(l.Error)
		default:
			r.ErrorText = cmp.Or(l.Subtype, "error")
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
