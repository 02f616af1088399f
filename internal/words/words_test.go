package words

import "testing"

func TestCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n      int
		thing  string
		plural []string
		want   string
	}{
		{0, "iteration", nil, "0 iterations"},
		{1, "iteration", nil, "1 iteration"},
		{2, "file", nil, "2 files"},
		{1, "entry", []string{"entries"}, "1 entry"},
		{3, "entry", []string{"entries"}, "3 entries"},
	} {
		if got := Count(tc.n, tc.thing, tc.plural...); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.thing, got, tc.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	agents := []string{"claude", "codex", "gemini", "opencode", "command"}
	for name, want := range map[string]string{
		"cloude":    "claude",
		"Claude":    "claude",
		"gemeni":    "gemini",
		"open_code": "opencode",
		"xyz":       "",
	} {
		if got := Suggest(name, agents); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", name, got, want)
		}
	}
}
