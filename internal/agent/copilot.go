package agent

import (
	"cmp"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// copilot is the GitHub Copilot CLI adapter.
type copilot struct{ base }

// NewCopilot returns the adapter for the GitHub Copilot CLI.
func NewCopilot(opts Options) (Adapter, error) {
	b, err := newBase("copilot", opts)
	return copilot{b}, err
}

// copilotSpec is what ralph knows about the GitHub Copilot CLI.
func copilotSpec() Spec {
	return Spec{
		Name:    "copilot",
		New:     NewCopilot,
		Dialect: "copilot-json",
		Install: "npm install -g @github/copilot",
		Credentials: Credentials{
			EnvVars: []string{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_BASE_URL"},
			Files:   []string{"~/.copilot/config.json"},
			Login:   "run `copilot login`, or set COPILOT_GITHUB_TOKEN",
			Keyring: true,
		},
		Hosts: []string{"api.github.com", "github.com", "*.githubcopilot.com"},
		// config.json holds the login with the settings (trusted
		// folders, ...), mcp-config.json MCP servers: reported, never
		// written back. Its GitHub token does not expire, so nothing is
		// lost.
		ConfigDirs: append([]string{"~/.copilot"}, xdg("cache", "copilot")...),
		// Logs and earlier sessions; the cache, where it unpacks itself
		// at its first start: code the user's own copilot would run, so
		// the agent's is a fresh one that goes with the copy.
		Scratch: append([]string{"~/.copilot/logs", "~/.copilot/session-state", "~/.copilot/history-session-state"},
			xdg("cache", "copilot")...),
		// The versions it updates itself to, which the npm package runs.
		ReadOnly: []string{"~/.copilot/pkg"},
		Env:      []string{"COPILOT_*"},
	}
}

func (copilot) Name() string { return "copilot" }

// UsesScratch: Copilot writes its usage file there (Scratcher).
func (copilot) UsesScratch() {}

// copilotUsageFile is the file, in the request's scratch directory,
// Copilot writes its token usage to.
const copilotUsageFile = "copilot-usage.json"

func copilotUsagePath(req Request) string {
	dir := req.ScratchDir
	if dir == "" {
		dir = "$SCRATCH" // a dry run: no run, no directory
	}
	return filepath.Join(dir, copilotUsageFile)
}

// Invocation runs `copilot --output-format json --allow-all-tools
// --no-ask-user [--model M] --usage-output-file FILE -p PROMPT`, stdin
// /dev/null. The usage file, in the scratch directory, is where Copilot
// reports tokens; FinishRun reads it.
func (c copilot) Invocation(req Request) (Invocation, error) {
	return c.argInvocation(layout{
		exe:   "copilot",
		flags: []string{"--output-format", "json", "--allow-all-tools", "--no-ask-user"},
		model: "--model",
		tail:  []string{"--usage-output-file", copilotUsagePath(req), "-p", req.Prompt},
	}, req), nil
}

func (c copilot) NewDecoder() Decoder { return newCopilotDecoder(c.now) }

// FinishRun takes the tokens from the usage file when Copilot wrote one.
func (c copilot) FinishRun(req Request, res *Result) {
	if b, err := os.ReadFile(copilotUsagePath(req)); err == nil {
		if u, ok := copilotUsageReport(b); ok {
			res.Usage = u
		}
	}
	c.base.FinishRun(req, res)
}

// copilotMetrics is the per-model usage of Copilot's usage file and of
// its session.shutdown event. inputTokens is taken to include the cached
// tokens, as OpenAI-style prompt counts do.
type copilotMetrics map[string]copilotModelMetrics

type copilotModelMetrics struct {
	Usage struct {
		InputTokens      int64 `json:"inputTokens"`
		OutputTokens     int64 `json:"outputTokens"`
		CacheReadTokens  int64 `json:"cacheReadTokens"`
		CacheWriteTokens int64 `json:"cacheWriteTokens"`
	} `json:"usage"`
}

// read reads a modelMetrics object from a line; as encoding/json does
// into a map, null empties m and each model's entry replaces an earlier
// one.
func (m *copilotMetrics) read(s *jsonScanner) {
	if s.null() {
		*m = nil
		return
	}
	if !s.object() {
		return
	}
	if *m == nil {
		*m = copilotMetrics{}
	}
	for s.more() {
		model := string(s.name())
		var e copilotModelMetrics
		if s.object() {
			for s.more() {
				if string(s.name()) != "usage" || !s.object() {
					continue
				}
				u := &e.Usage
				for s.more() {
					switch string(s.name()) {
					case "inputTokens":
						s.int64(&u.InputTokens)
					case "outputTokens":
						s.int64(&u.OutputTokens)
					case "cacheReadTokens":
						s.int64(&u.CacheReadTokens)
					case "cacheWriteTokens":
						s.int64(&u.CacheWriteTokens)
					}
				}
			}
		}
		(*m)[model] = e
	}
}

func (m copilotMetrics) usage() Usage {
	var u Usage
	for _, k := range slices.Sorted(maps.Keys(m)) {
		mu := m[k].Usage
		u = u.Add(Usage{
			InputTokens:      max(0, mu.InputTokens-mu.CacheReadTokens),
			OutputTokens:     mu.OutputTokens,
			CacheReadTokens:  mu.CacheReadTokens,
			CacheWriteTokens: mu.CacheWriteTokens,
		})
	}
	return u
}

// copilotUsageReport reads the --usage-output-file JSON:
// {"modelMetrics": {"MODEL": {"usage": {"inputTokens", ...}}}, ...}.
func copilotUsageReport(b []byte) (Usage, bool) {
	var report struct {
		ModelMetrics copilotMetrics `json:"modelMetrics"`
	}
	if json.Unmarshal(b, &report) != nil || report.ModelMetrics == nil {
		return Usage{}, false
	}
	return report.ModelMetrics.usage(), true
}

// mainModel is the model that used the most tokens, for prices; "" when
// none is named.
func (m copilotMetrics) mainModel() string {
	best, most := "", int64(-1)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		u := m[k].Usage
		if n := u.InputTokens + u.OutputTokens; n > most {
			best, most = k, n
		}
	}
	return best
}

// copilotLine is what the decoder reads of one `copilot --output-format
// json` line.
type copilotLine struct {
	typ         []byte
	sessionID   string
	exitCode    int
	hasExitCode bool
	data        copilotData
	hasData     bool
}

type copilotData struct {
	content    string
	toolCallID string
	toolName   string
	arguments  keyArgs
	success    bool
	hasSuccess bool
	// result is the head of result.content: what truncate keeps.
	result       []byte
	hasResult    bool
	err          errorField
	statusCode   int
	errorType    string
	message      string
	errorMessage string
	modelMetrics copilotMetrics
	// assistant.usage
	inputTokens         int64
	hasInputTokens      bool
	outputTokens        int64
	cacheReadTokens     int64
	cacheWriteTokens    int64
	contextTokenLimit   int64 // toolTelemetry.metrics
	contextCurrentToken int64
	hasTelemetry        bool
}

func (l *copilotLine) reset() {
	*l = copilotLine{typ: l.typ[:0], data: copilotData{result: l.data.result[:0]}}
}

func (l *copilotLine) read(s *jsonScanner) {
	s.object()
	for s.more() {
		switch string(s.name()) {
		case "type":
			readBytes(s, &l.typ)
		case "sessionId":
			s.str(&l.sessionID)
		case "exitCode":
			if s.null() {
				l.exitCode, l.hasExitCode = 0, false
			} else if s.int(&l.exitCode) {
				l.hasExitCode = true
			}
		case "data":
			l.readData(s)
		}
	}
}

func (l *copilotLine) readData(s *jsonScanner) {
	d := &l.data
	if s.null() {
		*d, l.hasData = copilotData{result: d.result[:0]}, false
		return
	}
	if !s.object() {
		return
	}
	l.hasData = true
	for s.more() {
		switch string(s.name()) {
		case "content":
			s.str(&d.content)
		case "toolCallId":
			s.str(&d.toolCallID)
		case "toolName":
			s.str(&d.toolName)
		case "arguments":
			d.arguments.read(s)
		case "success":
			if s.null() {
				d.success, d.hasSuccess = false, false
			} else if s.bool(&d.success) {
				d.hasSuccess = true
			}
		case "result":
			d.readResult(s)
		case "error":
			d.err.read(s)
		case "statusCode":
			s.int(&d.statusCode)
		case "errorType":
			s.str(&d.errorType)
		case "message":
			s.str(&d.message)
		case "errorMessage":
			s.str(&d.errorMessage)
		case "modelMetrics":
			d.modelMetrics.read(s)
		case "inputTokens":
			if s.null() {
				d.inputTokens, d.hasInputTokens = 0, false
			} else if s.int64(&d.inputTokens) {
				d.hasInputTokens = true
			}
		case "outputTokens":
			s.int64(&d.outputTokens)
		case "cacheReadTokens":
			s.int64(&d.cacheReadTokens)
		case "cacheWriteTokens":
			s.int64(&d.cacheWriteTokens)
		case "toolTelemetry":
			d.readTelemetry(s)
		}
	}
}

func (d *copilotData) readResult(s *jsonScanner) {
	if s.null() {
		d.result, d.hasResult = d.result[:0], false
		return
	}
	if !s.object() {
		return
	}
	d.hasResult = true
	for s.more() {
		if string(s.name()) == "content" && s.kind() == '"' {
			d.result = s.strHead(d.result[:0], maxToolResult+1)
		}
	}
}

func (d *copilotData) readTelemetry(s *jsonScanner) {
	if s.null() {
		d.contextTokenLimit, d.contextCurrentToken, d.hasTelemetry = 0, 0, false
		return
	}
	if !s.object() {
		return
	}
	d.hasTelemetry = true
	for s.more() {
		if string(s.name()) != "metrics" || !s.object() {
			continue
		}
		for s.more() {
			switch string(s.name()) {
			case "context_token_limit":
				s.int64(&d.contextTokenLimit)
			case "context_current_tokens":
				s.int64(&d.contextCurrentToken)
			}
		}
	}
}

// copilotDecoder decodes Copilot's JSON events. Tokens are not in the
// stream (only in the usage file, read by FinishRun) unless a version
// prints assistant.usage or session.shutdown events.
type copilotDecoder struct {
	now         func() time.Time
	res         Result
	lastText    string
	messages    []string
	tools       map[string]string
	failStatus  int // the last failed model call's HTTP status
	sessionErr  bool
	errType     string
	contextUsed int64

	s *jsonScanner
	l copilotLine // the line being decoded
}

func newCopilotDecoder(now func() time.Time) *copilotDecoder {
	return &copilotDecoder{now: now, tools: map[string]string{}, s: newJSONScanner()}
}

func (d *copilotDecoder) Line(line []byte, emit func(Event)) {
	l := &d.l
	if !d.s.start(line) {
		return
	}
	l.reset()
	l.read(d.s)
	if !d.s.end() {
		return
	}
	r := &d.res
	if string(l.typ) == "result" {
		r.SessionID = firstNonBlank(l.sessionID, r.SessionID)
		if l.hasExitCode && l.exitCode != 0 {
			r.IsError = true
		}
		u := r.Usage
		emit(Event{Kind: EventResult, Text: d.lastText, Usage: &u})
		return
	}
	if !l.hasData {
		return
	}
	data := &l.data
	switch string(l.typ) {
	case "assistant.turn_start":
		r.Turns++
	case "assistant.message":
		if data.content == "" {
			return
		}
		d.lastText = data.content
		d.messages = appendMessage(d.messages, data.content)
		emit(Event{Kind: EventText, Text: data.content})
	case "tool.execution_start":
		if len(d.tools) >= maxToolNames {
			clear(d.tools)
		}
		d.tools[data.toolCallID] = data.toolName
		emit(Event{Kind: EventToolCall, Tool: data.toolName, ToolInput: data.arguments.String()})
	case "tool.execution_complete":
		text := ""
		if data.hasResult {
			text = string(data.result)
		}
		if data.hasSuccess && !data.success {
			text = firstNonBlank(data.err.message(), text)
		}
		emit(Event{Kind: EventToolResult, Tool: d.tools[data.toolCallID], Text: truncate(text, maxToolResult)})
		if data.hasTelemetry && data.contextTokenLimit > 0 {
			r.ContextWindow = data.contextTokenLimit
			d.contextUsed = data.contextCurrentToken
		}
	case "model.call_failure":
		d.failStatus = data.statusCode
		emit(Event{Kind: EventError, Text: callFailureText(data.statusCode, data.errorMessage)})
	case "session.error":
		d.sessionErr = true
		r.IsError = true
		r.ErrorText = firstNonBlank(data.message, data.errorType, "error")
		r.HTTPStatus = data.statusCode
		d.errType = data.errorType
		emit(Event{Kind: EventError, Text: r.ErrorText})
	case "assistant.usage":
		if data.hasInputTokens {
			r.Usage = r.Usage.Add(Usage{
				InputTokens: max(0, data.inputTokens-data.cacheReadTokens), OutputTokens: data.outputTokens,
				CacheReadTokens: data.cacheReadTokens, CacheWriteTokens: data.cacheWriteTokens,
			})
			u := r.Usage
			emit(Event{Kind: EventUsage, Usage: &u})
		}
	case "session.shutdown":
		if data.modelMetrics != nil {
			r.Usage = data.modelMetrics.usage()
			r.Model = data.modelMetrics.mainModel()
		}
	}
}

func callFailureText(status int, msg string) string {
	var body struct {
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(msg), &body) == nil && body.Message != "" {
		msg = body.Message
	}
	if status == 0 {
		return "model call failed: " + msg
	}
	return "model call failed: HTTP " + strconv.Itoa(status) + ": " + msg
}

func (d *copilotDecoder) Finish() Result {
	r := d.res
	r.FinalText = d.lastText
	r.Messages = slices.Clone(d.messages)
	if r.ContextWindow > 0 {
		r.ContextUsedPercent = float64(d.contextUsed) / float64(r.ContextWindow) * 100
	}
	if r.IsError {
		if r.HTTPStatus == 0 {
			r.HTTPStatus = cmp.Or(statusIn(r.ErrorText), d.failStatus)
		}
		switch {
		case d.errType == "quota" || mentionsUsageLimit(r.ErrorText):
			r.ErrorKind = ErrorUsageLimit
		case d.errType == "rate_limit":
			r.ErrorKind = ErrorRateLimit
		case d.errType == "authentication" || d.errType == "auth":
			r.ErrorKind = ErrorFatal
		default:
			r.ErrorKind = statusKind(r.HTTPStatus, r.ErrorText)
		}
		if r.ErrorKind == ErrorNone {
			r.ErrorKind = ErrorOther
		}
		if r.ErrorKind == ErrorUsageLimit || r.ErrorKind == ErrorRateLimit {
			r.ResetAt, _ = parseReset(r.ErrorText, d.now())
		}
	}
	return r
}
