// Package gittest gives tests a git that behaves the same on every
// machine: a fixed identity, no system or global configuration, and helpers
// that run real git in temporary repositories. It is test support: only
// _test.go files import it.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Identity is the author and committer of every test commit.
const (
	Name  = "ralph test"
	Email = "ralph@example.com"
)

// Vars returns the variables that isolate git from the machine's
// configuration; home is where the (absent) global config would be.
func Vars(home string) map[string]string {
	return map[string]string{
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   filepath.Join(home, ".gitconfig-none"),
		"GIT_AUTHOR_NAME":     Name,
		"GIT_AUTHOR_EMAIL":    Email,
		"GIT_COMMITTER_NAME":  Name,
		"GIT_COMMITTER_EMAIL": Email,
	}
}

// Env returns the process environment with Vars(home) on top, for the
// Env of a command or of ralph's own git runner.
func Env(home string) []string {
	vars := Vars(home)
	env := make([]string, 0, len(os.Environ())+len(vars))
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := vars[k]; !ok {
			env = append(env, kv)
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// Git runs git with args in dir under Env(dir) and returns its output,
// failing the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = Env(dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Init makes dir a repository on branch main with one commit holding the
// files already there, and returns dir.
func Init(t testing.TB, dir string) string {
	t.Helper()
	Git(t, dir, "init", "-q", "-b", "main")
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", "initial")
	return dir
}
