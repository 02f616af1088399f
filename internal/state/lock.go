package state

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The lock keeps one run per project. It is a flock(2) held on an open
// descriptor of .ralph/lock for the whole run: the kernel releases it when
// the process ends, however it ends, so a dead run's lock is never in the
// way and there is nothing stale to take over. The descriptor is opened
// close-on-exec (as Go opens every file), so an agent the run started, if
// it outlives the run, does not keep the lock. The file's content only
// says who holds it.

// LockedError says another ralph run holds the project's lock.
type LockedError struct {
	// PID is the holder's process id, 0 when its lock file could not be
	// read.
	PID  int
	Path string
	// Started is when the holder took the lock, as it wrote it.
	Started string
	// Host is the holder's host name when it is not this host (a project
	// on a network file system).
	Host string
}

func (e *LockedError) Error() string {
	var b strings.Builder
	b.WriteString("another ralph run")
	if e.PID > 0 {
		b.WriteString(" (pid " + strconv.Itoa(e.PID))
		if e.Host != "" {
			b.WriteString(" on host " + e.Host)
		}
		b.WriteString(")")
	}
	if e.Started != "" {
		b.WriteString(" started at " + e.Started)
	}
	fmt.Fprintf(&b, " holds the lock %s; wait for it to finish, or stop it", e.Path)
	if e.PID > 0 && e.Host == "" {
		fmt.Fprintf(&b, " (kill %d)", e.PID)
	}
	return b.String()
}

// lockInfo is the content of .ralph/lock. The file is plain text so that a
// person can read it and `kill $(head -1 .ralph/lock)` works:
//
//	12345
//	host=box
//	started=2026-11-21T07:20:12Z
type lockInfo struct {
	PID     int
	Host    string
	Started string
}

func (l lockInfo) bytes() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", l.PID)
	for _, kv := range [][2]string{{"host", l.Host}, {"started", l.Started}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
		}
	}
	return b.Bytes()
}

// parseLock reads a lock file; ok is false for an empty or garbled one.
func parseLock(data []byte) (l lockInfo, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() {
		return l, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || pid <= 0 {
		return l, false
	}
	l.PID = pid
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "host":
			l.Host = v
		case "started":
			l.Started = v
		}
	}
	return l, true
}

// errMoved means the file a starter locked is no longer the one at the
// lock's path (its holder released it, or another starter replaced it):
// look again.
var errMoved = errors.New("lock file replaced")

// Lock takes the project's lock for the ralph run with process id pid and
// returns the function that releases it; calling that again does nothing.
// If another run holds the lock, Lock returns a *LockedError.
//
// The lock file appears whole: it is written and flocked under a
// temporary name, then hard-linked to .ralph/lock (which fails if a lock
// file exists) or, when the file there is locked by nobody (its run is
// gone), renamed over it while holding that file's flock, so that of
// several starters exactly one replaces it. A starter that locked a file
// that is no longer at the path looks again. Release removes the file
// while still holding its flock.
func (s *Store) Lock(pid int) (release func() error, err error) {
	if pid <= 0 {
		return nil, fmt.Errorf("lock: invalid pid %d", pid)
	}
	path := s.path(LockFile)
	host, _ := os.Hostname()
	mine := lockInfo{PID: pid, Host: host, Started: time.Now().UTC().Format(time.RFC3339)}.bytes()
	for range 100 {
		f, err := s.tryLock(path, mine, os.Link)
		if errors.Is(err, errMoved) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var once sync.Once
		var rerr error
		return func() error {
			once.Do(func() { rerr = unlock(path, f) })
			return rerr
		}, nil
	}
	return nil, fmt.Errorf("lock: %s keeps changing; is another ralph run starting?", path)
}

// tryLock makes one attempt at the lock; it returns the held descriptor.
// link is os.Link but in tests.
func (s *Store) tryLock(path string, content []byte, link func(oldname, newname string) error) (*os.File, error) {
	mine, err := os.CreateTemp(s.dir, ".lock-*")
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	// Once linked or renamed, the temporary name is no longer needed.
	defer os.Remove(mine.Name())
	held := false
	defer func() {
		if !held {
			_ = mine.Close()
		}
	}()
	if _, err := mine.Write(content); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	// Nobody else knows this file yet: this cannot fail for contention.
	if err := flock(mine); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}

	cur, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		err := link(mine.Name(), path)
		switch {
		case err == nil:
			held = true
			return mine, nil
		case errors.Is(err, fs.ErrExist):
			return nil, errMoved
		}
		return createLock(path, content) // a file system without hard links
	}
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	defer cur.Close() // after the rename below: releases the old file's flock
	if err := flock(cur); errors.Is(err, syscall.EWOULDBLOCK) {
		data, _ := io.ReadAll(cur)
		if !at(cur, path) {
			return nil, errMoved // replaced while we read it: read the new one
		}
		l, _ := parseLock(data)
		le := &LockedError{PID: l.PID, Path: path, Started: l.Started}
		if host, _ := os.Hostname(); l.Host != host {
			le.Host = l.Host
		}
		return nil, le
	} else if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	// Nobody holds the file there: its run is gone, or releasing it.
	if !at(cur, path) {
		return nil, errMoved
	}
	if err := os.Rename(mine.Name(), path); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	held = true
	return mine, nil
}

// createLock creates the lock file in place, for file systems without
// hard links. A starter that opens it before its content is written
// reports a holder without a pid.
func createLock(path string, content []byte) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, errMoved
	}
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := flock(f); err != nil && !errors.Is(err, syscall.EWOULDBLOCK) {
		_ = f.Close()
		return nil, fmt.Errorf("lock: %w", err)
	} else if err != nil || !at(f, path) {
		// Another starter locked it first (and will replace it) or
		// replaced it already.
		_ = f.Close()
		return nil, errMoved
	}
	if _, err := f.Write(content); err != nil {
		return nil, errors.Join(fmt.Errorf("lock: %w", err), unlock(path, f))
	}
	return f, nil
}

// unlock removes the lock file, if it is still ours, and then closes its
// descriptor, which releases the flock: a starter waiting on this file
// finds it gone and creates a new one.
func unlock(path string, f *os.File) error {
	var err error
	if at(f, path) {
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = fmt.Errorf("release lock: %w", rerr)
		}
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("release lock: %w", cerr)
	}
	return err
}

// flock takes an exclusive flock(2) on f without waiting;
// syscall.EWOULDBLOCK means another open file holds it.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// at reports whether f is the file at path.
func at(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// OpenLocked opens the store of projectDir and takes its lock for this
// process: what every command that writes runs does first. release gives
// the lock back.
func OpenLocked(projectDir string) (s *Store, release func() error, err error) {
	s, err = Open(projectDir)
	if err != nil {
		return nil, nil, err
	}
	release, err = s.Lock(os.Getpid())
	if err != nil {
		return nil, nil, err
	}
	return s, release, nil
}
