package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ralph-loop/ralph/internal/fakeagent"
	"github.com/ralph-loop/ralph/internal/gittest"
	"github.com/ralph-loop/ralph/internal/golden"
)

// TestMain makes ralph and the fake agent real commands inside scripts.
// The fake agent is on $PATH both as fakeagent and as claude, so the real
// Claude adapter is exercised end to end.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"ralph":     func() { os.Exit(Main(BuildInfo{})) },
		"claude":    func() { os.Exit(fakeagent.Main()) },
		"fakeagent": func() { os.Exit(fakeagent.Main()) },
		// Codex: the fake agent with "format codex" in its scenario, read
		// by the real Codex adapter (tokens, no cost).
		"codex": func() { os.Exit(fakeagent.Main()) },
		// A reviewer: the fake agent playing $FAKEREVIEWER_SCRIPT (its
		// prompts in $FAKEREVIEWER_PROMPTS), so that a run's worker and
		// reviewer follow scenarios of their own.
		"fakereviewer": func() {
			os.Setenv("FAKEAGENT_SCRIPT", os.Getenv("FAKEREVIEWER_SCRIPT"))
			os.Setenv("FAKEAGENT_PROMPTS", os.Getenv("FAKEREVIEWER_PROMPTS"))
			os.Exit(fakeagent.Main())
		},
	})
}

// TestScripts runs testdata/script/*.txtar: one behaviour per file.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		UpdateScripts:       golden.Updating(), // go test -update rewrites cmp files
		Setup: func(env *testscript.Env) error {
			work := env.WorkDir
			env.Setenv("HOME", work)
			if err := stateHome(env); err != nil {
				return err
			}
			if err := userConfigHome(env); err != nil {
				return err
			}
			env.Setenv("FAKEAGENT_SCRIPT", filepath.Join(work, "scenario"))
			env.Setenv("FAKEREVIEWER_SCRIPT", filepath.Join(work, "review"))
			// Git with a fixed identity and no global config.
			for k, v := range gittest.Vars(work) {
				env.Setenv(k, v)
			}
			env.Setenv("NO_COLOR", "1")
			// Scripts that run the go toolchain as a gate share the
			// build cache go itself uses: a cold one costs seconds.
			env.Setenv("GOCACHE_SHARED", goCache(work))
			rustHome(env)
			// These scripts are about other things than the sandbox: the
			// fake agent reads its scenario through variables a sandbox
			// drops (testdata/sandbox has the sandbox's own scripts).
			env.Setenv("RALPH_SANDBOX_MODE", "none")
			// They write the ralph.toml they run with, as the user would,
			// and are about what it does: each run vouches for it
			// (--trust). The trust_*.txtar scripts unset it and go
			// through ralph init and ralph trust.
			env.Setenv("RALPH_TRUST", "1")
			// Many work in a directory without git, which a run refuses
			// unless asked (no_repo_refused.txtar unsets it).
			env.Setenv("RALPH_ALLOW_NO_REPO", "1")
			return nil
		},
		Cmds: scriptCmds(),
	})
}

// stateHome gives a script an XDG_STATE_HOME (where the trust store is)
// beside its work directory: HOME is the project in these scripts, and
// the store is outside the project, as it is for a user.
func stateHome(env *testscript.Env) error {
	dir := env.WorkDir + "-state"
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	env.Defer(func() { _ = os.RemoveAll(dir) })
	env.Setenv("XDG_STATE_HOME", dir)
	return nil
}

// userConfigHome gives a script an XDG_CONFIG_HOME beside its work
// directory, as stateHome does, with the user's config.toml of a user
// who turned the reviewer off (reviewOffConfig).
func userConfigHome(env *testscript.Env) error {
	dir := env.WorkDir + "-config"
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	env.Defer(func() { _ = os.RemoveAll(dir) })
	env.Setenv("XDG_CONFIG_HOME", dir)
	return reviewOffConfig(dir)
}

// reviewOffConfig writes, into the user's config directory configHome,
// the config.toml of a user who turned off the reviewer that review.when
// = "auto" runs after each done claim of a run with no gates: the
// scripts and tests that use it are about other things, and their fake
// agent's scenario would be read by the reviewer too. Their project's
// ralph.toml still turns it on ([review] when = "task"); the
// review_auto_*.txtar scripts remove the file and run with the default.
// A config.toml already there (a script's own) is left as it is.
func reviewOffConfig(configHome string) error {
	path := filepath.Join(configHome, "ralph", "config.toml")
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte("[review]\nwhen = \"off\"\n"), 0o644)
}

// rustHome keeps rustup's toolchains and cargo's home where they are for
// the user running the tests: rustup's proxies (cargo, rustc) look for
// them under HOME, which scripts set to their work directory.
func rustHome(env *testscript.Env) {
	home, err := os.UserHomeDir()
	if err != nil {
		return
	}
	for name, dir := range map[string]string{"RUSTUP_HOME": ".rustup", "CARGO_HOME": ".cargo"} {
		if v := os.Getenv(name); v != "" {
			dir = v
		} else {
			dir = filepath.Join(home, dir)
		}
		env.Setenv(name, dir)
	}
}

// goCache is the go build cache of the user running the tests, or one in
// work when there is none.
func goCache(work string) string {
	if c := os.Getenv("GOCACHE"); c != "" && c != "off" {
		return c
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "go-build")
	}
	return filepath.Join(work, ".gocache")
}

// scriptCmds are the commands scripts have besides testscript's own.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"waitfile": cmdWaitFile,
		"pidgone":  cmdPidGone,
		"sizeof":   cmdSizeOf,
		"mkbig":    cmdMkBig,
		"exits":    cmdExits,
		// notify_script_test.go
		"notifysink": cmdNotifySink,
		// sandbox_script_test.go
		"noprocs":       cmdNoProcs,
		"httpserve":     cmdHTTPServe,
		"abstractserve": cmdAbstractServe,
	}
}

// waitfile FILE [SECONDS]: wait until FILE exists.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: waitfile FILE [SECONDS]")
	}
	limit := 20 * time.Second
	if len(args) > 1 {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		limit = time.Duration(n) * time.Second
	}
	path := ts.MkAbs(args[0])
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	ts.Fatalf("%s did not appear within %s", args[0], limit)
}

// pidgone FILE: the process whose pid FILE holds no longer exists (a
// zombie counts as gone: it holds no resources and cannot run).
func cmdPidGone(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pidgone FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	var alive bool
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		alive = syscall.Kill(pid, 0) == nil && !isZombie(pid)
		if !alive {
			break
		}
	}
	if alive == !neg {
		ts.Fatalf("process %d: alive=%v", pid, alive)
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// sizeof FILE N: FILE is exactly N bytes long.
func cmdSizeOf(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: sizeof FILE N")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	want, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	if (fi.Size() == want) == neg {
		ts.Fatalf("%s is %d bytes, want %d", args[0], fi.Size(), want)
	}
}

// mkbig FILE N: write a file of N bytes (test input too large to inline).
func cmdMkBig(ts *testscript.TestScript, neg bool, args []string) {
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Repeat("x", n)), 0o644))
}

// exits N PROG ARGS...: run PROG and require exit code N; its stdout and
// stderr are what the next stdout/stderr lines check.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: exits N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%v", err)
	}
	if (got == want) == neg {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}
