package cli

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

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
	// Global flags.
	Dir        string
	ConfigFile string
	Debug      bool
	// agentGroup is the process group of the running agent, for a forced
	// exit on the second Ctrl-C.
	agentGroup atomic.Int64
}

func defaultFactory() *Factory {
	return &Factory{
		IO:      &IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, TTY: isTerminal(os.Stdout)},
		Environ: os.Environ,
	}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// forceKill kills the running agent's whole group at once: the user asked
// twice, the grace period is over.
func (f *Factory) forceKill() {
	if pgid := f.agentGroup.Load(); pgid > 0 {
		_ = syscall.Kill(-int(pgid), syscall.SIGKILL)
	}
}

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

// Config loads the layered configuration for the project directory.
func (f *Factory) Config(dir string) (config.Config, error) {
	env := f.Environ()
	opts := config.LoadOptions{
		UserFile:    config.UserFile(env),
		ProjectFile: filepath.Join(dir, "ralph.toml"),
		Environ:     env,
	}
	if f.ConfigFile != "" {
		opts.ProjectFile = f.ConfigFile
		opts.ProjectFileRequired = true
	}
	return config.Load(opts)
}
