package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/proc"
)

// dialEnv makes the test binary a program that connects to a TCP address
// and exits 0 when it can (TestMain).
const dialEnv = "SANDBOX_TEST_DIAL"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == BridgeCommand {
		// The bridge's stand-in: it says how it was started.
		fmt.Println(strings.Join(os.Args[1:], " "))
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == LayersCommand {
		os.Exit(LayersMain(os.Args[2:], os.Stderr))
	}
	if addr := os.Getenv(dialEnv); addr != "" {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			os.Exit(1)
		}
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// realBox opens a bwrap box on the fixture, or skips when bwrap cannot
// run here. The fixture lies in the real /tmp, so the box's private /tmp
// is another directory: what the policy itself hides is under test.
func realBox(t *testing.T, network string) (root string, box *Box) {
	t.Helper()
	return realBoxIn(t, t.TempDir(), network)
}

// realBoxIn is realBox with its fixture in dir.
func realBoxIn(t *testing.T, dir, network string) (root string, box *Box) {
	t.Helper()
	root, p, env := fixtureIn(t, dir)
	if err := os.WriteFile(filepath.Join(root, "home/.ssh/id_ed25519"), []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"sibling", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.Network = network
	exe, err := proc.LookPath("bwrap", "", nil)
	if err != nil {
		t.Skip("bubblewrap is not installed (CI installs Debian's bubblewrap): ", err)
	}
	box, err = NewBox(KindBwrap, exe, p, env)
	if err != nil {
		t.Fatal(err)
	}
	box.tmp = filepath.Join(root, "tmp")
	if err := box.Probe(t.Context()); err != nil {
		t.Skip("bubblewrap cannot run here: ", err)
	}
	return root, box
}

// inBox runs a shell script in the box, in dir, with env, and returns its
// exit code and output.
func inBox(t *testing.T, box *Box, dir string, env []string, script string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	res, err := proc.Run(t.Context(), proc.Cmd{Argv: []string{"sh", "-c", script}, Dir: dir,
		Env: append(box.env, env...), Sandbox: box, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	return res.ExitCode, strings.TrimSpace(out.String())
}

// Each escape fails, and the project's edits land.
func TestBwrapConfines(t *testing.T) {
	t.Parallel()
	root, box := realBox(t, NetworkOpen)
	proj := filepath.Join(root, "proj")
	self := strconv.Itoa(os.Getpid())
	attempts := []struct {
		name, script string
		dir          string
		ok           bool
	}{
		{name: "write the project", script: "echo edit > src/new.txt && cat src/new.txt", ok: true},
		{name: "write the agent's directory", script: "echo s > $HOME/.claude/session", ok: true},
		{name: "read the ssh key", script: "cat $HOME/.ssh/id_ed25519"},
		{name: "list the ssh directory", script: "test -n \"$(ls -A $HOME/.ssh)\""},
		{name: "read the netrc", script: "test -s $HOME/.netrc"},
		{name: "read a denied project file", script: "test -n \"$(cat .env; ls -l .env | grep -v ' 0 ')\" && test -s .env"},
		{name: "write a sibling project", script: "echo x > ../sibling/x"},
		{name: "write /etc", script: "echo x > /etc/ralph-escape"},
		{name: "write /usr", script: "echo x > /usr/ralph-escape"},
		{name: "write the home", script: "echo x > $HOME/.bashrc"},
		{name: "write ralph's state", script: "echo x > .ralph/state.json"},
		{name: "write a git hook", script: "echo x > .git/hooks/pre-commit"},
		{name: "write the git config", script: "echo x >> .git/config"},
		{name: "write the git directory", script: "echo x > .git/objects-test", ok: true},
		{name: "see ralph's process", script: "test -e /proc/" + self},
		{name: "signal ralph", script: "kill -0 " + self},
		{name: "see a process outside", script: "ps -e -o comm= | grep -q '^sandbox.test'"},
		{name: "reach the host's root through /proc", script: "ls /proc/1/root" + filepath.Join(root, "home/.ssh/id_ed25519")},
		{name: "remount the host read-write", script: "mount -o remount,rw / && touch /etc/ralph-escape"},
		{name: "unmount what hides the keys", script: "umount $HOME/.ssh && cat $HOME/.ssh/id_ed25519"},
		{name: "write the private /tmp", script: "echo x > $TMPDIR/x && cat $TMPDIR/x", ok: true},
		{name: "a worktree writes itself", dir: filepath.Join(proj, ".ralph/worktrees/1"), script: "echo x > src/x", ok: true},
		{name: "a worktree writes the project", dir: filepath.Join(proj, ".ralph/worktrees/1"), script: "echo x > " + filepath.Join(proj, "src/x")},
	}
	t.Run("attempts", func(t *testing.T) { // returns once its parallel subtests are done
		for _, tc := range attempts {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				code, out := inBox(t, box, cmpOr(tc.dir, proj), nil, tc.script)
				if (code == 0) != tc.ok {
					t.Errorf("exit %d (%s): want success=%v", code, out, tc.ok)
				}
				if strings.Contains(out, "PRIVATE KEY") {
					t.Errorf("the key leaked: %s", out)
				}
			})
		}
	})
	for _, f := range []string{"/etc/ralph-escape", "/usr/ralph-escape", filepath.Join(root, "sibling/x"), filepath.Join(proj, "src/x")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s exists: an escape landed", f)
		}
	}
	if b, err := os.ReadFile(filepath.Join(proj, "src/new.txt")); err != nil || string(b) != "edit\n" {
		t.Errorf("the project edit did not land: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, ".git/config")); len(b) != 0 {
		t.Errorf(".git/config was changed: %q", b)
	}
}

// A copy takes its path's place: the child reads and writes the copy,
// the host's file stays as it was, and a read-only path inside the copy
// is the host's.
func TestBwrapCopies(t *testing.T) {
	t.Parallel()
	root, box := realBox(t, NetworkOpen)
	r := func(rel string) string { return filepath.Join(root, rel) }
	for name, content := range map[string]string{
		"home/.claude/settings.json":   "the user's",
		"home/.claude/local/claude":    "the user's install",
		"copy/claude/settings.json":    "the copy's",
		"copy/claude/local/.keep-mine": "",
	} {
		if err := os.MkdirAll(filepath.Dir(r(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r(name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	box = box.WithCopies([]Copy{{Path: r("home/.claude"), Source: r("copy/claude"), ReadOnly: []string{r("home/.claude/local")}}})
	code, out := inBox(t, box, r("proj"), nil, `cat $HOME/.claude/settings.json; echo; echo hook > $HOME/.claude/settings.json && cat $HOME/.claude/local/claude; echo; { echo x > $HOME/.claude/local/claude; } 2>/dev/null || echo refused`)
	if want := "the copy's\nthe user's install\nrefused"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, output %q; want %q", code, out, want)
	}
	for name, want := range map[string]string{
		"home/.claude/settings.json": "the user's",
		"home/.claude/local/claude":  "the user's install",
		"copy/claude/settings.json":  "hook\n",
	} {
		if b, err := os.ReadFile(r(name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
}

// Only the variables the policy names go in.
func TestBwrapEnvironment(t *testing.T) {
	t.Parallel()
	root, box := realBox(t, NetworkOpen)
	code, out := inBox(t, box, filepath.Join(root, "proj"), []string{"GITHUB_TOKEN=ghp_secret", "AWS_SECRET_ACCESS_KEY=aws",
		"ANTHROPIC_API_KEY=mine", "LC_ALL=C"}, `echo "$GITHUB_TOKEN|$AWS_SECRET_ACCESS_KEY|$ANTHROPIC_API_KEY|$LC_ALL|$TMPDIR"`)
	if want := "||mine|C|" + filepath.Join(root, "tmp"); code != 0 || out != want {
		t.Errorf("exit %d, environment %q; want %q", code, out, want)
	}
}

// sandbox.network = "off" leaves a child a loopback of its own: the
// host's listeners are out of reach; "open" shares the host's.
func TestBwrapNetwork(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // after the parallel subtests
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, network := range []string{NetworkOpen, NetworkOff} {
		t.Run("network="+network, func(t *testing.T) {
			t.Parallel()
			root, box := realBox(t, network)
			var out bytes.Buffer
			res, err := proc.Run(t.Context(), proc.Cmd{Argv: []string{exe}, Dir: filepath.Join(root, "proj"),
				Env: append(box.env, dialEnv+"="+ln.Addr().String()), Sandbox: box.With(nil, []string{dialEnv}),
				Stdout: &out, Stderr: &out})
			if err != nil {
				t.Fatal(err)
			}
			if open := network == NetworkOpen; (res.ExitCode == 0) != open {
				t.Errorf("dial the host's 127.0.0.1: exit %d (%s), want success=%v", res.ExitCode, out.String(), open)
			}
		})
	}
}

// With ralph's proxy the child runs under the bridge, ralph's own
// executable, whatever its file is named (this test binary stands in for
// it): the command line is one every bubblewrap ralph supports reads
// (0.8 has no --argv0).
func TestBwrapRunsTheBridge(t *testing.T) {
	t.Parallel()
	root, box := realBox(t, NetworkProxy)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(root, "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	box = box.WithEgress(Egress{Socket: sock, Bridge: exe, NoProxy: []string{"localhost"}})
	box.tmp = privateTmp // where the socket is bound; the project and the bridge are bound back in it
	code, out := inBox(t, box, filepath.Join(root, "proj"), nil, "echo the child")
	sh, err := proc.LookPath("sh", "", box.env)
	if err != nil {
		t.Fatal(err)
	}
	want := BridgeCommand + " --socket " + bridgeSocket + " --no-proxy localhost -- " + sh + " -c echo the child"
	if code != 0 || out != want {
		t.Errorf("exit %d, output %q; want the bridge started as %q", code, out, want)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
