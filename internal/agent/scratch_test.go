package agent

import (
	"slices"
	"strings"
	"testing"
)

// TestScratchUsersSayScratcher pins that Run makes a scratch directory for
// every adapter that uses one: an invocation that mentions the directory
// belongs to a Scratcher, or Run would hand it an empty path.
func TestScratchUsersSayScratcher(t *testing.T) {
	t.Parallel()
	const dir = "/ralph-scratch-probe"
	for _, s := range Specs() {
		a, err := s.New(Options{Command: "x"})
		if err != nil {
			t.Fatal(err)
		}
		inv, err := a.Invocation(Request{Prompt: "PROMPT", PromptFile: "PROMPT_FILE", ScratchDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		uses := slices.ContainsFunc(slices.Concat(inv.Argv, inv.EnvSet), func(w string) bool {
			return strings.Contains(w, dir)
		})
		_, says := a.(Scratcher)
		if uses != says {
			t.Errorf("%s: its invocation uses the scratch directory: %v; it is a Scratcher: %v", s.Name, uses, says)
		}
	}
}
