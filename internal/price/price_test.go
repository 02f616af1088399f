package price

import (
	"math"
	"testing"
)

func TestBuiltinIsDatedAndPricesTheDefaults(t *testing.T) {
	tb := Builtin()
	if tb.Date == "" {
		t.Fatal("the built-in table has no date")
	}
	for _, agent := range []string{"codex", "gemini", "qwen", "droid", "copilot"} {
		m := tb.DefaultModel(agent)
		if m == "" {
			t.Errorf("no default model for %s", agent)
			continue
		}
		if _, _, ok := tb.Lookup(m); !ok {
			t.Errorf("%s's default model %q has no price", agent, m)
		}
	}
}

func TestLookup(t *testing.T) {
	tb := Builtin()
	for _, tc := range []struct{ model, want string }{
		{"gpt-5.1-codex", "gpt-5.1-codex"},
		{"GPT-5.1-Codex", "gpt-5.1-codex"},
		{"openai/gpt-5.4-mini", "gpt-5.4-mini"},
		{"gpt-5.1-codex-max", "gpt-5.1-codex"},
		{"gpt-5-2025-08-07", "gpt-5"},
		{"claude-opus-4-8[1m]", "claude-opus-4-8"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-sonnet-4.5", "claude-sonnet-4-5"},
		{"anthropic/claude-haiku-4-5", "claude-haiku-4-5"},
		{"gemini-2.5-flash-lite", "gemini-2.5-flash-lite"},
		{"gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"},
	} {
		_, got, ok := tb.Lookup(tc.model)
		if !ok || got != tc.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tc.model, got, ok, tc.want)
		}
	}
	for _, model := range []string{"", "fake-model", "custom:FakeChat-0", "gpt-5.9"} {
		if _, got, ok := tb.Lookup(model); ok {
			t.Errorf("Lookup(%q) found %q; want nothing", model, got)
		}
	}
}

func TestCost(t *testing.T) {
	p, _, _ := Builtin().Lookup("gpt-5.1-codex")
	// 1M input, 100k output, 200k cached: 1.25 + 1.00 + 0.025.
	got := p.Cost(1_000_000, 100_000, 200_000, 0)
	if math.Abs(got-2.275) > 1e-9 {
		t.Errorf("cost = %v, want 2.275", got)
	}
}

func TestWithOverridesAndExtends(t *testing.T) {
	one, ten := 1.0, 10.0
	tb := Builtin().With(map[string]Override{
		"gpt-5.1-codex": {Output: &ten},
		"my-model":      {Input: &one, Output: &ten},
	})
	p, _, ok := tb.Lookup("gpt-5.1-codex")
	if !ok || p.Output != 10 || p.Input != 1.25 {
		t.Errorf("overridden gpt-5.1-codex = %+v; want output 10, input kept at 1.25", p)
	}
	p, _, ok = tb.Lookup("my-model")
	if !ok || p.Input != 1 || p.Output != 10 || p.CacheRead != 0 {
		t.Errorf("my-model = %+v, %v", p, ok)
	}
	if _, _, ok := Builtin().Lookup("my-model"); ok {
		t.Error("With changed the built-in table")
	}
}
