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
		ConfigDirs: []string{"~/.copilot"},
	}
}

func (copilot) Name() string { return "copilot" }

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
type copilotMetrics map[string]struct {
	Usage struct {
		InputTokens      int64 `json:"inputTokens"`
		OutputTokens     int64 `json:"outputTokens"`
		CacheReadTokens  int64 `json:"cacheReadTokens"`
		CacheWriteTokens int64 `json:"cacheWriteTokens"`
	} `json:"usage"`
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

// copilotLine is the envelope of one `copilot --output-format json` line.
type copilotLine struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	ExitCode  *int   `json:"exitCode"`
	Data      *struct {
		Content    string                     `json:"content"`
		ToolCallID string                     `json:"toolCallId"`
		ToolName   string                     `json:"toolName"`
		Arguments  map[string]json.RawMessage `json:"arguments"`
		Success    *bool                      `json:"success"`
		Result     *struct {
			Content string `json:"content"`
		} `json:"result"`
		Error        json.RawMessage `json:"error"`
		StatusCode   int             `json:"statusCode"`
		ErrorType    string          `json:"errorType"`
		Message      string          `json:"message"`
		ErrorMessage string          `json:"errorMessage"`
		ModelMetrics copilotMetrics  `json:"modelMetrics"`
		// assistant.usage
		InputTokens      *int64 `json:"inputTokens"`
		OutputTokens     int64  `json:"outputTokens"`
		CacheReadTokens  int64  `json:"cacheReadTokens"`
		CacheWriteTokens int64  `json:"cacheWriteTokens"`
		ToolTelemetry    *struct {
			Metrics struct {
				ContextTokenLimit   int64 `json:"context_token_limit"`
				ContextCurrentToken int64 `json:"context_current_tokens"`
			} `json:"metrics"`
		} `json:"toolTelemetry"`
	} `json:"data"`
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
}

func newCopilotDecoder(now func() time.Time) *copilotDecoder {
	return &copilotDecoder{now: now, tools: map[string]string{}}
}

func (d *copilotDecoder) Line(line []byte, emit func(Event)) {
	var l copilotLine
	if !decodeLine(line, &l) {
		return
	}
	r := &d.res
	if l.Type == "result" {
		r.SessionID = firstNonBlank(l.SessionID, r.SessionID)
		if l.ExitCode != nil && *l.ExitCode != 0 {
			r.IsError = true
		}
		u := r.Usage
		emit(Event{Kind: EventResult, Text: d.lastText, Usage: &u})
		return
	}
	data := l.Data
	if data == nil {
		return
	}
	switch l.Type {
	case "assistant.turn_start":
		r.Turns++
	case "assistant.message":
		if data.Content == "" {
			return
		}
		d.lastText = data.Content
		d.messages = appendMessage(d.messages, data.Content)
		emit(Event{Kind: EventText, Text: data.Content})
	case "tool.execution_start":
		if len(d.tools) >= maxToolNames {
			clear(d.tools)
		}
		d.tools[data.ToolCallID] = data.ToolName
		emit(Event{Kind: EventToolCall, Tool: data.ToolName, ToolInput: keyArg(data.Arguments)})
	case "tool.execution_complete":
		text := ""
		if data.Result != nil {
			text = data.Result.Content
		}
		if data.Success != nil && !*data.Success {
			text = firstNonBlank(errorMessage(data.Error), text)
		}
		emit(Event{Kind: EventToolResult, Tool: d.tools[data.ToolCallID], Text: truncate(text, maxToolResult)})
		if t := data.ToolTelemetry; t != nil && t.Metrics.ContextTokenLimit > 0 {
			r.ContextWindow = t.Metrics.ContextTokenLimit
			d.contextUsed = t.Metrics.ContextCurrentToken
		}
	case "model.call_failure":
		d.failStatus = data.StatusCode
		emit(Event{Kind: EventError, Text: callFailureText(data.StatusCode, data.ErrorMessage)})
	case "session.error":
		d.sessionErr = true
		r.IsError = true
		r.ErrorText = firstNonBlank(data.Message, data.ErrorType, "error")
		r.HTTPStatus = data.StatusCode
		d.errType = data.ErrorType
		emit(Event{Kind: EventError, Text: r.ErrorText})
	case "assistant.usage":
		if data.InputTokens != nil {
			r.Usage = r.Usage.Add(Usage{
				InputTokens: max(0, *data.InputTokens-data.CacheReadTokens), OutputTokens: data.OutputTokens,
				CacheReadTokens: data.CacheReadTokens, CacheWriteTokens: data.CacheWriteTokens,
			})
			u := r.Usage
			emit(Event{Kind: EventUsage, Usage: &u})
		}
	case "session.shutdown":
		if data.ModelMetrics != nil {
			r.Usage = data.ModelMetrics.usage()
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
