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
// executable there, what version is it, does it look logged in.

// Setup describes how an agent CLI is installed and authenticated.
type Setup struct {
	// Install says how to install the CLI.
	Install string
	// EnvVars are variables any one of which, set and not empty, gives the
	// CLI credentials (an API key, a token, a custom provider).
	EnvVars []string
	// Files are credential files, relative to HOME, any one of which
	// means the CLI has been logged in. ~/ is HOME.
	Files []string
	// Login says how to authenticate.
	Login string
	// Keyring says the CLI may keep its login in the system keyring,
	// where doctor cannot see it.
	Keyring bool
}

// SetupOf returns the setup of a known agent; the command agent has none.
func SetupOf(name string) (Setup, bool) {
	s, ok := setups()[name]
	return s, ok
}

func setups() map[string]Setup {
	return map[string]Setup{
		"claude": {
			Install: "npm install -g @anthropic-ai/claude-code",
			EnvVars: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"},
			Files:   []string{"~/.claude/.credentials.json"},
			Login:   "run `claude` and /login, or `claude setup-token`, or set ANTHROPIC_API_KEY",
			Keyring: true, // macOS keeps the login in the keychain
		},
		"codex": {
			Install: "npm install -g @openai/codex",
			EnvVars: []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
			Files:   []string{"$CODEX_HOME/auth.json", "~/.codex/auth.json"},
			Login:   "run `codex login`, or set OPENAI_API_KEY",
		},
		"gemini": {
			Install: "npm install -g @google/gemini-cli",
			EnvVars: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_APPLICATION_CREDENTIALS"},
			Files:   []string{"~/.gemini/oauth_creds.json"},
			Login:   "run `gemini` and choose Login with Google, or set GEMINI_API_KEY",
		},
		"opencode": {
			Install: "npm install -g opencode-ai",
			EnvVars: []string{"OPENCODE_CONFIG_CONTENT", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"},
			Files:   []string{"$XDG_DATA_HOME/opencode/auth.json", "~/.local/share/opencode/auth.json"},
			Login:   "run `opencode auth login`, or set your provider's API key",
		},
		"droid": {
			Install: "npm install -g droid (or curl -fsSL https://app.factory.ai/cli | sh)",
			EnvVars: []string{"FACTORY_API_KEY"},
			Files:   []string{"~/.factory/auth.json"},
			Login:   "run `droid` and log in, or set FACTORY_API_KEY",
			Keyring: true,
		},
		"copilot": {
			Install: "npm install -g @github/copilot",
			EnvVars: []string{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_BASE_URL"},
			Files:   []string{"~/.copilot/config.json"},
			Login:   "run `copilot login`, or set COPILOT_GITHUB_TOKEN",
			Keyring: true,
		},
		"qwen": {
			Install: "npm install -g @qwen-code/qwen-code",
			EnvVars: []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"},
			Files:   []string{"~/.qwen/oauth_creds.json"},
			Login:   "run `qwen` and log in, or set OPENAI_API_KEY (with OPENAI_BASE_URL and OPENAI_MODEL)",
		},
		"amp": {
			Install: "npm install -g @sourcegraph/amp",
			EnvVars: []string{"AMP_API_KEY"},
			Files:   []string{"$XDG_DATA_HOME/amp/secrets.json", "~/.local/share/amp/secrets.json"},
			Login:   "run `amp login`, or set AMP_API_KEY",
		},
		"cursor": {
			Install: "curl https://cursor.com/install -fsS | bash",
			EnvVars: []string{"CURSOR_API_KEY"},
			Files:   []string{"~/.config/cursor/auth.json", "~/.cursor/cli-config.json"},
			Login:   "run `cursor-agent login`, or set CURSOR_API_KEY",
			Keyring: true,
		},
		"kiro": {
			Install: "curl -fsSL https://cli.kiro.dev/install | bash",
			EnvVars: []string{"KIRO_API_KEY"},
			Files:   []string{"$XDG_DATA_HOME/kiro-cli/data.sqlite3", "~/.local/share/kiro-cli/data.sqlite3"},
			Login:   "run `kiro-cli login`, or set KIRO_API_KEY",
		},
	}
}

// Credentials returns what gives the agent credentials in env: "variable
// X is set" or "FILE exists"; empty when nothing was found.
func (s Setup) Credentials(env []string) string {
	for _, name := range s.EnvVars {
		if getenv(env, name) != "" {
			return name + " is set"
		}
	}
	home := getenv(env, "HOME")
	for _, f := range s.Files {
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
