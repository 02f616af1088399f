// Package redact hides secrets in text ralph prints or writes: by the
// name they are given (API_TOKEN=..., a password variable) and by their
// shape, whatever they are called (a password in a URL, a bearer token,
// the key formats of the big providers). It is the one place that knows
// those shapes; the dry run, the run's events (and so the terminal,
// --json, ralph.log, ralph serve's page and notifications), history,
// state.json, ralph logs and the errors ralph prints go through it.
//
// It knows nothing of where text comes from or goes: a leaf, imported by
// anyone.
package redact

import (
	"regexp"
	"strings"
)

// Mask is what a secret is replaced with.
const Mask = "<redacted>"

// shape is a secret by its form: re finds it, and the submatch named
// "secret" (the whole match without one) is what is hidden. Every match
// contains one of hints, which are looked for first: ordinary text costs
// a few substring searches, no regular expression and no allocation.
type shape struct {
	hints []string
	re    *regexp.Regexp
}

// shapes are the secrets known by their form.
var shapes = []shape{
	// A URL's password: scheme://user:PASSWORD@host.
	{hints: []string{"://"}, re: regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:(?P<secret>[^\s/@]+)@`)},
	// A bearer or basic token after its scheme (HTTP Authorization).
	{hints: []string{"earer", "EARER"}, re: regexp.MustCompile(`(?i)\bbearer[ \t]+(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)`)},
	{hints: []string{"asic", "ASIC"}, re: regexp.MustCompile(`(?i)\bauthorization:[ \t]*basic[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}=*)`)},
	// OpenAI and Anthropic keys: sk-..., sk-proj-..., sk-ant-api03-...
	{hints: []string{"sk-"}, re: regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{20,}`)},
	// GitHub tokens: personal, OAuth, user-to-server, server-to-server,
	// refresh, fine-grained.
	{hints: []string{"gh"}, re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`)},
	{hints: []string{"github_pat_"}, re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`)},
	// Slack tokens: xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe-.
	{hints: []string{"xox"}, re: regexp.MustCompile(`\bxox[abeoprs]-[A-Za-z0-9\-]{10,}`)},
	// AWS access key ids, and a secret access key after its name.
	{hints: []string{"AKIA", "ASIA", "ABIA", "ACCA"}, re: regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`)},
	{hints: []string{"ws_secret_access_key", "WS_SECRET_ACCESS_KEY"},
		re: regexp.MustCompile(`(?i)aws_secret_access_key["']?[ \t]*[=:][ \t]*["']?(?P<secret>[A-Za-z0-9/+=]{40})`)},
	// Google API keys.
	{hints: []string{"AIza"}, re: regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`)},
}

// String returns s with every secret of a known shape replaced by Mask.
func String(s string) string {
	for _, sh := range shapes {
		for _, h := range sh.hints {
			if strings.Contains(s, h) {
				s = replace(sh.re, s)
				break
			}
		}
	}
	return s
}

// replace hides each match of re in s: its "secret" submatch, or all of
// it.
func replace(re *regexp.Regexp, s string) string {
	i := re.SubexpIndex("secret")
	matches := re.FindAllStringSubmatchIndex(s, -1)
	if matches == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		start, end := m[0], m[1]
		if i > 0 && m[2*i] >= 0 {
			start, end = m[2*i], m[2*i+1]
		}
		b.WriteString(s[last:start])
		b.WriteString(Mask)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// secretNames are the parts of a variable's name that say its value is a
// secret.
var secretNames = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "AUTH", "CREDENTIAL", "COOKIE", "SESSION"}

// Env returns an environment entry NAME=VALUE with its value hidden when
// the name says it is a secret, and the secrets of a known shape in it
// hidden otherwise.
func Env(kv string) string {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return String(kv)
	}
	up := strings.ToUpper(k)
	for _, s := range secretNames {
		if strings.Contains(up, s) {
			return k + "=" + Mask
		}
	}
	return k + "=" + String(v)
}
