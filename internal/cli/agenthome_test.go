package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agenthome"
)

func TestCopyMessages(t *testing.T) {
	t.Parallel()
	const why = " (ralph keeps the agent's own configuration a per-run copy)"
	many := agenthome.Report{}
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		many.Discarded = append(many.Discarded, agenthome.Change{Path: "~/.codex/" + p, Kind: agenthome.Added})
	}
	for _, tt := range []struct {
		name string
		rep  agenthome.Report
		want []string
	}{
		{"nothing", agenthome.Report{WrittenBack: []string{"~/.claude/.credentials.json"}}, nil},
		{"one change", agenthome.Report{Discarded: []agenthome.Change{{Path: "~/.claude/settings.json", Kind: agenthome.Changed}}},
			[]string{"the agent changed ~/.claude/settings.json; the change was discarded" + why}},
		{"a link, a removal", agenthome.Report{Discarded: []agenthome.Change{
			{Path: "~/.claude/x", Kind: agenthome.Added, Detail: "a symbolic link to /etc"},
			{Path: "~/.claude/y", Kind: agenthome.Removed}}},
			[]string{"the agent added ~/.claude/x (a symbolic link to /etc) and removed ~/.claude/y; the changes were discarded" + why}},
		{"many", many, []string{"the agent added ~/.codex/a, added ~/.codex/b, added ~/.codex/c, added ~/.codex/d, added ~/.codex/e and 2 more; the changes were discarded" + why}},
		{"kept", agenthome.Report{Discarded: []agenthome.Change{
			{Path: "~/.codex/auth.json", Kind: agenthome.Kept, Detail: "yours changed since the run started"},
			{Path: "~/.codex/config.toml", Kind: agenthome.Changed}}},
			[]string{"the agent changed ~/.codex/config.toml; the change was discarded" + why,
				"the agent changed ~/.codex/auth.json, which ralph writes back, but yours changed since the run started: yours is kept"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, copyMessages(tt.rep)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
