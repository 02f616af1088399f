package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

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

// The agents' homes of a command: one copy per agent, shared by its
// processes, synced when the last one exits, told once the command can
// show it, removed at close.
func TestAgentHomes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	settings := filepath.Join(home, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newAgentHomes([]string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, ".state")})
	project, worktree := filepath.Join(home, "my_app.v2"), filepath.Join(home, "worktrees", "w1")
	first, err := h.enter("claude", project)
	if err != nil {
		t.Fatal(err)
	}
	second, err := h.enter("claude", worktree) // --parallel: another worker
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || !cmp.Equal(first, second) || first[0].Path != filepath.Join(home, ".claude") {
		t.Fatalf("copies %+v and %+v, want one of ~/.claude, shared", first, second)
	}
	if none, err := h.enter("command", project); err != nil || len(none) != 0 {
		t.Errorf("the command agent's copies: %+v, %v; want none", none, err)
	}
	h.leave("command")
	if err := os.WriteFile(filepath.Join(first[0].Source, "settings.json"), []byte(`{"hooks": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Sessions: the project's and the worktree's are written back, one
	// the agent writes for another project is not. Claude Code names a
	// session by a UUID, which write-back checks.
	const session1, session2 = "0b1e6a52-8d1c-4b8e-9f7a-2c3d4e5f6a7b", "5f0c2d1e-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
	sessions := map[string]bool{
		dash(project) + "/" + session1 + ".jsonl":                       true,
		dash(worktree) + "/" + session2 + "/subagents/agent-a1b2.jsonl": true,
		"-home-victim-app/" + session1 + ".jsonl":                       false,
	}
	for rel := range sessions {
		p := filepath.Join(first[0].Source, "projects", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"type":"user"}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var told []string
	h.leave("claude")
	h.setWarn(func(msg string) { told = append(told, msg) })
	if len(told) != 0 {
		t.Errorf("told %q while a worker is still in the copy", told)
	}
	h.leave("claude")
	want := []string{"the agent added ~/.claude/projects/-home-victim-app/" + session1 + ".jsonl (" + notOwnSession +
		") and changed ~/.claude/settings.json; the changes were discarded (ralph keeps the agent's own configuration a per-run copy)"}
	if diff := cmp.Diff(want, told); diff != "" {
		t.Errorf("told (-want +got):\n%s", diff)
	}
	for rel, back := range sessions {
		_, err := os.Stat(filepath.Join(home, ".claude", "projects", filepath.FromSlash(rel)))
		if got := err == nil; got != back {
			t.Errorf("~/.claude/projects/%s written back: %v, want %v", rel, got, back)
		}
	}
	h.close()
	h.close()
	if _, err := os.Stat(first[0].Source); err == nil {
		t.Error("the copy outlived close")
	}
	if b, _ := os.ReadFile(settings); string(b) != "{}" {
		t.Errorf("the user's settings.json: %q", b)
	}
	if _, err := h.enter("claude", project); err == nil {
		t.Error("an agent entered after close")
	}
}

// dash is Claude Code's name for a project's directory of sessions, as
// the real CLI makes it (e2e's TestSandboxAgents checks it there).
func dash(dir string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '-'
	}, dir)
}
