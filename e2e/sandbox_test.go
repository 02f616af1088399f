package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/ralph-loop/ralph/internal/fakemodel"
	"github.com/ralph-loop/ralph/internal/sandbox"
)

// TestSandboxAgents runs the real Claude Code CLI, Codex, Gemini CLI,
// Qwen Code and droid inside bubblewrap (--sandbox bwrap), in a network
// of their own whose way out is ralph's proxy: each completes both tasks of the plan against the
// fake model server, reached through the proxy (sandbox.allow-hosts names
// its address), its shell tool running in the sandbox, while the model's
// attempt to read ~/.ssh/id_ed25519 and GITHUB_TOKEN through that tool
// finds nothing, and its request to a host not allowed is refused and
// reported. The project, HOME and TMPDIR are outside /tmp, which the
// sandbox replaces with a private one.
//
// Run one with -run 'TestSandboxAgents/claude'.
func TestSandboxAgents(t *testing.T) {
	for _, cli := range agentCLIs() {
		// Copilot takes GITHUB_TOKEN as its login, the variable this
		// test holds as the secret no agent may see; OpenCode finished
		// through the proxy, but now and then goes on past its task's
		// end in one session, which the scripted model does not follow.
		if cli.name == "copilot" || cli.name == "opencode" {
			continue
		}
		t.Run(cli.name, func(t *testing.T) {
			t.Parallel()
			testSandboxTasksDone(t, cli)
		})
	}
}

const sandboxKey = "PRIVATE KEY of the e2e test"

// cliSessions is where each CLI keeps its sessions, relative to HOME: a
// glob of the run's own (DASHED and SLASHED are the CLI's name for the
// project's directory, made from its path), and a session planted there
// for another project, which ralph must not write back.
var cliSessions = map[string]struct{ own, planted, content string }{
	"claude": {".claude/projects/DASHED/*.jsonl", ".claude/projects/-home-victim-app/planted.jsonl", `{"type":"user"}`},
	"codex": {".codex/sessions/*/*/*/rollout-*.jsonl", ".codex/sessions/2026/11/27/rollout-planted.jsonl",
		`{"type":"session_meta","payload":{"cwd":"/home/victim/app"}}`},
	"gemini": {".gemini/tmp/project/chats/*", ".gemini/tmp/victim-app/chats/session-planted.jsonl", `{}`},
	"qwen":   {".qwen/projects/DASHED/chats/*.jsonl", ".qwen/projects/-home-victim-app/chats/planted.jsonl", `{}`},
	"droid":  {".factory/sessions/SLASHED/*.jsonl", ".factory/sessions/-home-victim-app/planted.jsonl", `{"type":"session_start"}`},
}

// dashed is the name Claude Code and Qwen Code give a project's
// directory of sessions: every character of its path but an ASCII
// letter or digit made '-' (droid makes only each '/' one: SLASHED).
func dashed(dir string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '-'
	}, dir)
}

