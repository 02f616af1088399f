package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/gittest"
)

// unprivileged is the user the journey runs as: nobody, whom no file of
// the machine's belongs to and who holds no capability outside a user
// namespace of its own.
const unprivileged = "65534"

// A Node project's first run in the default sandbox as a user without
// privileges, as the README types it (ralph init, then ralph run): the
// gates' throwaway layers over ~/.npm are mounted in a user namespace of
// ralph's own, which an unprivileged user may make, and bwrap then drops
// every capability. The good task is committed, the bad one refused by
// its gate, and the user's npm cache is as it was. Root's journeys are
// internal/cli's testdata/sandbox; this is the same one as nobody.
func TestUnprivilegedUserJourney(t *testing.T) {
	if os.Getenv("RALPH_E2E_UNPRIVILEGED") == "" {
		t.Skip("RALPH_E2E_UNPRIVILEGED is not set: the unprivileged journey runs from .ci/run")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the journey as nobody")
	}
	for _, prog := range []string{"setpriv", "bwrap", "npm", "git"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("needs %s: %v", prog, err)
		}
	}
	// Outside /tmp: the sandbox's /tmp is a private one.
	root, err := os.MkdirTemp("/var/tmp", "ralph-unprivileged-") //nolint:usetesting // outside /tmp on purpose
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	for out, pkg := range map[string]string{"ralph": "./cmd/ralph", "claude": "./internal/fakeagent/cmd/fakeagent"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, out), pkg)
		build.Dir = ".."
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	home := filepath.Join(root, "home")
	project := filepath.Join(home, "calc")
	files := map[string]string{
		"calc/package.json": `{"name": "calc", "version": "1.0.0", "private": true, "scripts": {"test": "node --test"}}` + "\n",
		"calc/calc.js":      "exports.add = (a, b) => a + b;\n",
		"calc/calc.test.js": nodeTest("add", "./calc", "add(2, 3)", "5"),
		"prd.json": `{"userStories": [
  {"id": "US-001", "title": "Sub", "description": "sub(a, b) is a - b", "passes": false},
  {"id": "US-002", "title": "Mul", "description": "mul(a, b) is a * b", "passes": false}
]}` + "\n",
		"agent/scenario": agentWrites("sub.js", "exports.sub = (a, b) => a - b;\n") +
			agentWrites("sub.test.js", nodeTest("sub", "./sub", "sub(5, 3)", "2")) +
			"final Done. <promise>TASK_DONE</promise>\n---\n" +
			agentWrites("mul.js", "exports.mul = (a, b) => a + b;\n") +
			agentWrites("mul.test.js", nodeTest("mul", "./mul", "mul(2, 3)", "6")) +
			"final Done. <promise>TASK_DONE</promise>\n",
	}
	for name, body := range files {
		mustWrite(t, filepath.Join(home, name), body)
	}
	chown := exec.Command("chown", "-R", unprivileged+":"+unprivileged, home)
	if out, err := chown.CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
	env := []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home, "NO_COLOR=1", "TMPDIR=/tmp",
		"FAKEAGENT_SCRIPT=" + filepath.Join(home, "agent", "scenario"),
	}
	for k, v := range gittest.Vars(home) {
		env = append(env, k+"="+v)
	}
	// as runs argv in the project as nobody and returns its exit code and
	// output.
	as := func(argv ...string) (int, string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "setpriv", append([]string{"--reuid=" + unprivileged, "--regid=" + unprivileged,
			"--clear-groups", "--"}, argv...)...)
		cmd.Dir, cmd.Env = project, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("%s: %v", strings.Join(argv, " "), err)
			}
			code = ee.ExitCode()
		}
		return code, out.String()
	}
	must := func(argv ...string) string {
		t.Helper()
		code, out := as(argv...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", strings.Join(argv, " "), code, out)
		}
		return out
	}
	if id := strings.TrimSpace(must("id", "-u")); id != unprivileged {
		t.Fatalf("the journey runs as uid %s, want %s", id, unprivileged)
	}
	must("npm", "test") // the user's own run: ~/.npm as npm leaves it
	npmBefore := must("sh", "-c", `find "$HOME/.npm" -type f -not -path "*/_logs/*" | sort | xargs -r sha256sum`)
	must("git", "init", "-q", "-b", "main")
	if out := must("ralph", "init"); !strings.Contains(out, "gate: npm test") {
		t.Fatalf("ralph init did not find npm test:\n%s", out)
	}
	must("cp", filepath.Join(home, "prd.json"), "prd.json")
	must("sh", "-c", `cat >> ralph.toml <<'EOF'
gates.timeout = "5m"

[sandbox]
env = ["FAKEAGENT_*"]
allow-write = ["`+filepath.Join(home, "agent")+`"] # the fake agent's place in its scenario
EOF`)
	must("ralph", "trust", "ralph.toml") // the user's edit, approved as the run asks
	must("git", "add", "-A")
	must("git", "commit", "-q", "-m", "init")
	code, out := as("ralph", "run", "--no-tui", "--max-attempts", "2")
	if code != 4 {
		t.Fatalf("ralph run: exit %d, want 4 (US-002 out of attempts)\n%s", code, out)
	}
	for _, want := range []string{"sandbox bwrap", "✓ task_done", "✗ gate_failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("ralph run's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "read-only file system") || strings.Contains(out, "Operation not permitted") {
		t.Errorf("the sandbox got in the gate's way:\n%s", out)
	}
	log := must("git", "log", "--format=%s")
	if !strings.Contains(log, "US-001") || strings.Contains(log, "US-002") {
		t.Errorf("the run branch's commits:\n%s\nwant US-001's and not US-002's", log)
	}
	if after := must("sh", "-c", `find "$HOME/.npm" -type f -not -path "*/_logs/*" | sort | xargs -r sha256sum`); after != npmBefore {
		t.Errorf("the user's ~/.npm changed:\nbefore\n%s\nafter\n%s", npmBefore, after)
	}
}

// nodeTest is a node:test file asserting that call, of the function name
// exported by module, is want.
func nodeTest(name, module, call, want string) string {
	return fmt.Sprintf("const test = require('node:test');\nconst assert = require('node:assert');\n"+
		"const { %s } = require('%s');\ntest('%s', () => { assert.strictEqual(%s, %s); });\n", name, module, name, call, want)
}

// agentWrites is the fake agent's scenario line writing body (no double
// quote, dollar, backslash or percent in it) to file.
func agentWrites(file, body string) string {
	return "exec printf \"" + strings.ReplaceAll(body, "\n", `\n`) + "\" > " + file + "\n"
}
