package vcs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/projectfs"
)

// A git killed at the moment it holds .git/index.lock (ralph killed with
// -9, and its git with it) leaves the lock behind, and every later git
// that writes the index refuses to run until someone removes it. ralph
// records each git it starts while it runs, an empty file in .ralph/git/
// named for the process (its pid and start time); at the next run's
// start, RemoveStaleLock removes the lock only when a git ralph recorded
// is gone without having removed its record, and no git process works in
// the repository: one the user runs may hold the lock, and it is theirs.

// recordPrefix starts the name of a running git's record in LookDir:
// "running-git.PID.START".
const recordPrefix = "running-git."

// runRecorded runs c, git, with a record of it in LookDir while it runs.
// No record is made before LookDir exists (the first look makes it):
// ralph's commands that take the index's lock come later.
func (g *Git) runRecorded(ctx context.Context, c proc.Cmd) (proc.Result, error) {
	p, err := proc.Start(ctx, c)
	if err != nil {
		return proc.Result{ExitCode: -1}, err
	}
	record := g.record(p.Pid())
	res := p.Wait()
	if record != "" {
		_ = g.lookRoot().Remove(record)
	}
	return res, nil
}

// lookRoot is the project's directory, beneath which ralph's records are
// written without following a link the agent put in place of a
// directory.
func (g *Git) lookRoot() projectfs.Root { return projectfs.New(g.project) }

// record writes the record of the git process pid, and returns its path
// ("" when none was written).
func (g *Git) record(pid int) string {
	if g.project == "" {
		return ""
	}
	start, ok := proc.StartTime(pid)
	if !ok {
		return ""
	}
	path := filepath.Join(g.project, ralphDir, LookDir, fmt.Sprintf("%s%d.%d", recordPrefix, pid, start))
	f, err := g.lookRoot().OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return ""
	}
	_ = f.Close()
	return path
}

// RemoveStaleLock removes the lock on the index (.git/index.lock) that a
// git of ralph's left when it was killed (see the top of this file), and
// the records of the gits that are gone. It reports the line that says
// what it removed and why, "" when it removed no lock. It is for the
// start of a run, under the run's lock: no git of ralph's runs then.
func (g *Git) RemoveStaleLock() (string, error) {
	dir := filepath.Join(g.project, ralphDir, LookDir)
	entries, err := g.lookRoot().ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var gone []string
	var pid int
	for _, e := range entries {
		p, start, ok := parseRecord(e.Name())
		if !ok {
			continue
		}
		if isGone, known := proc.Gone(p, start); !known || !isGone {
			return "", nil // it still runs, or it cannot be told: its lock is its own
		}
		gone, pid = append(gone, filepath.Join(dir, e.Name())), p
	}
	if len(gone) == 0 {
		return "", nil
	}
	msg := ""
	lock := g.realIndex + ".lock"
	if _, err := os.Lstat(lock); err == nil {
		if running, known := proc.RunningIn("git", g.Root); !known || len(running) > 0 {
			return "", nil // a git works here (the user's): the lock may be its
		}
		if err := os.Remove(lock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("remove the lock a killed git left: %w", err)
		}
		msg = fmt.Sprintf("removed %s, which a git of ralph's (pid %d) left when it was killed; no git runs in the repository now",
			relTo(g.Root, lock), pid)
	}
	for _, path := range gone {
		_ = g.lookRoot().Remove(path)
	}
	return msg, nil
}

// parseRecord reads a record's name: the pid and start time of the git
// it names.
func parseRecord(name string) (pid int, start uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, recordPrefix)
	if !ok {
		return 0, 0, false
	}
	p, s, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(s, 10, 64)
	return pid, start, err1 == nil && err2 == nil && pid > 0
}

// relTo is p relative to dir when it is beneath it, p otherwise.
func relTo(dir, p string) string {
	if rel, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return p
}
