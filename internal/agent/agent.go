// Package agent runs agent CLIs and reads what they stream back.
//
// It owns the runner that streams an agent's output (the process itself,
// its group, timeouts and TERM then KILL to the whole group, is proc's),
// the per-CLI adapters that build argv and environment, the decoders that
// turn each CLI's output into normalized Events and one Result, and the
// registry of what ralph knows about each agent (Spec: install,
// credentials, files, @file references). It knows nothing of plans,
// prompts or the loop's policy.
package agent

import (
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
)

// EventKind names a normalized event.
type EventKind string

// The normalized event kinds every decoder emits.
const (
	EventText       EventKind = "text"        // assistant text
	EventToolCall   EventKind = "tool_call"   // the agent invoked a tool
	EventToolResult EventKind = "tool_result" // a tool's output (never scanned for markers)
	EventUsage      EventKind = "usage"       // token counts so far
	EventError      EventKind = "error"       // an error the agent or its API reported
	EventResult     EventKind = "result"      // the agent's final result
)

// Event is one normalized thing the agent did or said.
type Event struct {
	Kind EventKind `json:"kind"`
	// Text is assistant text, a tool result (truncated), an error message or
	// the final text.
	Text string `json:"text,omitempty"`
	// Tool and ToolInput describe a tool call; ToolInput is the call's key
	// argument (a command, a path), not the whole input.
	Tool      string `json:"tool,omitempty"`
	ToolInput string `json:"tool_input,omitempty"`
	Usage     *Usage `json:"usage,omitempty"`
}

// Usage counts tokens. Cache reads and writes are counted apart from input.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// ErrorKind classifies why an agent run failed.
type ErrorKind string

// The error kinds the loop's policy acts on.
const (
	ErrorNone       ErrorKind = ""
	ErrorUsageLimit ErrorKind = "usage_limit" // wait until the reset time
	ErrorRateLimit  ErrorKind = "rate_limit"  // short wait, retry
	ErrorTransient  ErrorKind = "transient"   // 5xx, overloaded, network: back off
	ErrorFatal      ErrorKind = "fatal"       // auth, not installed, bad flags: stop
	ErrorOther      ErrorKind = "other"       // the agent failed for another reason
)

// Result is what one agent run produced, normalized across CLIs.
type Result struct {
	// FinalText is the agent's own final message: the only text the default
	// completion strategy scans.
	FinalText string
	// Messages holds the assistant messages of the run, oldest first,
	// bounded in count and size (the relaxed strategy scans them).
	Messages []string
	// RawText says FinalText is the program's raw output rather than a
	// message the CLI delimited: it may echo the prompt, which completion
	// detection must then remove.
	RawText    bool
	SessionID  string
	IsError    bool
	ErrorKind  ErrorKind
	ErrorText  string
	HTTPStatus int
	// ResetAt is when a usage limit resets, where the agent said so.
	ResetAt time.Time
	Turns   int
	Usage   Usage
	// CostUSD is the cost the agent reported; HasCost says whether it did.
	CostUSD float64
	HasCost bool
	// CostEstimated says ralph estimated CostUSD from the tokens and its
	// price table instead (set by the loop, never by a decoder).
	CostEstimated bool
	// Model is the model the agent said it used, where its output names
	// one; prices are looked up by it before the configured model.
	Model string
	// Quota is the latest state of each of the account's usage windows the
	// agent reported during the run (Claude Code's rate_limit_event), one
	// entry per window.
	Quota []QuotaWindow
	// ContextWindow is the model's context size where known;
	// ContextUsedPercent is the share of it the last turn used.
	ContextWindow      int64
	ContextUsedPercent float64

	// Filled by the runner, not the decoder.
	ExitCode     int
	TimedOut     bool // the wall timeout expired
	IdleTimedOut bool // no output for the idle timeout
	Interrupted  bool // the context was cancelled for another reason
	Stderr       string
	Duration     time.Duration
}

// QuotaWindow is what the agent reported of one of the subscription's
// usage windows.
type QuotaWindow struct {
	// Window names it: five_hour, seven_day, seven_day_opus, ...
	Window string
	// Status is allowed, allowed_warning or rejected.
	Status string
	// Utilization is the share of the window used, in percent, where
	// HasUtilization says the agent reported it.
	Utilization    float64
	HasUtilization bool
	// ResetsAt is when the window resets; zero when not reported.
	ResetsAt time.Time
}

