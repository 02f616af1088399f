package agent

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/words"
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

// Spec is what ralph knows about one agent: how to build its adapter and
// the facts the rest of ralph asks about it (doctor, logs, the loop's
// prompt, the agents table of docs/agents.md). Each adapter file declares its own,
// next to its constructor, so that an agent's facts live in one place.
type Spec struct {
	// Name is the agent's name in config and history ("claude").
	Name string
	// New builds the adapter.
	New func(Options) (Adapter, error)
	// Dialect is the format the CLI prints, named as the command agent's
	// output setting names it (Qwen Code and Amp print Claude Code's
	// claude-stream-json): a program that wraps the CLI can be run as the
	// command agent with this output. Empty for the command agent, whose
	// format is configured.
	Dialect string
	// ResolvesFileRefs says the CLI reads the file behind an @path
	// reference in a prompt itself; for the others the loop rewrites
	// references into plain paths, which they know to open.
	ResolvesFileRefs bool
	// Custom says the agent is whatever program the user configures:
	// nothing is known of how it is installed, whether it takes
	// --version, or where it keeps a login.
	Custom bool
	// Install says how to install the CLI.
	Install string
	// Credentials says where the CLI finds its login.
	Credentials Credentials
	// ConfigDirs are the directories and files the CLI reads and writes
	// outside the project: its settings, logins, sessions, logs and
	// caches, written "~/x" (under HOME) or "$VAR/x" (under a variable's
	// value, when set). In bubblewrap the agent works on a per-run copy
	// of them (internal/agenthome), shaped by Scratch, ReadOnly and
	// WriteBack: a hook or an MCP server it writes there must not run
	// the next time the user starts the CLI outside ralph. sandbox-exec
	// cannot put a copy in their place: there they are writable.
	ConfigDirs []string
	// Hosts are the hosts the CLI needs (its API, its login), as
	// sandbox.allow-hosts entries: a run whose proxy allows a list of
	// hosts adds them. A user who points the CLI elsewhere (a gateway, a
	// local model) names that host in sandbox.allow-hosts.
	Hosts []string
	// Scratch are paths in ConfigDirs, written as they are, whose names
	// may hold * and ? (and ** for any number of directories), that hold
	// no configuration: caches, logs, the session stores of earlier
	// runs, databases the CLI rebuilds. They are not copied, which keeps
	// a copy small: the agent finds a directory empty and a file
	// missing, and what it leaves there goes with the copy, unreported,
	// but for what WriteBack names.
	Scratch []string
	// ReadOnly are directories in ConfigDirs that hold programs (a local
	// install, tools the CLI downloaded): too big to copy, and not the
	// agent's to change; it runs the real ones, bound read-only.
	ReadOnly []string
	// WriteBack are the files in ConfigDirs (patterns, as Scratch's)
	// whose changes are the user's own: a refreshed login, the
	// transcript of a session the user may resume. What the agent writes
	// there goes back to the user's file after it exits; any other
	// change is reported and goes with the copy. A file that mixes a
	// login with settings (Copilot's config.json), or a database, is not
	// written back: a change the agent made there could be anything.
	WriteBack []string
	// OwnSession, when set, tells the sessions of the project
	// directories dirs (where the agent ran this run) from the others
	// among the files WriteBack names. The CLI keeps every project's
	// sessions in one store, and a session the agent wrote there for
	// another project would be resumed in that project, outside the
	// sandbox: it is not written back. root is the configuration
	// directory that holds the file (the user's, symbolic links
	// resolved), rel its path there (slash-separated), head its content
	// from the start. A file that is not a session (a login) passes.
	OwnSession func(root, rel string, head io.Reader, dirs []string) bool
	// Env names the variables the CLI reads besides its credentials'
	// (its endpoints, settings and switches; NAME* is a prefix): a
	// sandbox passes them in, with Credentials.EnvVars, and drops the
	// rest of ralph's environment.
	Env []string
}

// specs lists the known agents, in the order errors and help list them.
// Adding an agent is its adapter file, with its Spec, and one line here.
func specs() []Spec {
	return []Spec{
		claudeSpec(),
		codexSpec(),
		geminiSpec(),
		openCodeSpec(),
		droidSpec(),
		copilotSpec(),
		qwenSpec(),
		ampSpec(),
		cursorSpec(),
		kiroSpec(),
		commandSpec(),
	}
}

// Specs returns the known agents, in the order errors and help list them.
func Specs() []Spec { return specs() }

// Lookup returns the agent called name.
func Lookup(name string) (Spec, bool) {
	for _, s := range specs() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names returns the known agent names.
func Names() []string {
	var names []string
	for _, s := range specs() {
		names = append(names, s.Name)
	}
	return names
}

// New returns the adapter called name.
func New(name string, opts Options) (Adapter, error) {
	if s, ok := Lookup(name); ok {
		return s.New(opts)
	}
	return nil, unknownAgent(name)
}

// unknownAgent says that no agent is called name, naming the one the user
// most likely meant and the others.
func unknownAgent(name string) error {
	if s := words.Suggest(name, Names()); s != "" {
		return fmt.Errorf("unknown agent %q (did you mean %q?): want one of %s", name, s, strings.Join(Names(), ", "))
	}
	return fmt.Errorf("unknown agent %q: want one of %s", name, strings.Join(Names(), ", "))
}

// ResolvesFileRefs says whether the named agent reads the file behind an
// @path reference in a prompt itself. An agent ralph does not know is
// assumed not to.
func ResolvesFileRefs(name string) bool {
	s, ok := Lookup(name)
	return ok && s.ResolvesFileRefs
}

// TranscriptDecoder returns a decoder for output the named agent wrote,
// read after the fact (`ralph logs`): its adapter's, with output as the
// command agent's dialect. For an agent ralph does not know (the demo's),
// or a command agent whose output is not a known dialect, output whose
// first byte (head) is '{' is read as claude-stream-json and anything else
// as text.
func TranscriptDecoder(name, output string, head []byte) Decoder {
	if s, ok := Lookup(name); ok {
		// The command agent needs a program to be built; reading its
		// output does not run it.
		if ad, err := s.New(Options{Command: name, Output: output}); err == nil {
			return ad.NewDecoder()
		}
	}
	if len(head) > 0 && head[0] == '{' {
		return newClaudeDecoder()
	}
	return &textDecoder{}
}

// IsNotFound reports whether err says the agent's executable is not
// installed (or not on PATH).
func IsNotFound(err error) bool { return proc.IsNotFound(err) }
