package cli

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/gittest"
)

// TestTUIInARealTerminal runs `ralph demo` in a tmux session: the TUI
// draws the task list and the agent's activity, p pauses the run after
// the iteration and p again resumes it, and at the end the terminal is
// back to the shell, out of the alternate screen, with the summary on it.
func TestTUIInARealTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the tmux test builds ralph and runs the demo")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (apt-get install tmux): skipping the real-terminal test of the TUI")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := buildRalph(t, dir)
	sock := filepath.Join(dir, "tmux.sock")
	env := append(gittest.Env(dir), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"), "NO_COLOR=1")
	tm := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	tm("new-session", "-d", "-s", "ralph", "-x", "100", "-y", "30", "env", "PS1=$ ", "sh")
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })

	screen := func() string { return tm("capture-pane", "-p", "-t", "ralph") }
	waitFor := func(what string, ok func(string) bool) string {
		t.Helper()
		var s string
		for end := time.Now().Add(45 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if s = screen(); ok(s) {
				return s
			}
		}
		t.Fatalf("timed out waiting for %s; the screen:\n%s", what, s)
		return ""
	}
	has := func(subs ...string) func(string) bool {
		return func(s string) bool {
			for _, sub := range subs {
				if !strings.Contains(s, sub) {
					return false
				}
			}
			return true
		}
	}

	project := filepath.Join(dir, "demo")
	tm("send-keys", "-t", "ralph", bin+" demo -C "+project+" --speed 2; echo exit=$?", "Enter")

	// The task list and the live activity of the first iteration.
	waitFor("the TUI", has("── tasks", "DEMO-1  Create the greeting", "DEMO-4  Document the greeter", "→ ", "● running"))

	// p: the run pauses once the current iteration ends, and stays paused.
	tm("send-keys", "-t", "ralph", "p")
	s := waitFor("the pause", has("‖ paused", "p resume"))
	iteration := regexp.MustCompile(`iteration \d+/`).FindString(s)
	time.Sleep(1500 * time.Millisecond)
	if s := screen(); !strings.Contains(s, "‖ paused") || !strings.Contains(s, iteration) {
		t.Fatalf("the run did not stay paused at %q:\n%s", iteration, s)
	}

	// p again resumes it, and the demo runs to the end.
	tm("send-keys", "-t", "ralph", "p")
	waitFor("the run to resume", func(s string) bool { return !strings.Contains(s, "‖ paused") })
	s = waitFor("the end", has("exit=0"))

	// The terminal is restored: no alternate screen, the summary and the
	// shell prompt on the normal one, nothing of the TUI left over.
	if alt := strings.TrimSpace(tm("display-message", "-p", "-t", "ralph", "#{alternate_on}")); alt != "0" {
		t.Errorf("alternate screen still on (%q)", alt)
	}
	for _, want := range []string{"ralph done: all tasks done", "✓ DEMO-4", "The demo project is in"} {
		if !strings.Contains(s, want) {
			t.Errorf("the screen after exit lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "── tasks") || strings.Contains(s, "q stop") {
		t.Errorf("TUI leftovers on the screen after exit:\n%s", s)
	}
	lines := strings.Split(strings.TrimRight(s, "\n "), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "$" {
		t.Errorf("the last line is %q, want the shell prompt:\n%s", last, s)
	}
}

// buildRalph builds the ralph binary into dir.
func buildRalph(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	bin := filepath.Join(dir, "ralph")
	cmd := exec.Command(goTool, "build", "-o", bin, "github.com/ralph-loop/ralph/cmd/ralph")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
