package agent

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	// Reset times name zones ("resets 7pm (Europe/Berlin)"); a static
	// binary on a minimal system has no zoneinfo of its own.
	_ "time/tzdata"
)

// parseReset finds, in an error message, when a usage or rate limit
// resets, read against now. It knows:
//
//   - relative fields: "resets_in_seconds": 7500 (Codex's
//     usage_limit_reached), "retry-after": "30", "retry-after-ms",
//     "retryDelay": "37s" (Google RPC); these win over
//   - unix times in fields and headers: "resets_at": 1712345678,
//     "resetsAt", "anthropic-ratelimit-unified-reset", and Claude Code's
//     older "Claude AI usage limit reached|1712345678";
//   - phrases: "try again in 2 hours 5 minutes", "try again in 37s",
//     "retry after 30 seconds", "reset after 2s";
//   - times and dates after "resets", "try again", "retry", "ends":
//     "resets 7pm (Europe/Berlin)", "resets at 14:30", "resets 7:30am",
//     "try again at 3:28 PM", "try again at Aug 8th, 2026 12:30 PM",
//     "Try again Aug 18.", "ends on 9/23/2026", "resets
//     2026-05-12T06:00:00Z".
//
// A time of day without a date is its next occurrence in the zone named
// after it, or in now's zone; a date without a year is its next
// occurrence; a date without a time is its start.
func parseReset(text string, now time.Time) (time.Time, bool) {
	if t, ok := resetField(text, now); ok {
		return t, true
	}
	for _, loc := range resetAnchorRE.FindAllStringIndex(text, -1) {
		rest := text[loc[1]:min(len(text), loc[1]+160)]
		if t, ok := resetPhrase(rest, now); ok {
			return t, true
		}
	}
	return time.Time{}, false
}

// maxReset bounds how far ahead a parsed reset may be: beyond it the text
// was misread.
const maxReset = 400 * 24 * time.Hour

var (
	unixFieldRE    = regexp.MustCompile(`(?i)(?:usage limit reached\||"?(?:resets?_?at|x-ratelimit-reset(?:-requests|-tokens)?|anthropic-ratelimit-unified(?:-\w+)?-reset)"?\s*[:=]\s*"?)(\d{9,13})\b`)
	secondsFieldRE = regexp.MustCompile(`(?i)"?(?:resets?_in_seconds|reset_after_seconds|retry_after_seconds|retryAfterSeconds|retry[-_]after)"?\s*[:=]\s*"?(\d+(?:\.\d+)?)\b`)
	msFieldRE      = regexp.MustCompile(`(?i)"?(?:retry[-_]after[-_]ms|retryAfterMs)"?\s*[:=]\s*"?(\d+)\b`)
	retryDelayRE   = regexp.MustCompile(`(?i)"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"`)
	resetAnchorRE  = regexp.MustCompile(`(?i)\b(?:resets?|try again|retry|available again|ends)\b`)
)

// resetField reads the machine-readable forms. An explicit instruction to
// retry after a while (Retry-After, retryDelay, resets_in_seconds) wins
// over the end of a limit window (a per-minute limit's response can carry
// the five-hour window's reset too).
func resetField(text string, now time.Time) (time.Time, bool) {
	var d time.Duration
	if m := msFieldRE.FindStringSubmatch(text); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		d = time.Duration(n) * time.Millisecond
	} else if m := secondsFieldRE.FindStringSubmatch(text); m != nil {
		d = seconds(m[1])
	} else if m := retryDelayRE.FindStringSubmatch(text); m != nil {
		d = seconds(m[1])
	} else if m := unixFieldRE.FindStringSubmatch(text); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		t := time.Unix(n, 0).UTC()
		if len(m[1]) == 13 {
			t = time.UnixMilli(n).UTC()
		}
		return t, sane(t, now)
	} else {
		return time.Time{}, false
	}
	return now.Add(d), d >= 0 && d <= maxReset
}

func seconds(s string) time.Duration {
	f, _ := strconv.ParseFloat(s, 64)
	if f > maxReset.Seconds() {
		return maxReset + 1
	}
	return time.Duration(f * float64(time.Second))
}

func sane(t, now time.Time) bool {
	return t.After(now.Add(-24*time.Hour)) && t.Before(now.Add(maxReset))
}

