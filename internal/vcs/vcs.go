package vcs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
)

// Errors callers tell apart.
var (
	// ErrNotRepo is returned outside a git or Sapling repository.
	ErrNotRepo = errors.New("not a git repository")
	// ErrDetached is returned by Branch when git's HEAD names no branch.
	ErrDetached = errors.New("HEAD is detached")
)

// Repo is a working tree under version control, git or Sapling: what a run
// needs before it starts (branch, status) and during it (snapshots,
// commits).
type Repo interface {
	// Kind is "git" or "sapling".
	Kind() string
	// Dir is the top of the working tree.
	Dir() string
	// Snapshot identifies the working tree's content, .ralph/ excepted.
	Snapshot(ctx context.Context) (string, error)
	// Changes lists the files (absolute paths) whose content changed since
	// the previous call, .ralph/ excepted. The first call sets the
	// baseline; what it returns compares with the tree as ralph last saw
	// it, maybe in an earlier run, or nothing.
	Changes(ctx context.Context) ([]string, error)
	// Dirty reports whether anything but .ralph/ differs from the current
	// commit (untracked files included, ignored ones not): whether Commit
	// would have something to commit.
	Dirty(ctx context.Context) (bool, error)
	// Commit records every change but .ralph/; "" when there was nothing
	// to commit.
	Commit(ctx context.Context, message string) (string, error)
	// Branch is the checked-out branch (git) or active bookmark (Sapling,
	// "" when none). Git's detached HEAD is ErrDetached.
	Branch(ctx context.Context) (string, error)
	// SwitchBranch checks out the branch, creating it at the current
	// commit when it does not exist yet.
	SwitchBranch(ctx context.Context, name string) (created bool, err error)
	// Status lists what differs from the current commit, untracked files
	// included and ignored files not.
	Status(ctx context.Context) ([]Change, error)
	// Show returns a file's content at a revision ("HEAD" or "." for the
	// current commit); path is relative to Dir.
	Show(ctx context.Context, rev, path string) ([]byte, error)
}

// Change is one entry of Status.
type Change struct {
	// Code is the short status as the tool prints it: "M", "??", "A",
	// "D" for git; "M", "?", "A", "R", "!" for Sapling.
	Code string
	// Path is relative to the top of the working tree, with slashes.
	Path string
}

// Detect opens the repository that contains dir. Sapling is asked first
// (`sl root`, as rslph does): a Sapling checkout has a .sl directory at
// its root. A git repository is used through git even when Sapling, which
// can also drive git repositories, is installed: git has the worktrees
// --parallel needs. env is the environment commands run with (nil:
// inherit); its PATH is where sl is looked for.
func Detect(ctx context.Context, dir string, env []string) (Repo, error) {
	if s, err := OpenSapling(ctx, dir, env); err == nil {
		if _, err := os.Stat(filepath.Join(s.Root, ".git")); err != nil {
			return s, nil
		}
	}
	g, err := Open(ctx, dir, env)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// CmdError is a failed git or sl command, with what it printed on stderr.
type CmdError struct {
	Argv   []string
	Code   int // exit code; -1 when it did not run
	Stderr string
	Err    error
}

func (e *CmdError) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("%s: %s", strings.Join(e.Argv, " "), msg)
}

func (e *CmdError) Unwrap() error { return e.Err }

// exitCode is the exit code of a failed command, -1 when err is not one.
func exitCode(err error) int {
	var ce *CmdError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return -1
}

// stopGrace is how long git or sl has, once ctx is done, between SIGTERM
// and SIGKILL: on SIGTERM git removes its lock files (a SIGKILL would
// leave index.lock behind); in its own process group it no longer gets
// the terminal's SIGINT itself.
const stopGrace = time.Second

// command runs one program in dir, through proc like every child ralph
// starts; a failure carries its stderr, which says what went wrong better
// than an exit status.
func command(ctx context.Context, dir string, environ, extraEnv []string, bin string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	res, err := proc.Run(ctx, proc.Cmd{
		Argv: append([]string{bin}, args...), Dir: dir,
		// A fresh slice: environ may be shared by commands running at once.
		Env:    append(slices.Clip(environ), extraEnv...),
		Stdout: &stdout, Stderr: &stderr,
		Grace: stopGrace,
		// git's own daemons (gc --auto, fsmonitor) are meant to outlive it.
		KeepDaemons: true,
	})
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		code := res.ExitCode
		if res.Signal != 0 {
			code = -1 // killed: no exit code
		}
		name := filepath.Base(bin)
		return stdout.String(), &CmdError{Argv: append([]string{name}, args...), Code: code,
			Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return stdout.String(), nil
}

// environ is env, or the process's environment when env is nil.
func environ(env []string) []string {
	if env != nil {
		return env
	}
	return os.Environ()
}

// ralphPath reports whether a repository-relative path is ralph's own
// state directory, which is never snapshotted or committed.
func ralphPath(p string) bool {
	return p == ralphDir || strings.HasPrefix(p, ralphDir+"/")
}

// ralphDir is ralph's state directory, at the top of the working tree.
const ralphDir = ".ralph"
