package agent

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Error classification happens in two places. Each decoder classifies
// from its CLI's structured fields (is_error and api_error_status,
// turn.failed, error events, rate_limit_event, statusCode). Then, once the
// agent has exited, classifyExit looks at what is left: a failed run whose
// kind is still unknown is matched against the configured patterns, then
// the built-in ones, on the error text, stderr and (for a failed run only)
// the final message — never tool results, which decoders keep out of all
// three. Finally the reset time of a usage or rate limit is read from the
// same texts (resettime.go).

// errorRule classifies a failure whose text matches re.
type errorRule struct {
	kind ErrorKind
	re   *regexp.Regexp
}

// patternKinds are the kinds a configured pattern may name, in the order
// they are tried.
var patternKinds = []ErrorKind{ErrorUsageLimit, ErrorFatal, ErrorRateLimit, ErrorTransient}

// compileRules compiles configured patterns (kind name → regular
// expressions, matched case-insensitively) in patternKinds order.
func compileRules(agent string, patterns map[string][]string) ([]errorRule, error) {
	for kind := range patterns {
		if !slices.Contains(patternKinds, ErrorKind(kind)) {
			return nil, fmt.Errorf("%s agent: error-patterns: unknown kind %q: want usage_limit, rate_limit, transient or fatal", agent, kind)
		}
	}
	var rules []errorRule
	for _, kind := range patternKinds {
		for _, p := range patterns[string(kind)] {
			re, err := regexp.Compile("(?i)" + p)
			if err != nil {
				return nil, fmt.Errorf("%s agent: error-patterns.%s: %w", agent, kind, err)
			}
			rules = append(rules, errorRule{kind, re})
		}
	}
	return rules, nil
}

func mustRules(kind ErrorKind, patterns ...string) []errorRule {
	rules := make([]errorRule, len(patterns))
	for i, p := range patterns {
		rules[i] = errorRule{kind, regexp.MustCompile("(?i)" + p)}
	}
	return rules
}

// builtinRules are tried after the configured ones, usage limits before
// rate limits (a usage-limit message often says 429 too), auth and flag
// errors before both, the broad network words last. They run only on
// failed runs, so they are compiled on first use, not at start-up.
var builtinRules = sync.OnceValue(func() []errorRule {
	return slices.Concat(
		usageLimitRules(),
		mustRules(ErrorFatal,
			`invalid (?:x-)?api[ _-]?key|incorrect api key|api[ _-]?key (?:is )?(?:invalid|missing|required|not (?:set|found|valid))|no api key`,
			`unauthori[sz]ed|authentication (?:failed|error|required)|not (?:logged|signed) in|(?:please|must) (?:log ?in|sign ?in|authenticate|re-?authenticate)|login required|invalid[_ ]grant|(?:token|credentials?) (?:has |have )?expired`,
			`(?:status|error|http|code)\W{0,3}40[13]\b|\b40[13] (?:unauthorized|forbidden)`,
			`insufficient[_ ]quota|exceeded your current quota`,
			`unknown (?:option|flag|argument|command)|unrecogni[sz]ed (?:option|argument|arguments|flag)|unexpected argument|invalid (?:option|flag)|missing required argument|not enough arguments`,
			`command not found|env: .*: no such file or directory|cannot find module`,
			`unknown model|invalid model|model (?:\S+ )?(?:not found|does not exist|is not supported|not available)`,
		),
		mustRules(ErrorRateLimit,
			`rate[ _-]?limit`,
			`too many requests`,
			`\b429\b`,
			`resource[ _]exhausted`,
			`quota (?:exceeded|exhausted)`,
			`exhausted your capacity`,
			`throttl`,
		),
		mustRules(ErrorTransient,
			`overloaded|\b529\b`,
			`internal server error|bad gateway|service unavailable|gateway time-?out|upstream connect error`,
			`(?:status|error|http|code)\W{0,3}5\d\d\b|\b5\d\d (?:internal|bad|service|gateway)`,
			`econnreset|econnrefused|etimedout|eai_again|enotfound|socket hang up|network (?:error|is unreachable)|connection (?:reset|refused|closed|error|timed out)|fetch failed|stream (?:disconnected|error)|tls handshake|temporarily unavailable|request timed? ?out`,
		),
	)
})

// usageLimitRules recognize a subscription's usage limit, which lasts
// until a reset time, as opposed to a per-minute rate limit.
var usageLimitRules = sync.OnceValue(func() []errorRule {
	return mustRules(ErrorUsageLimit,
		`hit your (?:usage )?limit`,
		`usage[ _]limit`,
		`out of extra usage`,
		`(?:daily|weekly|monthly) (?:usage |request |token )?(?:limit|quota)`,
		`exhausted your (?:daily|weekly|monthly) quota`,
		`(?:quota|limit)\b[^.\n]{0,80}\bper (?:day|week|month)\b`,
		`premium requests? (?:limit|allowance|quota)`,
		`(?:out of|insufficient|no remaining) credits|credits? (?:exhausted|depleted)|credit limit`,
		`limits (?:are|have been) reached|limits? exhausted`,
	)
})

