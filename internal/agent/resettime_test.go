package agent

import (
	"fmt"
	"testing"
	"time"
)

func TestParseReset(t *testing.T) {
	t.Parallel()
	now := fixedNow // Saturday 2026-11-21 06:00 UTC
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	at := func(y int, m time.Month, d, h, mi int, loc *time.Location) time.Time {
		return time.Date(y, m, d, h, mi, 0, 0, loc)
	}
	soon := now.Add(90 * time.Minute).Unix()
	tests := []struct {
		text string
		now  time.Time
		want time.Time // zero: no reset found
	}{
		// Claude Code.
		{"You've hit your limit · resets 7pm (Europe/Berlin)", now, at(2026, 11, 21, 19, 0, berlin)},
		{"You've hit your limit · resets 5am (Europe/Berlin)", now, at(2026, 11, 22, 5, 0, berlin)},
		{"resets at 14:30", now, at(2026, 11, 21, 14, 30, time.UTC)},
		{"resets 7:30am", now, at(2026, 11, 21, 7, 30, time.UTC)},
		{"resets 5am", now, at(2026, 11, 22, 5, 0, time.UTC)},
		{"resets 12am", now, at(2026, 11, 22, 0, 0, time.UTC)},
		{"resets 12pm", now, at(2026, 11, 21, 12, 0, time.UTC)},
		{"resets at 3pm (UTC)", now, at(2026, 11, 21, 15, 0, time.UTC)},
		{"resets at 14:30 UTC", now, at(2026, 11, 21, 14, 30, time.UTC)},
		{"You've hit your weekly limit · resets Nov 24, 5am (America/New_York)", now, at(2026, 11, 24, 5, 0, newYork)},
		{"resets 7pm (Mars/Olympus)", now, at(2026, 11, 21, 19, 0, time.UTC)},
		{"Claude AI usage limit reached|" + fmt.Sprint(soon), now, time.Unix(soon, 0).UTC()},
		{"rate limit rejected (five_hour), resets 2026-11-21T11:00:00Z", now, at(2026, 11, 21, 11, 0, time.UTC)},
		{"resets 2026-11-21 11:00:00+02:00", now, at(2026, 11, 21, 9, 0, time.UTC)},
		// A time of day without a zone is in the clock's zone.
		{"resets 7pm", now.In(berlin), at(2026, 11, 21, 19, 0, berlin)},
		// Codex.
		{`{"error":{"type":"usage_limit_reached","message":"limit","plan_type":"plus","resets_in_seconds":7500}}`, now, now.Add(7500 * time.Second)},
		{fmt.Sprintf(`{"type":"usage_limit_reached","resets_at": %d}`, soon), now, time.Unix(soon, 0).UTC()},
		{"You've hit your usage limit. Upgrade to Pro or try again in 2 hours 5 minutes.", now, now.Add(2*time.Hour + 5*time.Minute)},
		{"try again in 37s", now, now.Add(37 * time.Second)},
		{"send a request to your admin or try again in 3 days 6 hours 57 minutes.", now, now.Add(78*time.Hour + 57*time.Minute)},
		{"try again in 1 hour, 2 minutes and 3 seconds", now, now.Add(time.Hour + 2*time.Minute + 3*time.Second)},
		{"Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at 3:28 PM.", now, at(2026, 11, 21, 15, 28, time.UTC)},
		{"You've hit your usage limit ... try again at Aug 8th, 2027 12:30 PM", now, at(2027, 8, 8, 12, 30, time.UTC)},
		{"You've hit your usage limit. Try again Aug 18.", now, at(2027, 8, 18, 0, 0, time.UTC)},
		{"You've hit your usage limit. Try again Dec 1.", now, at(2026, 12, 1, 0, 0, time.UTC)},
		{"Usage will reset when your monthly cycle ends on 12/23/2026.", now, at(2026, 12, 23, 0, 0, time.UTC)},
		// Retry-After, in messages and headers.
		{"429 Too Many Requests: retry after 30 seconds", now, now.Add(30 * time.Second)},
		{"Retry-After: 120", now, now.Add(2 * time.Minute)},
		{`"retry-after-ms":"1500"`, now, now.Add(1500 * time.Millisecond)},
		{`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay": "37s"}`, now, now.Add(37 * time.Second)},
		{"Please retry in 37.5s.", now, now.Add(37500 * time.Millisecond)},
		{"Your quota will reset after 2s.", now, now.Add(2 * time.Second)},
		{fmt.Sprintf(`"anthropic-ratelimit-unified-reset":"%d","retry-after":"1"`, soon), now, now.Add(time.Second)},
		// Nothing, or nonsense.
		{"Number of request tokens has exceeded your per-minute rate limit", now, time.Time{}},
		{"resets 25:00", now, time.Time{}},
		{"resets 13pm", now, time.Time{}},
		{"resets Feb 31", now, time.Time{}},
		{"resets the counter", now, time.Time{}},
		{"try again in 900000 hours", now, time.Time{}},
		{"Claude AI usage limit reached|9999999999", now, time.Time{}},
		{"", now, time.Time{}},
	}
	for _, tt := range tests {
		got, ok := parseReset(tt.text, tt.now)
		if ok != !tt.want.IsZero() || ok && !got.Equal(tt.want) {
			t.Errorf("parseReset(%q) = %v, %v; want %v", tt.text, got, ok, tt.want)
		}
	}
}

func FuzzParseReset(f *testing.F) {
	for _, s := range []string{
		"You've hit your limit · resets 7pm (Europe/Berlin)", "resets at 14:30", "resets 7:30am",
		"Claude AI usage limit reached|1795240000", `"resets_in_seconds":7500`, `"resets_at":1795240000`,
		"try again in 2 hours 5 minutes", "try again in 37s", "retry after 30 seconds", "Retry-After: 1",
		"try again at Aug 8th, 2026 12:30 PM", "Try again Aug 18.", "ends on 9/23/2026",
		"resets 2026-05-12T06:00:00Z", `"retryDelay": "37.5s"`, "resets Nov 24, 5am (America/New_York)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := parseReset(text, fixedNow)
		if !ok {
			return
		}
		if got.IsZero() {
			t.Fatalf("parseReset(%q) ok with a zero time", text)
		}
		if got.Before(fixedNow.Add(-24*time.Hour)) || got.After(fixedNow.Add(maxReset)) {
			t.Fatalf("parseReset(%q) = %v, outside [now-1d, now+%v]", text, got, maxReset)
		}
	})
}
