package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each CLI's sessions are told apart by its own name for a project's
// directory (e2e's TestSandboxAgents checks the names against the real
// CLIs); a file that is not a session passes.
func TestOwnSession(t *testing.T) {
	t.Parallel()
	const project, worktree = "/home/u/my_app.v2", "/home/u/.wt/w-1"
	dirs := []string{project, worktree}
	long := "/home/u/" + strings.Repeat("deep/", 45) + "app" // longer than claudeMaxName once dashed
	longName := dash(long)[:claudeMaxName] + "-1x2y3z"
	const sid = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	const rec = `{"parentUuid":null,"sessionId":"` + sid + `","type":"user","message":{"role":"user","content":"hi"}}` + "\n"

	gemini := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(gemini, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The registry knows the worktree as "w1" and another project as
	// "my-app-v2"; a marker gives "my-app-v2-1" to a third: the project's
	// own name is "my-app-v2-2".
	write("projects.json", `{"projects": {"/home/u/.wt/w-1": "w1", "/home/v/my_app.v2": "my-app-v2"}}`)
	write("tmp/my-app-v2-1/.project_root", "/home/w/my-app.v2\n")

	meta := func(cwd string) string {
		return `{"timestamp":"2026-11-27T11:58:11.522Z","type":"session_meta","payload":{"id":"x","cwd":"` + cwd + `","originator":"codex_exec"}}` + "\n" +
			`{"type":"response_item"}` + "\n"
	}
	for _, tt := range []struct {
		agent, root, rel, head string
		dirs                   []string
		want                   bool
	}{
		{"claude", "/h/.claude", ".credentials.json", "", dirs, true},
		{"claude", "/h/.claude", "projects/-home-u-my-app-v2/" + sid + ".jsonl", rec, dirs, true},
		{"claude", "/h/.claude", "projects/-home-u-my-app-v2/" + sid + ".jsonl", `{"type":"summary","summary":"x"}`, dirs, true},
		{"claude", "/h/.claude", "projects/-home-u--wt-w-1/" + sid + "/subagents/agent-a1b2.jsonl", rec, dirs, true},
		{"claude", "/h/.claude", "projects/-home-victim-app/" + sid + ".jsonl", rec, dirs, false},
		{"claude", "/h/.claude", "projects/" + sid + ".jsonl", rec, dirs, false},
		{"claude", "/h/.claude", "projects/" + longName + "/" + sid + ".jsonl", rec, []string{long}, true},
		{"claude", "/h/.claude", "projects/" + longName + "-x/" + sid + ".jsonl", rec, []string{long}, false},
		{"claude", "/h/.claude", "projects/" + dash(long)[:claudeMaxName] + "/" + sid + ".jsonl", rec, []string{long}, false},
		{"claude", "/h/.claude", "projects/-home-u-my-app-v2/" + sid + ".jsonl", rec, nil, false},
		{"claude", "/h/.claude", "projects/-home-u-caf---/" + sid + ".jsonl", rec, []string{"/home/u/café😀"}, true}, // é one unit, 😀 two
		// Not a transcript's shape (issue 37, attack 8): another name, a
		// memory file, a first line that is no record of the session.
		{"claude", "/h/.claude", "projects/-home-u-my-app-v2/memory/notes.jsonl", rec, dirs, false},
		{"claude", "/h/.claude", "projects/-home-u-my-app-v2/notes.jsonl", rec, dirs, false},
		{"claude", "/h/.claude", "projects/-home-u-my-app-v2/" + sid + ".jsonl", "# notes\n", dirs, false},
		{"claude", "/h/.claude", "projects/-home-u-my-app-v2/" + sid + ".jsonl", `{"note":"x"}`, dirs, false},
		{"claude", "/h/.claude", "projects/-home-u-my-app-v2/" + sid + ".jsonl", `{"type":"user","sessionId":"other"}`, dirs, false},
		{"qwen", "/h/.qwen", "projects/-home-u-my-app-v2/chats/s.jsonl", "", dirs, true},
		{"qwen", "/h/.qwen", "projects/-etc/chats/s.jsonl", "", dirs, false},
		{"qwen", "/h/.qwen", "oauth_creds.json", "", dirs, true},
		{"droid", "/h/.factory", "sessions/-home-u-.wt-w-1/s.jsonl", "", dirs, true},
		{"droid", "/h/.factory", "sessions/-home-u-my_app.v2/s.jsonl", "", dirs, true},
		{"droid", "/h/.factory", "sessions/-home-u-my-app-v2/s.jsonl", "", dirs, false},
		{"droid", "/h/.factory", "sessions/-home-victim/s.jsonl", "", dirs, false},
		{"droid", "/h/.factory", "auth.json", "", dirs, true},
		{"gemini", gemini, "tmp/w1/chats/session-1.jsonl", "", dirs, true},
		{"gemini", gemini, "tmp/my-app-v2-2/chats/session-1.jsonl", "", dirs, true},
		{"gemini", gemini, "tmp/my-app-v2/chats/session-1.jsonl", "", dirs, false},   // the registry's, for another
		{"gemini", gemini, "tmp/my-app-v2-1/chats/session-1.jsonl", "", dirs, false}, // a marker's, for another
		{"gemini", gemini, "oauth_creds.json", "", dirs, true},
		{"gemini", filepath.Join(gemini, "none"), "tmp/my-app-v2/chats/s.jsonl", "", dirs, true}, // no registry yet
		{"codex", "/h/.codex", "sessions/2026/11/27/rollout-a.jsonl", meta(project), dirs, true},
		{"codex", "/h/.codex", "sessions/2026/11/27/rollout-a.jsonl", meta(worktree), dirs, true},
		{"codex", "/h/.codex", "sessions/2026/11/27/rollout-a.jsonl", meta("/home/victim"), dirs, false},
		{"codex", "/h/.codex", "sessions/2026/11/27/rollout-a.jsonl", meta(""), dirs, false},
		{"codex", "/h/.codex", "sessions/2026/11/27/rollout-a.jsonl", `{"type":"response_item","payload":{"cwd":"` + project + `"}}`, dirs, false},
		{"codex", "/h/.codex", "sessions/2026/11/27/rollout-a.jsonl", `{"type":"session_meta","payload":{"cwd":`, dirs, false},
		{"codex", "/h/.codex", "auth.json", `{}`, dirs, true},
	} {
		spec, ok := Lookup(tt.agent)
		if !ok || spec.OwnSession == nil {
			t.Fatalf("%s: no OwnSession", tt.agent)
		}
		if got := spec.OwnSession(tt.root, tt.rel, strings.NewReader(tt.head), tt.dirs); got != tt.want {
			t.Errorf("%s: OwnSession(%s, %s) = %v, want %v", tt.agent, tt.root, tt.rel, got, tt.want)
		}
	}
}

// A registry Gemini CLI could not read either is no name at all: its
// sessions stay in the copy.
func TestGeminiNameUnreadableRegistry(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "projects.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := geminiName(root, "/home/u/app"); n != "" {
		t.Errorf("geminiName with a broken registry = %q, want \"\"", n)
	}
}

func TestGeminiSlugify(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"my_app.v2": "my-app-v2", "My App": "my-app", "--x--": "x", "": "project", "日本": "project", "a__b": "a-b",
	} {
		if got := geminiSlugify(in); got != want {
			t.Errorf("geminiSlugify(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzCodexSession: whatever a session file starts with, it is taken
// only when its first record is a session_meta naming one of the
// directories.
func FuzzCodexSession(f *testing.F) {
	f.Add(`{"type":"session_meta","payload":{"cwd":"/p"}}` + "\n")
	f.Add(`{"type":"session_meta","payload":{"cwd":"/q"}}`)
	f.Add(`{"type":"session_meta","payload":{"cwd":"/p"`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, head string) {
		if !codexSession("", "sessions/x.jsonl", strings.NewReader(head), []string{"/p"}) {
			return
		}
		if !strings.Contains(head, "session_meta") || !strings.Contains(head, "/p") {
			t.Errorf("taken: %q", head)
		}
	})
}
