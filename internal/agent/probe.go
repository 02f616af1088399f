package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
)

// What `ralph doctor` asks about an agent without spending tokens: is its
// executable there, what version is it, does it look logged in. The
// mechanics are here; what to look for is in each agent's Spec.

// Credentials says where an agent CLI finds its login. Each adapter file
// declares its agent's in its Spec.
type Credentials struct {
	// EnvVars are variables any one of which, set and not empty, gives the
	// CLI credentials (an API key, a token, a custom provider).
	EnvVars []string
	// Files are credential files, any one of which means the CLI has been
	// logged in: "~/x" is under HOME, "$VAR/x" under the variable's value.
	Files []string
	// Login says how to authenticate.
	Login string
	// Keyring says the CLI may keep its login in the system keyring,
	// where doctor cannot see it.
	Keyring bool
}

// Find returns what gives the agent credentials in env: "variable X is
// set" or "FILE exists"; empty when nothing was found.
func (c Credentials) Find(env []string) string {
	for _, name := range c.EnvVars {
		if getenv(env, name) != "" {
			return name + " is set"
		}
	}
	home := getenv(env, "HOME")
	for _, f := range c.Files {
		p := expandPath(f, env, home)
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p + " exists"
		}
	}
	return ""
}

// ExpandPath resolves a path of a Spec, "~/x" against env's HOME and
// "$VAR/x" against env; it returns "" when what it needs is not set.
func ExpandPath(p string, env []string) string {
	return expandPath(p, env, getenv(env, "HOME"))
}

// expandPath resolves "~/x" against home and "$VAR/x" against env; it
// returns "" when what it needs is not set.
func expandPath(p string, env []string, home string) string {
	switch {
	case strings.HasPrefix(p, "~/"):
		if home == "" {
			return ""
		}
		return filepath.Join(home, p[2:])
	case strings.HasPrefix(p, "$"):
		name, rest, _ := strings.Cut(p[1:], "/")
		v := getenv(env, name)
		if !filepath.IsAbs(v) {
			return ""
		}
		return filepath.Join(v, rest)
	}
	return p
}

// getenv returns the last value of name in env.
func getenv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// Executable returns the program an adapter starts, as configured (a name
// or a path).
func Executable(a Adapter) string {
	inv, err := a.Invocation(Request{PromptFile: "prompt.md"})
	if err != nil || len(inv.Argv) == 0 {
		return ""
	}
	return inv.Argv[0]
}

// LookPath finds an agent's executable the way Run does: on the PATH in
// env (relative PATH entries skipped), a name with a slash relative to
// dir. A missing one matches proc.ErrNotFound (IsNotFound).
func LookPath(name, dir string, env []string) (string, error) {
	p, err := proc.LookPath(name, dir, env)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	return p, nil
}

// NotFound says why LookPath found no name: a path (it has a slash) does
// not exist or is not an executable file; a bare name is not on PATH.
// dir is what a relative path is relative to.
func NotFound(name, dir string) string {
	if !strings.ContainsRune(name, '/') {
		return name + " not found on PATH"
	}
	p := name
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	switch fi, err := os.Stat(p); {
	case err != nil:
		return name + " does not exist"
	case fi.IsDir():
		return name + " is a directory, not a program"
	default:
		return name + " is not executable"
	}
}

// Version runs `path --version` in dir with env and returns the first
// line it prints. The process has its own group, killed when the timeout
// expires; nothing is sent to a model.
func Version(ctx context.Context, path, dir string, env []string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out, stderr bytes.Buffer
	res, err := proc.Run(ctx, proc.Cmd{
		Argv: []string{path, "--version"}, Dir: dir, Env: env,
		Stdout: &out, Stderr: &stderr, WaitDelay: time.Second,
	})
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s --version: no answer within %s", path, timeout)
	}
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	line := firstLine(out.String())
	if line == "" {
		line = firstLine(stderr.String())
	}
	if err := res.Err(); err != nil {
		if line != "" {
			return "", fmt.Errorf("%s --version: %w: %s", path, err, line)
		}
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	return truncate(line, 200), nil
}

func firstLine(s string) string {
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(ansiRE.ReplaceAllString(l, "")); l != "" {
			return l
		}
	}
	return ""
}

// xdg returns a path under an XDG base directory both ways it may be:
// under the variable, when it is set, and under its default in HOME
// (xdg("data", "amp") is $XDG_DATA_HOME/amp and ~/.local/share/amp).
func xdg(kind, rel string) []string {
	base := map[string][2]string{
		"config": {"XDG_CONFIG_HOME", ".config"},
		"data":   {"XDG_DATA_HOME", ".local/share"},
		"cache":  {"XDG_CACHE_HOME", ".cache"},
		"state":  {"XDG_STATE_HOME", ".local/state"},
	}[kind]
	return []string{"$" + base[0] + "/" + rel, "~/" + base[1] + "/" + rel}
}

// under returns each of rels under each of dirs, the dirs in turn
// (under(["~/.a", "$A"], "x", "y") is ~/.a/x, ~/.a/y, $A/x, $A/y): one
// path of a CLI's directory that may be either.
func under(dirs []string, rels ...string) []string {
	var out []string
	for _, d := range dirs {
		for _, r := range rels {
			out = append(out, d+"/"+r)
		}
	}
	return out
}
