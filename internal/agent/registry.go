package agent

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Options configure an adapter; every adapter takes the same ones.
type Options struct {
	// Command replaces the adapter's executable.
	Command string
	// Args replace the adapter's default arguments; ExtraArgs are appended
	// to them.
	Args, ExtraArgs []string
	// Env is added to the invocation's EnvSet.
	Env map[string]string
	// Output names the output dialect of the command adapter ("text",
	// "claude-stream-json").
	Output string
	// Root says ralph runs as root (the caller sets it from
	// os.Geteuid() == 0): some CLIs need to be told they are sandboxed.
	Root bool
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
func IsNotFound(err error) bool { return errors.Is(err, exec.ErrNotFound) }
