package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestClassifyExit(t *testing.T) {
	t.Parallel()
	configured, err := compileRules("x", map[string][]string{
		"fatal":       {`subscription (has )?expired`},
		"usage_limit": {`slow down`},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   Result
		want Result
	}{
		{
			name: "a good run is never an error by its words",
			in:   Result{FinalText: "I added a rate limit (429) to the API", Stderr: "warning: rate limit header missing"},
			want: Result{FinalText: "I added a rate limit (429) to the API", Stderr: "warning: rate limit header missing"},
		},
		{
			name: "auth on stderr",
			in:   Result{IsError: true, ErrorKind: ErrorOther, ErrorText: "Error: 401 Unauthorized", ExitCode: 1, Stderr: "Error: 401 Unauthorized"},
			want: Result{IsError: true, ErrorKind: ErrorFatal, ErrorText: "Error: 401 Unauthorized", HTTPStatus: 401, ExitCode: 1, Stderr: "Error: 401 Unauthorized"},
		},
		{
			name: "bad flag",
			in:   Result{IsError: true, ErrorKind: ErrorOther, ErrorText: "error: unexpected argument '--yolo' found", ExitCode: 2},
			want: Result{IsError: true, ErrorKind: ErrorFatal, ErrorText: "error: unexpected argument '--yolo' found", ExitCode: 2},
		},
		{
			name: "network",
			in:   Result{IsError: true, ErrorKind: ErrorOther, ErrorText: "request to https://api failed, reason: read ECONNRESET", ExitCode: 1},
			want: Result{IsError: true, ErrorKind: ErrorTransient, ErrorText: "request to https://api failed, reason: read ECONNRESET", ExitCode: 1},
		},
		{
			name: "overloaded",
			in:   Result{IsError: true, ErrorKind: ErrorOther, ErrorText: "API Error: 529 {\"type\":\"overloaded_error\"}", ExitCode: 1},
			want: Result{IsError: true, ErrorKind: ErrorTransient, ErrorText: "API Error: 529 {\"type\":\"overloaded_error\"}", HTTPStatus: 529, ExitCode: 1},
		},
		{
			name: "structured status first",
			in:   Result{IsError: true, ErrorText: "upstream said no", HTTPStatus: 503},
			want: Result{IsError: true, ErrorKind: ErrorTransient, ErrorText: "upstream said no", HTTPStatus: 503},
		},
		{
			name: "429 that is a usage limit, with its reset",
			in:   Result{IsError: true, ErrorText: "You've hit your limit · resets 7pm (UTC)", HTTPStatus: 429},
			want: Result{IsError: true, ErrorKind: ErrorUsageLimit, ErrorText: "You've hit your limit · resets 7pm (UTC)", HTTPStatus: 429, ResetAt: time.Date(2026, 11, 21, 19, 0, 0, 0, time.UTC)},
		},
		{
			name: "rate limit with retry-after on stderr",
			in:   Result{ExitCode: 1, FinalText: "working", Stderr: "Error: Request failed with status code 429, retry after 30 seconds\n"},
			want: Result{
				IsError: true, ErrorKind: ErrorRateLimit, ErrorText: "Error: Request failed with status code 429, retry after 30 seconds",
				HTTPStatus: 429, ResetAt: fixedNow.Add(30 * time.Second), ExitCode: 1, FinalText: "working",
				Stderr: "Error: Request failed with status code 429, retry after 30 seconds\n",
			},
		},
		{
			name: "configured patterns before the built-in ones",
			in:   Result{IsError: true, ErrorKind: ErrorOther, ErrorText: "slow down: rate limit", ExitCode: 1},
			want: Result{IsError: true, ErrorKind: ErrorUsageLimit, ErrorText: "slow down: rate limit", ExitCode: 1},
		},
		{
			name: "configured pattern on stderr",
			in:   Result{ExitCode: 3, Stderr: "boot\nYour subscription has expired.\n"},
			want: Result{IsError: true, ErrorKind: ErrorFatal, ErrorText: "Your subscription has expired.", ExitCode: 3, Stderr: "boot\nYour subscription has expired.\n"},
		},
		{
			name: "interpreter missing",
			in:   Result{IsError: true, ErrorKind: ErrorOther, ErrorText: "/usr/bin/env: 'node': No such file or directory", ExitCode: 127},
			want: Result{IsError: true, ErrorKind: ErrorFatal, ErrorText: "/usr/bin/env: 'node': No such file or directory", ExitCode: 127},
		},
		{
			name: "exit 127, nothing said",
			in:   Result{IsError: true, ErrorKind: ErrorOther, ErrorText: "exit status 127", ExitCode: 127},
			want: Result{IsError: true, ErrorKind: ErrorFatal, ErrorText: "exit status 127", ExitCode: 127},
		},
		{
			name: "unknown failure stays other",
			in:   Result{IsError: true, ErrorText: "something broke", ExitCode: 1},
			want: Result{IsError: true, ErrorKind: ErrorOther, ErrorText: "something broke", ExitCode: 1},
		},
		{
			name: "the decoder's structured kind stands",
			in:   Result{IsError: true, ErrorKind: ErrorRateLimit, ErrorText: "invalid api key? no: 429"},
			want: Result{IsError: true, ErrorKind: ErrorRateLimit, ErrorText: "invalid api key? no: 429"},
		},
		{
			name: "timeouts are the runner's",
			in:   Result{IsError: true, ErrorKind: ErrorOther, ErrorText: "rate limit", ExitCode: 143, TimedOut: true},
			want: Result{IsError: true, ErrorKind: ErrorOther, ErrorText: "rate limit", ExitCode: 143, TimedOut: true},
		},
		{
			// The agent's own words about rate limits are not read when it
			// did not fail...
			name: "final text of a run that did not report an error",
			in:   Result{ExitCode: 1, FinalText: "The API returns 429 when rate limited."},
			want: Result{ExitCode: 1, FinalText: "The API returns 429 when rate limited."},
		},
		{
			// ...and of raw output only the last lines, where a CLI prints
			// its error, not the tool output before them.
			name: "raw output: only the last lines",
			in:   Result{RawText: true, ExitCode: 1, FinalText: "$ curl api\n429 Too Many Requests\n" + strings.Repeat("ok\n", 6) + "done"},
			want: Result{RawText: true, ExitCode: 1, FinalText: "$ curl api\n429 Too Many Requests\n" + strings.Repeat("ok\n", 6) + "done"},
		},
		{
			name: "raw output: the error at the end",
			in:   Result{RawText: true, ExitCode: 1, FinalText: "> working\nerror: Kiro is having trouble responding right now: service unavailable"},
			want: Result{
				RawText: true, IsError: true, ErrorKind: ErrorTransient, ExitCode: 1,
				ErrorText: "error: Kiro is having trouble responding right now: service unavailable",
				FinalText: "> working\nerror: Kiro is having trouble responding right now: service unavailable",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.in
			classifyExit(&got, configured, fixedNow)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusIn(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		text string
		want int
	}{
		{"API Error: 500 {...}", 500},
		{"API Error: Request rejected (429) · slow down", 429},
		{"exceeded retry limit, last status: 429 Too Many Requests", 429},
		{`{"statusCode":503}`, 503},
		{"HTTP 502 Bad Gateway", 502},
		{"HTTP/1.1 401 Unauthorized", 401},
		{"429 Number of request tokens", 429},
		{"Request failed with status code 403", 403},
		{"took 500 ms on line 429", 0},
		{"status: 200", 0},
	} {
		if got := statusIn(tt.text); got != tt.want {
			t.Errorf("statusIn(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}