// PromptMode says how the prompt reaches the agent.
type PromptMode string

// The ways a prompt is passed.
const (
	PromptStdin PromptMode = "stdin" // written to stdin, then stdin is closed
	PromptArg   PromptMode = "arg"   // in argv; stdin is /dev/null
	PromptFile  PromptMode = "file"  // a path in argv; stdin is /dev/null
)

// Request is one agent invocation.
type Request struct {
	Prompt string
	// PromptFile is a file holding Prompt, for adapters that pass a path.
	PromptFile string
	Dir        string
	Model      string
	// Env is the environment the agent starts from (os.Environ() in the
	// product, a fixed list in tests); the adapter's changes are applied on top.
	Env         []string
	Timeout     time.Duration
	IdleTimeout time.Duration
	// Grace is how long the group has between SIGTERM and SIGKILL.
	Grace time.Duration
	// OnStart, when set, is told the process group id once the agent has
	// started (the CLI kills the group at once on a second Ctrl-C).
	OnStart func(pgid int)
	// ScratchDir is a private directory for files the agent writes for
	// its adapter (Copilot's --usage-output-file). For an adapter that
	// uses one (a Scratcher), Run creates it when it is empty and removes
	// it after FinishRun; it is empty only when an invocation is built
	// without running it (--dry-run), where adapters show a placeholder.
	ScratchDir string
	// Sandbox, when set, confines the agent's process (internal/sandbox).
	Sandbox Sandbox
}

// Sandbox confines an agent's process. The variables the invocation sets
// itself (an adapter's IS_SANDBOX, the user's [agents.NAME] env) are
// meant for the agent: Passing lets them in.
type Sandbox interface {
	proc.Wrapper
	Passing(names []string) proc.Wrapper
}

// Invocation is the exact process an adapter wants started.
type Invocation struct {
	Argv []string
	// EnvSet lists the variables the adapter adds or changes, as KEY=VALUE;
	// --dry-run prints them.
	EnvSet []string
	Prompt PromptMode
	// Stdin is what goes to stdin when Prompt is PromptStdin.
	Stdin string
}

// Decoder turns an agent's stdout, line by line, into events and a Result.
// A decoder is used for one run only.
type Decoder interface {
	// Line decodes one line of output (without its newline). Lines longer
	// than the reader's bound arrive with their long strings shortened to a
	// head and a tail. Undecodable lines are not errors: agents print noise.
	Line(line []byte, emit func(Event))
	// Finish returns the Result once the stream has ended.
	Finish() Result
}

// Adapter knows one agent CLI.
type Adapter interface {
	// Name is the agent's name in config and history ("claude", "command").
	Name() string
	// Invocation builds the process to start for a request.
	Invocation(req Request) (Invocation, error)
	// NewDecoder returns a fresh decoder for one run.
	NewDecoder() Decoder
}

// Finisher is implemented by adapters that complete a Result once the agent
// has exited, from what only then is known: the exit code, stderr, files
// the agent wrote (Copilot's usage file), the clock. Run calls FinishRun
// once, after the decoder's Finish and after filling the runner's fields
// (ExitCode, Stderr, TimedOut, IdleTimedOut, Interrupted, Duration); req is
// the request the invocation was built from, ScratchDir set. FinishRun may
// change any field; it must not block.
//
// Every built-in adapter implements it to classify errors its decoder
// could not classify from structured fields (see classify.go) and to read
// reset times from error text (see resettime.go).
type Finisher interface {
	FinishRun(req Request, res *Result)
}

// Scratcher is implemented by adapters whose agent writes files for the
// adapter in Request.ScratchDir. Run makes the directory for them alone:
// made and removed per run, it is disk work on the loop's path that the
// others do not need.
type Scratcher interface {
	UsesScratch()
}

// Sink receives what a run produces: raw bytes for the transcript, as they
// arrive, and decoded events.
type Sink struct {
	// Transcript receives every byte of stdout exactly as the agent wrote it.
	Transcript interface{ Write([]byte) (int, error) }
	Emit       func(Event)
}
