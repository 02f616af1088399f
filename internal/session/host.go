package session

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

// Host is what every command and every run shares: the streams, the
// environment, the global flags, the configuration this invocation
// approved and the agents it runs.
type Host struct {
	IO      *IO
	Environ func() []string
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

// NewHost is the host of a process: its streams and environment.
func NewHost(in, out, errOut *os.File) *Host {
	return &Host{IO: newIO(in, out, errOut), Environ: os.Environ}
}

// StopNote is what the first stop signal prints, when a command set one.
func (f *Host) StopNote() *string { return f.stopNote.Load() }

// SetStopNote says what stopping means for a command with no agent to stop.
func (f *Host) SetStopNote(note string) { f.stopNote.Store(&note) }

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

// newIO wraps the process's streams. Out is a terminal only when the
// terminal driver answers for it: /dev/null is a character device too, and
// `ralph run > /dev/null` must not start the TUI.
func newIO(in, out, errOut *os.File) *IO {
	return &IO{In: in, Out: out, ErrOut: errOut, TTY: term.IsTerminal(int(out.Fd()))}
}

// ForceKill kills the running agents' whole groups at once: the user asked
// twice, the grace period is over.
func (f *Host) ForceKill() { f.agents.kill() }

// Config loads the layered configuration for the project directory, for
// a command that obeys it: a project configuration file the user has not
// approved stops it (trust.go).
func (f *Host) Config(dir string) (config.Config, error) {
	return f.loadConfig(dir, f.approve)
}

// ConfigUnapproved loads the layered configuration whether or not the
// user approved the project's file: only for commands that read what a
// run left (status, tasks, logs), run nothing it says and read no
// prompt file.
func (f *Host) ConfigUnapproved(dir string) (config.Config, error) {
	return f.loadConfig(dir, nil)
}

// ProjectDir is the directory ralph acts in (-C), absolute.
func (f *Host) ProjectDir() (string, error) {
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

// UsageError is bad command-line usage (exit 2): an option that names
// what does not exist, or options that do not go together.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

func (e *UsageError) Unwrap() error { return e.Err }

func usageError(err error) error { return &UsageError{Err: err} }