func mentionsUsageLimit(text string) bool {
	_, _, ok := matchRules(usageLimitRules(), text)
	return ok
}

// matchRules returns the kind of the first rule that matches one of the
// texts, and the line it matched in.
func matchRules(rules []errorRule, texts ...string) (ErrorKind, string, bool) {
	for _, r := range rules {
		for _, t := range texts {
			if loc := r.re.FindStringIndex(t); loc != nil {
				return r.kind, lineAt(t, loc[0]), true
			}
		}
	}
	return ErrorNone, "", false
}

// lineAt returns the line of s holding offset i, trimmed and bounded.
func lineAt(s string, i int) string {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := len(s)
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		end = i + j
	}
	return truncate(strings.TrimSpace(s[start:end]), 500)
}

// classifyExit completes the classification of a run once the agent has
// exited; see the top of this file. A run that ended well (no error, exit
// 0) is never turned into an error by text.
func classifyExit(res *Result, rules []errorRule, now time.Time) {
	if res.TimedOut || res.IdleTimedOut || res.Interrupted {
		return // the runner's verdict stands
	}
	if !res.IsError && res.ExitCode == 0 {
		return
	}
	texts := errorTexts(res)
	if res.ErrorKind == ErrorNone || res.ErrorKind == ErrorOther {
		kind, line := ErrorNone, ""
		if res.HTTPStatus != 0 {
			kind = statusKind(res.HTTPStatus, texts...)
		}
		if kind == ErrorNone {
			kind, line, _ = matchRules(rules, texts...)
		}
		if kind == ErrorNone {
			kind, line, _ = matchRules(builtinRules(), texts...)
			if res.HTTPStatus == 0 {
				res.HTTPStatus = statusIn(texts...)
			}
		}
		if kind == ErrorNone && (res.ExitCode == 126 || res.ExitCode == 127) && res.FinalText == "" {
			// The shell's "cannot execute" and "not found": the CLI or
			// its interpreter is missing.
			kind = ErrorFatal
		}
		if kind != ErrorNone {
			res.IsError, res.ErrorKind = true, kind
			if res.ErrorText == "" {
				res.ErrorText = line
				if line == "" && len(texts) > 0 {
					res.ErrorText = truncate(strings.TrimSpace(texts[0]), 500)
				}
			}
		}
	}
	if res.IsError && res.ErrorKind == ErrorNone {
		res.ErrorKind = ErrorOther
	}
	if (res.ErrorKind == ErrorUsageLimit || res.ErrorKind == ErrorRateLimit) && res.ResetAt.IsZero() {
		for _, t := range texts {
			if at, ok := parseReset(t, now); ok {
				res.ResetAt = at
				break
			}
		}
	}
}

// maxScan bounds how much of stderr and of the final message classification
// reads: the error is at the end.
const maxScan = 8 << 10

// errorTexts returns what classification may read: the error text, the
// end of stderr and, for a failed run, the final message (for raw output,
// only its last lines, since raw output also holds tool output).
func errorTexts(res *Result) []string {
	var texts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(texts, s) {
			texts = append(texts, s)
		}
	}
	add(res.ErrorText)
	add(tailString(res.Stderr, maxScan))
	switch {
	case res.RawText:
		add(lastLines(res.FinalText, 5))
	case res.IsError:
		add(tailString(res.FinalText, maxScan))
	}
	return texts
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return string(utf8Start([]byte(s[len(s)-n:])))
}

// lastLines returns the last n non-blank lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append(keep, l)
		}
	}
	slices.Reverse(keep)
	return strings.Join(keep, "\n")
}

// statusKind classifies an HTTP status; a 429 is a usage limit when the
// texts say so.
func statusKind(status int, texts ...string) ErrorKind {
	switch {
	case status == 429:
		if slices.ContainsFunc(texts, mentionsUsageLimit) {
			return ErrorUsageLimit
		}
		return ErrorRateLimit
	case status == 408, status >= 500 && status <= 599:
		return ErrorTransient // 529 is "overloaded"
	case status == 401 || status == 403:
		return ErrorFatal
	}
	return ErrorNone
}

// statusRE finds an HTTP error status in a message: "API Error: 500",
// "Request rejected (429)", "last status: 429 Too Many Requests",
// "statusCode":429, "status code 403", "HTTP 503", "Error: 401",
// "429 Number of request tokens ...".
var statusRE = regexp.MustCompile(`(?i)(?:api error:?|status(?:[ _]?code)?"?[: =]+|http(?:/[\d.]+)?|error(?: code)?:?|\()\s*([45]\d\d)\b|^([45]\d\d)\b`)

// statusIn returns the first HTTP error status the texts mention, or 0.
func statusIn(texts ...string) int {
	for _, t := range texts {
		if m := statusRE.FindStringSubmatch(t); m != nil {
			n, _ := strconv.Atoi(m[1] + m[2])
			return n
		}
	}
	return 0
}
