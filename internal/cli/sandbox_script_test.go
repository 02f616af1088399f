package cli

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ralph-loop/ralph/internal/gittest"
	"github.com/ralph-loop/ralph/internal/golden"
	"github.com/ralph-loop/ralph/internal/sandbox"
)

// TestSandboxScripts runs testdata/sandbox/*.txtar: runs in the real
// bubblewrap, where the fake agent tries to escape (read ~/.ssh, write a
// sibling project, /etc or /usr, read GITHUB_TOKEN, signal ralph, go
// through /proc) and fails each time while its edits to the project land;
// where --parallel worktrees work; where a timeout and Ctrl-C leave
// nothing running; and where an explicit sandbox that cannot work stops
// the run before any agent does.
//
// The scripts' directories are outside /tmp, which the sandbox replaces
// with a private one: what hides the home's secrets and the sibling
// project there is the policy under test. They skip, saying why, where
// bubblewrap cannot run (CI installs Debian's bubblewrap).
func TestSandboxScripts(t *testing.T) {
	t.Parallel()
	root := sandboxWorkRoot(t)
	probeDir := filepath.Join(root, "probe")
	if err := os.Mkdir(probeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.Open(t.Context(), sandbox.KindBwrap, sandbox.Policy{Project: probeDir, Network: sandbox.NetworkOpen}, os.Environ()); err != nil {
		t.Skip("the sandbox's scripts need bubblewrap: ", err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "sandbox"),
		WorkdirRoot:         root,
		RequireExplicitExec: true,
		UpdateScripts:       golden.Updating(),
		Condition:           longScripts,
		Setup: func(env *testscript.Env) error {
			work := env.WorkDir
			home := filepath.Join(work, "home")
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			if err := reviewOffConfig(filepath.Join(home, ".config")); err != nil {
				return err
			}
			env.Setenv("FAKEAGENT_SCRIPT", filepath.Join(work, "agent", "scenario"))
			env.Setenv("FAKEREVIEWER_SCRIPT", filepath.Join(work, "agent", "review"))
			for k, v := range gittest.Vars(home) {
				env.Setenv(k, v)
			}
			env.Setenv("NO_COLOR", "1")
			// Secrets a sandboxed agent must not see.
			env.Setenv("GITHUB_TOKEN", "ghp_sandbox_test_secret")
			env.Setenv("AWS_SECRET_ACCESS_KEY", "aws_sandbox_test_secret")
			// The scripts write the ralph.toml they run with; those about
			// trust unset this and approve it as a user does.
			env.Setenv("RALPH_TRUST", "1")
			// Many work in a directory without git, which a run refuses
			// unless asked (no_repo_refused.txtar unsets it).
			env.Setenv("RALPH_ALLOW_NO_REPO", "1")
			// Marks every process of the script's runs, for noprocs.
			env.Setenv("SANDBOX_RUN", strconv.FormatInt(time.Now().UnixNano(), 36)+filepath.Base(work))
			return nil
		},
		Cmds: scriptCmds(),
	})
}

// longScripts answers a script's conditions. [long]: whether RALPH_LONG_SCRIPTS asks
// for the journeys that take minutes (a cold Go build of the standard
// library in the sandbox). .ci/run runs them; make test skips them.
// [dir:PATH] holds when PATH is a directory: a toolchain's
// files that no command names (Debian's Maven repository).
func longScripts(cond string) (bool, error) {
	if dir, ok := strings.CutPrefix(cond, "dir:"); ok {
		fi, err := os.Stat(dir)
		return err == nil && fi.IsDir(), nil
	}
	if cond != "long" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	return os.Getenv("RALPH_LONG_SCRIPTS") != "", nil
}

// sandboxWorkRoot is a directory for the scripts outside /tmp (the
// sandbox's private /tmp would hide them altogether), removed after.
func sandboxWorkRoot(t *testing.T) string {
	t.Helper()
	parent := "/var/tmp"
	if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
		parent = t.TempDir()
	}
	root, err := os.MkdirTemp(parent, "ralph-sandbox-test-") //nolint:usetesting // outside /tmp on purpose: the sandbox's private /tmp would hide it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// noprocs KEY=VALUE: no live process has KEY=VALUE in its environment
// (waiting up to 5 s for the last ones to go): nothing of a run survives
// it, whatever namespace it ran in.
func cmdNoProcs(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: noprocs KEY=VALUE")
	}
	kv := []byte(args[0])
	var left []int
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() || isZombie(pid) {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err == nil && bytes.Contains(append(append([]byte{0}, env...), 0), append(append([]byte{0}, kv...), 0)) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(end) {
			break
		}
	}
	if (len(left) == 0) == neg {
		ts.Fatalf("processes with %s: %v", args[0], left)
	}
}

// httpserve NAME: serve HTTP on the host's 127.0.0.1, answering "hello
// from NAME", and set $NAME to its host:port.
func cmdHTTPServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: httpserve NAME")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello from "+args[0])
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.Listener.Addr().String())
}

// abstractserve NAME: listen on an abstract unix socket of the host's
// (as X11, D-Bus and IDEs do), set $NAME to @ its name.
func cmdAbstractServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: abstractserve NAME")
	}
	name := "@ralph-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ln, err := net.Listen("unix", name)
	ts.Check(err)
	ts.Defer(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ts.Setenv(args[0], name)
}
