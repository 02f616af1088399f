package cli

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/term"

	"github.com/ralph-loop/ralph/internal/config"
)

// IO is where a command reads and writes; tests use buffers.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// TTY says whether Out is a terminal.
	TTY bool
}

// Factory holds what commands share: streams, the environment and the
// global flags.
type Factory struct {
	IO      *IO
	Environ func() []string
	Build   BuildInfo // which ralph this is (ralph version)
	// Global flags.
	Dir        string
	ConfigFile string
	Debug      bool
	// Trust (--trust) uses the project's configuration file as it is,
	// for this invocation only, as RALPH_TRUST=1 does (trust.go).
	Trust bool
	// approved are the configuration contents this invocation obeys.
	approved approvals
	// agents are the process groups of the running agents (several with
	// --parallel), for a forced exit on the second Ctrl-C.
	agents agentGroups
	// stopNote, when set, is what the first stop signal prints in place of
	// a run's words: a command with no agent to stop says what stopping
	// means for it.
	stopNote atomic.Pointer[string]
}

// agentGroups is the set of running agents' process groups.
type agentGroups struct {
	mu     sync.Mutex
	groups map[int]struct{}
}

func (g *agentGroups) add(pgid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.groups == nil {
		g.groups = map[int]struct{}{}
	}
	g.groups[pgid] = struct{}{}
}

func (g *agentGroups) remove(pgid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.groups, pgid)
}

// kill sends SIGKILL to every group.
func (g *agentGroups) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for pgid := range g.groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

func defaultFactory() *Factory {
	return &Factory{IO: newIO(os.Stdin, os.Stdout, os.Stderr), Environ: os.Environ}
}

// newIO wraps the process's streams. Out is a terminal only when the
// terminal driver answers for it: /dev/null is a character device too, and
// `ralph run > /dev/null` must not start the TUI.
func newIO(in, out, errOut *os.File) *IO {
	return &IO{In: in, Out: out, ErrOut: errOut, TTY: term.IsTerminal(int(out.Fd()))}
}

// forceKill kills the running agent's whole group at once: the user asked
// twice, the grace period is over.
func (f *Factory) forceKill() { f.agents.kill() }

// ProjectDir is the directory ralph acts in (-C), absolute.
func (f *Factory) ProjectDir() (string, error) {
	dir := f.Dir
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", usageError(err)
	}
	if !fi.IsDir() {
		return "", usageError(&os.PathError{Op: "-C", Path: abs, Err: syscall.ENOTDIR})
	}
	return abs, nil
}

// Config loads the layered configuration for the project directory, for
// a command that obeys it: a project configuration file the user has not
// approved stops it (trust.go).
func (f *Factory) Config(dir string) (config.Config, error) {
	return f.loadConfig(dir, f.approve)
}

// ConfigUnapproved loads the layered configuration whether or not the
// user approved the project's file: only for commands that read what a
// run left (status, tasks, logs), run nothing it says and read no
// prompt file.
func (f *Factory) ConfigUnapproved(dir string) (config.Config, error) {
	return f.loadConfig(dir, nil)
}
