package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
)

// Options configure an adapter; every adapter takes the same ones.
type Options struct {
	// Command replaces the adapter's executable.
	Command string
	// Args replace the adapter's default arguments (everything between the
	// executable and the model flag); ExtraArgs are appended after the
	// model flag. A prompt an adapter passes in argv, and the files it
	// needs to read the output (Copilot's usage file), are added either
	// way.
	Args, ExtraArgs []string
	// Env is added to the invocation's EnvSet.
	Env map[string]string
	// Output names the output dialect of the command adapter ("text",
	// "claude-stream-json", ...; see dialects).
	Output string
	// Root says ralph runs as root (the caller sets it from
	// os.Geteuid() == 0): some CLIs need to be told they are sandboxed.
	Root bool
	// ErrorPatterns are regular expressions, by error kind ("usage_limit",
	// "rate_limit", "transient", "fatal"), that classify a failed run the
	// agent's structured output did not classify. They are tried on the
	// error text, stderr and the final message, before the built-in ones.
	ErrorPatterns map[string][]string
	// Now is the clock reset times are read against ("resets 7pm" means
	// the next 7pm after Now); nil means time.Now.
	Now func() time.Time
}

// constructor builds one adapter.
type constructor struct {
	name string
	new  func(Options) (Adapter, error)
}

// adapters lists the known agents, in the order errors and help list them.
// Adding an agent is one line here.
func adapters() []constructor {
	return []constructor{
		{"claude", NewClaude},
		{"codex", NewCodex},
		{"gemini", NewGemini},
		{"opencode", NewOpenCode},
		{"droid", NewDroid},
		{"copilot", NewCopilot},
		{"qwen", NewQwen},
		{"amp", NewAmp},
		{"cursor", NewCursor},
		{"kiro", NewKiro},
		{"command", NewCommand},
	}
}

// Names returns the known agent names.
func Names() []string {
	var names []string
	for _, c := range adapters() {
		names = append(names, c.name)
	}
	return names
}

// New returns the adapter called name.
func New(name string, opts Options) (Adapter, error) {
	for _, c := range adapters() {
		if c.name == name {
			return c.new(opts)
		}
	}
	return nil, fmt.Errorf("unknown agent %q: want one of %s", name, strings.Join(Names(), ", "))
}

// IsNotFound reports whether err says the agent's executable is not
// installed (or not on PATH).
func IsNotFound(err error) bool { return proc.IsNotFound(err) }
