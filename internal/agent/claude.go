package agent

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// claude is the Claude Code adapter.
type claude struct{ base }

// NewClaude returns the adapter for Claude Code.
func NewClaude(opts Options) (Adapter, error) {
	b, err := newBase("claude", opts)
	return claude{b}, err
}

// claudeSpec is what ralph knows about Claude Code.
func claudeSpec() Spec {
	dirs := []string{"$CLAUDE_CONFIG_DIR", "~/.claude"}
	return Spec{
		Name:             "claude",
		New:              NewClaude,
		Dialect:          "claude-stream-json",
		ResolvesFileRefs: true,
		Install:          "npm install -g @anthropic-ai/claude-code",
		Credentials: Credentials{
			EnvVars: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"},
			Files:   []string{"~/.claude/.credentials.json"},
			Login:   "run `claude` and /login, or `claude setup-token`, or set ANTHROPIC_API_KEY",
			Keyring: true, // macOS keeps the login in the keychain
		},
		Hosts: []string{"api.anthropic.com", "*.anthropic.com", "claude.ai", "*.claude.ai"},
		// CLAUDE_CONFIG_DIR replaces ~/.claude (and holds .claude.json).
		// .claude.json, rewritten at every start, holds MCP servers and
		// project trust with the counters: reported, never written back.
		ConfigDirs: append(slices.Clone(dirs), "~/.claude.json"),
		// Earlier sessions (projects: all of them, often the bulk of the
		// directory, and the per-project memory with them), logs, the
		// backups of edited files, shell snapshots, per-session todos,
		// feature-flag and telemetry caches.
		Scratch: under(dirs, "projects", "debug", "file-history", "shell-snapshots", "todos",
			"statsig", "telemetry", "paste-cache", "session-env"),
		// The local install (claude migrate-installer) holds the
		// executable itself.
		ReadOnly: under(dirs, "local"),
		// The login, and this run's transcripts (claude --resume finds
		// them), by their exact shape (claudeSession); memory files
		// under projects are instructions to later sessions, and are not.
		WriteBack:  under(dirs, ".credentials.json", "projects/*/*.jsonl", "projects/*/*/subagents/*.jsonl"),
		OwnSession: claudeSession,
		Env:        []string{"ANTHROPIC_*", "CLAUDE_*", "DISABLE_AUTOUPDATER", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING", "DISABLE_NON_ESSENTIAL_MODEL_CALLS", "MAX_THINKING_TOKENS", "BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS"},
	}
}

func (claude) Name() string { return "claude" }

// Invocation runs `claude -p --output-format stream-json --verbose [--model
// M] --dangerously-skip-permissions` with the prompt on stdin. Args, when
// set, replace the flags; --model M still follows them when a model is
// requested.
func (c claude) Invocation(req Request) (Invocation, error) {
	argv := []string{cmp.Or(c.opts.Command, "claude")}
	if c.opts.Args != nil {
		argv = append(argv, c.opts.Args...)
		if req.Model != "" {
			argv = append(argv, "--model", req.Model)
		}
	} else {
		argv = append(argv, "-p", "--output-format", "stream-json", "--verbose")
		if req.Model != "" {
			argv = append(argv, "--model", req.Model)
		}
		argv = append(argv, "--dangerously-skip-permissions")
	}
	argv = append(argv, c.opts.ExtraArgs...)
	var env []string
	if c.opts.Root {
		// As root, Claude Code refuses --dangerously-skip-permissions
		// unless it is told it runs in a sandbox.
		env = append(env, "IS_SANDBOX=1")
	}
	return Invocation{Argv: argv, EnvSet: c.env(env...), Prompt: PromptStdin, Stdin: req.Prompt}, nil
}

func (claude) NewDecoder() Decoder { return newClaudeDecoder() }

// envList turns a map into KEY=VALUE entries in key order, so that argv
// and env are the same on every run (--dry-run, golden tests).
func envList(m map[string]string) []string {
	var env []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		env = append(env, fmt.Sprintf("%s=%s", k, m[k]))
	}
	return env
}
