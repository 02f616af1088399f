package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRouteKeyErrors: a bad entry of fallback, escalate or allowed-agents
// is named with its key, its place and its value.
func TestRouteKeyErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, want string }{
		{"fallback = [\"codex\", \"sonnet\"]\n", `ralph.toml:1: fallback: entry 2 "sonnet": want an agent or agent:model`},
		{"fallback = [\"codex:\"]\n", `ralph.toml:1: fallback: entry 1 "codex:": the model after the colon is empty`},
		{"escalate = [\"opus\", \"codex\"]\n", `ralph.toml:1: escalate: entry 2 "codex": an agent without a model`},
		{"escalate-after = 0\n", "ralph.toml:1: escalate-after: want at least 1, got 0"},
		{"fallback-after = \"-1s\"\n", "ralph.toml:1: fallback-after: want 0 or more"},
		{"allowed-agents = [\"codex\", \"gpt\"]\n", `ralph.toml:1: allowed-agents: entry 2 "gpt": unknown agent`},
		{"[review]\nfallback = [\"x\"]\n", `ralph.toml:2: review.fallback: entry 1 "x": want an agent or agent:model`},
	} {
		_, err := Load(LoadOptions{ProjectFile: writeFile(t, "ralph.toml", tc.file)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.file, err, tc.want)
		}
	}
	var c Config
	if err := c.Set("fallback", "codex,nope"); err == nil || !strings.Contains(err.Error(), `fallback: entry 2 "nope"`) {
		t.Errorf("--fallback codex,nope: %v", err)
	}
}

func TestSplitAgentModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ entry, agent, model string }{
		{"codex", "codex", ""},
		{"codex:gpt-5", "codex", "gpt-5"},
		{"opus", "", "opus"},
		{"qwen3:8b", "", "qwen3:8b"},
		{"opencode:ollama/qwen3:8b", "opencode", "ollama/qwen3:8b"},
	} {
		a, m := SplitAgentModel(tc.entry)
		if a != tc.agent || m != tc.model {
			t.Errorf("SplitAgentModel(%q) = %q, %q; want %q, %q", tc.entry, a, m, tc.agent, tc.model)
		}
	}
}

// TestReviewFallback: the reviewer falls back as the run does while it is
// the run's agent; a reviewer of its own has only its own fallback.
func TestReviewFallback(t *testing.T) {
	t.Parallel()
	c := Defaults()
	c.Fallback = []string{"codex", "gemini"}
	for _, tc := range []struct {
		agent    string
		fallback []string
		want     []string
	}{
		{"", nil, []string{"codex", "gemini"}},
		{"", []string{"amp"}, []string{"amp"}},
		{"codex", nil, nil},
		{"codex", []string{"claude"}, []string{"claude"}},
	} {
		c.Review.Agent, c.Review.Fallback = tc.agent, tc.fallback
		if diff := cmp.Diff(tc.want, c.ReviewFallback()); diff != "" {
			t.Errorf("review.agent %q, review.fallback %v (-want +got):\n%s", tc.agent, tc.fallback, diff)
		}
	}
}

// FuzzSplitAgentModel: an entry splits into an agent and a model that
// put together give it back, and a bare model is the whole entry.
func FuzzSplitAgentModel(f *testing.F) {
	for _, s := range []string{"codex", "codex:gpt-5", "opus", "qwen3:8b", "opencode:ollama/qwen3:8b", ":", "codex:", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		agent, model := SplitAgentModel(entry)
		switch {
		case agent == "" && model != entry:
			t.Errorf("%q: no agent, model %q: want the whole entry", entry, model)
		case agent != "" && model == "" && entry != agent && entry != agent+":":
			t.Errorf("%q: agent %q alone", entry, agent)
		case agent != "" && model != "" && entry != agent+":"+model:
			t.Errorf("%q: %q + %q do not give it back", entry, agent, model)
		}
	})
}
