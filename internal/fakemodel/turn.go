package fakemodel

import (
	"fmt"
	"time"
)

// TurnKind names what a scripted turn answers.
type TurnKind string

// The kinds of scripted turns.
const (
	KindText     TurnKind = "text"      // a final assistant message
	KindToolCall TurnKind = "tool_call" // one tool call; the client runs it and asks again
	KindError    TurnKind = "error"     // an HTTP error status with the API's error body
	KindHang     TurnKind = "hang"      // no answer until the client gives up
)

// Turn is one scripted answer of the model. Build turns with Text, Shell,
// Call, RateLimit, UsageLimit, Overloaded, ServerError and Hang.
type Turn struct {
	Kind TurnKind
	// Text is the assistant message (KindText), or text said before a tool
	// call.
	Text string

	// Command is the shell command of a Shell turn: it goes to whichever
	// tool of the request looks like a shell (Bash, shell, run_shell_command,
	// Execute, ...), in the argument shape that tool's schema asks for.
	Command string
	// Tool and Args name the tool and its arguments exactly (Call).
	Tool string
	Args map[string]any

	// Status is the HTTP status of an error turn; RetryAfter, when set, is
	// sent as the Retry-After header; Message is the error message; Reset,
	// when set, is when a usage limit resets (sent in the body and in
	// Anthropic's unified rate-limit headers).
	Status     int
	RetryAfter time.Duration
	Message    string
	ErrType    string
	Reset      time.Time

	// NoRetry sends x-should-retry: false, which the Stainless SDKs
	// (Anthropic's and OpenAI's TypeScript clients) obey: the CLI gives up
	// at once instead of backing off for minutes.
	NoRetry bool

	// repeat is how many requests the turn answers: 0 and 1 mean one,
	// a negative number every request from here on.
	repeat int
	// until, when set, makes the turn answer every request until then;
	// after it, the turn is dropped unanswered.
	until time.Time
}

// Text is a final assistant message.
func Text(s string) Turn { return Turn{Kind: KindText, Text: s} }

// Shell calls the request's shell tool with cmd.
func Shell(cmd string) Turn { return Turn{Kind: KindToolCall, Command: cmd} }

// Call calls the named tool with exactly these arguments.
func Call(name string, args map[string]any) Turn {
	return Turn{Kind: KindToolCall, Tool: name, Args: args}
}

// RateLimit answers HTTP 429 with a Retry-After header (none when
// retryAfter is 0): a per-minute rate limit.
func RateLimit(retryAfter time.Duration) Turn {
	return Turn{Kind: KindError, Status: 429, RetryAfter: retryAfter, ErrType: "rate_limit_error",
		Message: "Number of request tokens has exceeded your per-minute rate limit (fake)"}
}

// UsageLimit answers HTTP 429 saying a plan's usage limit was hit and
// resets at reset, the way each API says it ("You've hit your limit ·
// resets 7pm (UTC)" for Anthropic, usage_limit_reached for OpenAI, a
// per-day quota for Gemini), with no Retry-After: the reset is hours away
// as far as the client knows. Like a real limit it holds: it answers
// every request until reset.
func UsageLimit(reset time.Time) Turn {
	reset = reset.UTC()
	return Turn{Kind: KindError, Status: 429, ErrType: "rate_limit_error", Reset: reset, until: reset,
		Message: fmt.Sprintf("You've hit your limit · resets %s (UTC)", clock(reset))}
}

// clock formats a time the way Claude Code says reset times: "7pm",
// "7:30pm".
func clock(t time.Time) string {
	if t.Minute() == 0 {
		return t.Format("3pm")
	}
	return t.Format("3:04pm")
}

// Overloaded answers HTTP 529, Anthropic's "overloaded".
func Overloaded() Turn {
	return Turn{Kind: KindError, Status: 529, ErrType: "overloaded_error", Message: "Overloaded (fake)"}
}

// ServerError answers HTTP 500.
func ServerError() Turn {
	return Turn{Kind: KindError, Status: 500, ErrType: "api_error", Message: "Internal server error (fake)"}
}

// Status answers an HTTP error status with a message.
func Status(code int, message string) Turn {
	return Turn{Kind: KindError, Status: code, ErrType: errTypeFor(code), Message: message}
}

// Hang answers nothing: the request stays open until the client
// disconnects or the server closes.
func Hang() Turn { return Turn{Kind: KindHang} }

// Times makes the turn answer n requests in a row (retries included).
func (t Turn) Times(n int) Turn {
	t.repeat, t.until = max(n, 1), time.Time{}
	return t
}

// WithoutRetry makes an error turn tell the client not to retry it.
func (t Turn) WithoutRetry() Turn {
	t.NoRetry = true
	return t
}

// Always makes the turn answer every request from here on.
func (t Turn) Always() Turn {
	t.repeat, t.until = -1, time.Time{}
	return t
}

// Until makes the turn answer every request until when; the first
// request after it gets the next turn.
func (t Turn) Until(when time.Time) Turn {
	t.repeat, t.until = 0, when
	return t
}

// Describe says what the turn does, for logs.
func (t Turn) Describe() string {
	switch t.Kind {
	case KindText:
		return "text " + quoteShort(t.Text)
	case KindToolCall:
		if t.Tool != "" {
			return "call " + t.Tool
		}
		return "shell " + quoteShort(t.Command)
	case KindError:
		return fmt.Sprintf("error %d", t.Status)
	default:
		// The other values need nothing here.
	}
	return string(t.Kind)
}

func quoteShort(s string) string {
	const limit = 60
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

func errTypeFor(code int) string {
	switch code {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}