func testSandboxTasksDone(t *testing.T, cli agentCLI) {
	t.Helper()
	root := outsideTmp(t)
	sessions := cliSessions[cli.name]
	// No $(...): Gemini CLI's shell tool refuses a command substitution.
	plant := fmt.Sprintf(`mkdir -p "$HOME/%s" && echo '%s' > "$HOME/%s"; `, path.Dir(sessions.planted), sessions.content, sessions.planted)
	turns := []fakemodel.Turn{
		fakemodel.Shell(plant + `cat "$HOME/.ssh/id_ed25519" > leaked.txt 2>&1; echo "token=$GITHUB_TOKEN" >> leaked.txt; ` +
			`git ls-remote http://blocked.example/repo.git > fetched.txt 2>&1; touch done-1.txt`),
		fakemodel.Text(doneText("1")),
		fakemodel.Shell("touch done-2.txt"), fakemodel.Text(doneText("2")),
	}
	p := newProjectIn(t, cli, root, turns...)
	p.writeHome(".ssh/id_ed25519", sandboxKey)
	p.setenv(
		"RALPH_SANDBOX_MODE=bwrap",
		// What the harness and the CLIs' setups need inside: the run's
		// mark (to find what outlives ralph) and codex's key variable.
		"RALPH_SANDBOX_ENV=RALPH_E2E_RUN,FAKE_MODEL_API_KEY",
		"GITHUB_TOKEN=ghp_e2e_sandbox_secret",
		// The fake model server is on the host's loopback: named, the
		// proxy lets the CLI reach it, and nothing else of the host's.
		"RALPH_SANDBOX_ALLOW_HOSTS="+strings.TrimPrefix(p.server.URL, "http://"),
	)
	r := p.run(runDeadline, "--max-iterations", "4", "--max-attempts", "2", "--timeout", iterTimeout)
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	if !strings.Contains(r.stdout, "sandbox bwrap") {
		t.Errorf("the run header does not say sandbox bwrap:\n%s", firstLine(r.stdout))
	}
	// git's request through the proxy to a host the list does not name.
	if !strings.Contains(r.stdout, "refused a connection: blocked.example:80 is not in sandbox.allow-hosts") {
		t.Errorf("the run does not report the refused host:\n%s", r.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(p.dir, "fetched.txt")); err != nil || !strings.Contains(string(b), "403") {
		t.Errorf("git ls-remote through the proxy: %q (%v), want its 403", b, err)
	}
	// The sessions written back: the run's, in the project's own
	// directory as the CLI names it (the project's path has a '_' and a
	// '.'), and not the one planted for another project.
	glob := strings.NewReplacer("DASHED", dashed(p.dir), "SLASHED", strings.ReplaceAll(p.dir, "/", "-")).Replace(sessions.own)
	own, _ := filepath.Glob(filepath.Join(p.home, glob))
	own = slices.DeleteFunc(own, func(f string) bool { return strings.Contains(f, "planted") })
	if len(own) == 0 {
		var there []string
		store := filepath.Join(p.home, strings.SplitN(sessions.own, "/", 3)[0], strings.SplitN(sessions.own, "/", 3)[1])
		_ = filepath.WalkDir(store, func(f string, _ fs.DirEntry, _ error) error {
			there = append(there, strings.TrimPrefix(f, store))
			return nil
		})
		t.Errorf("no session of the run's written back to ~/%s (the project is %s); the store holds %q", sessions.own, p.dir, there)
	}
	if _, err := os.Stat(filepath.Join(p.home, sessions.planted)); err == nil {
		t.Errorf("the session the agent planted for another project was written back: ~/%s", sessions.planted)
	}
	if !strings.Contains(r.stdout, "planted") || !strings.Contains(r.stdout, "not a session of this project") {
		t.Errorf("the run does not report the planted session:\n%s", r.stdout)
	}
	p.checkTranscriptHas("ralph: network: " + strings.TrimPrefix(p.server.URL, "http://") + " allowed")
	p.checkBothDone()
	p.checkShellRan(2)
	b, err := os.ReadFile(filepath.Join(p.dir, "leaked.txt"))
	switch {
	case err != nil:
		t.Errorf("the model's first shell call left no leaked.txt: %v", err)
	case strings.Contains(string(b), sandboxKey) || strings.Contains(string(b), "ghp_"):
		t.Errorf("the agent read a secret in the sandbox: %s", b)
	case !strings.Contains(string(b), "token=\n"):
		t.Errorf("leaked.txt: %q, want the shell's attempt and an empty GITHUB_TOKEN", b)
	}
	var st struct {
		Sandbox struct{ Mode, Kind string } `json:"sandbox"`
	}
	sb, err := os.ReadFile(filepath.Join(p.dir, ".ralph", "state.json"))
	if err == nil {
		err = json.Unmarshal(sb, &st)
	}
	if err != nil || st.Sandbox.Kind != sandbox.KindBwrap {
		t.Errorf("state.json sandbox %+v (%v), want kind bwrap", st.Sandbox, err)
	}
}

// outsideTmp is a directory for a project outside /tmp (the sandbox's
// private /tmp would hide it), removed after the test; the test skips
// when bubblewrap cannot run here.
func outsideTmp(t *testing.T) string {
	t.Helper()
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
	// '_' and '.' in the path: the CLIs' names for it differ there.
	root, err := os.MkdirTemp("/var/tmp", "ralph-e2e_sandbox.") //nolint:usetesting // outside /tmp on purpose: the sandbox's private /tmp would hide it
	if err != nil {
		t.Skip("no /var/tmp for a project outside /tmp: ", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if root, err = filepath.EvalSymlinks(root); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.Open(t.Context(), sandbox.KindBwrap, sandbox.Policy{Project: root, Network: sandbox.NetworkOpen}, os.Environ()); err != nil {
		t.Skip("bubblewrap cannot run here: ", err)
	}
	if strings.HasPrefix(toolsBin, "/tmp/") {
		t.Skipf("the CLIs are in %s, which the sandbox's private /tmp hides: install them elsewhere", toolsBin)
	}
	return root
}

// checkTranscriptHas fails unless one of the run's transcripts has a
// line that starts with prefix.
func (p *project) checkTranscriptHas(prefix string) {
	p.t.Helper()
	files, _ := filepath.Glob(filepath.Join(p.dir, ".ralph", "runs", "*", "iter-*.out"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "\n"+prefix) {
			return
		}
	}
	p.t.Errorf("no line of the %d transcripts starts with %q", len(files), prefix)
}