var (
	leadRE     = regexp.MustCompile(`^[\s:·,\-–—]*`)
	relativeRE = regexp.MustCompile(`(?i)^(?:in|after)\s+`)
	prepRE     = regexp.MustCompile(`(?i)^(?:at|on|after|by)\s+`)
	durPartRE  = regexp.MustCompile(`(?i)^(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|hr|h|minutes?|mins?|min|m|seconds?|secs?|sec|s|milliseconds?|ms)\b`)
	durSepRE   = regexp.MustCompile(`(?i)^\s*,?\s*(?:and\s+)?`)
	isoRE      = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?\s*(Z|UTC|[+-]\d{2}:?\d{2})?`)
	slashRE    = regexp.MustCompile(`^(\d{1,2})/(\d{1,2})/(\d{4})\b`)
	monthRE    = regexp.MustCompile(`(?i)^(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s*(\d{4})\b)?`)
	clockRE    = regexp.MustCompile(`(?i)^(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\b\.?|^(\d{1,2}):(\d{2})\b`)
	zoneRE     = regexp.MustCompile(`^\s*(?:\(([A-Za-z][\w+\-]*(?:/[\w+\-]+)*)\)|(UTC|GMT)\b|([A-Z][a-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?)\b)`)
	timeSepRE  = regexp.MustCompile(`(?i)^\s*,?\s*(?:at\s+)?`)
)

// resetPhrase reads what follows an anchor word.
func resetPhrase(s string, now time.Time) (time.Time, bool) {
	s = leadRE.ReplaceAllString(s, "")
	if loc := relativeRE.FindStringIndex(s); loc != nil {
		if d, ok := parseDuration(s[loc[1]:]); ok {
			return now.Add(d), true
		}
		s = s[loc[1]:]
	}
	s = prepRE.ReplaceAllString(s, "")
	return parseWhen(s, now)
}

// parseDuration reads "2 hours 5 minutes", "37s", "3 days, 6 hours and 57
// minutes" at the start of s.
func parseDuration(s string) (time.Duration, bool) {
	var total time.Duration
	n := 0
	for {
		m := durPartRE.FindStringSubmatch(s)
		if m == nil {
			break
		}
		f, _ := strconv.ParseFloat(m[1], 64)
		unit := time.Second
		switch u := strings.ToLower(m[2]); {
		case u == "ms" || strings.HasPrefix(u, "milli"):
			unit = time.Millisecond
		case strings.HasPrefix(u, "d"):
			unit = 24 * time.Hour
		case strings.HasPrefix(u, "h"):
			unit = time.Hour
		case strings.HasPrefix(u, "m"):
			unit = time.Minute
		}
		if f*float64(unit) > float64(maxReset) {
			return 0, false
		}
		total += time.Duration(f * float64(unit))
		n++
		s = durSepRE.ReplaceAllString(s[len(m[0]):], "")
	}
	return total, n > 0 && total <= maxReset
}

// parseWhen reads a date, a time of day or both at the start of s, with
// an optional zone after them.
func parseWhen(s string, now time.Time) (time.Time, bool) {
	if m := isoRE.FindStringSubmatch(s); m != nil {
		var loc *time.Location
		switch z := m[7]; {
		case z == "Z" || z == "UTC":
			loc = time.UTC
		case z != "":
			z = strings.ReplaceAll(z, ":", "")
			h, _ := strconv.Atoi(z[1:3])
			mi, _ := strconv.Atoi(z[3:5])
			off := h*3600 + mi*60
			if z[0] == '-' {
				off = -off
			}
			loc = time.FixedZone(z, off)
		default:
			loc = zoneAfter(s[len(m[0]):], now)
		}
		t := time.Date(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]), atoi(m[4]), atoi(m[5]), atoi(m[6]), 0, loc)
		return t, sane(t, now)
	}

	year, month, day := 0, time.Month(0), 0
	rest := s
	if m := slashRE.FindStringSubmatch(rest); m != nil {
		month, day, year = time.Month(atoi(m[1])), atoi(m[2]), atoi(m[3])
		rest = rest[len(m[0]):]
	} else if m := monthRE.FindStringSubmatch(rest); m != nil {
		month = monthOf(m[1])
		day, year = atoi(m[2]), atoi(m[3])
		rest = rest[len(m[0]):]
	}
	hasDate := month != 0
	if hasDate && (month > 12 || day < 1 || day > 31) {
		return time.Time{}, false
	}

	hour, minute, hasClock := 0, 0, false
	clockAt := rest
	if hasDate {
		clockAt = timeSepRE.ReplaceAllString(rest, "")
	}
	if m := clockRE.FindStringSubmatch(clockAt); m != nil {
		hasClock = true
		if m[4] != "" {
			hour, minute = atoi(m[4]), atoi(m[5])
		} else {
			hour, minute = atoi(m[1]), atoi(m[2])
			switch pm := strings.EqualFold(m[3], "p"); {
			case hour < 1 || hour > 12:
				return time.Time{}, false
			case pm && hour < 12:
				hour += 12
			case !pm && hour == 12:
				hour = 0
			}
		}
		if hour > 23 || minute > 59 {
			return time.Time{}, false
		}
		rest = clockAt[len(m[0]):]
	}
	if !hasDate && !hasClock {
		return time.Time{}, false
	}
	loc := zoneAfter(rest, now)
	local := now.In(loc)
	if !hasDate {
		t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
		if !t.After(now) {
			t = time.Date(local.Year(), local.Month(), local.Day()+1, hour, minute, 0, 0, loc)
		}
		return t, true
	}
	explicitYear := year != 0
	if !explicitYear {
		year = local.Year()
	}
	t := time.Date(year, month, day, hour, minute, 0, 0, loc)
	if t.Day() != day {
		return time.Time{}, false // Feb 31
	}
	if !explicitYear && t.Before(now.Add(-24*time.Hour)) {
		t = time.Date(year+1, month, day, hour, minute, 0, 0, loc)
	}
	return t, sane(t, now)
}

// zoneAfter returns the zone named at the start of s ("(Europe/Berlin)",
// "UTC"), or now's zone.
func zoneAfter(s string, now time.Time) *time.Location {
	m := zoneRE.FindStringSubmatch(s)
	if m == nil {
		return now.Location()
	}
	name := m[1] + m[2] + m[3]
	if strings.EqualFold(name, "utc") || strings.EqualFold(name, "gmt") {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return now.Location()
	}
	return loc
}

func monthOf(s string) time.Month {
	months := [...]string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	for i, m := range months {
		if strings.EqualFold(s, m) {
			return time.Month(i + 1)
		}
	}
	return 0
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
