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

	"github.com/ralph-loop/ralph/internal/durable"
)

// The lock keeps one run per project. It is a flock(2) held on an open
// descriptor of .ralph/lock for the whole run: the kernel releases it when
// the process ends, however it ends, so a dead run's lock is never in the
// way and there is nothing stale to take over. The descriptor is opened
// close-on-exec (as Go opens every file), so an agent the run started, if
// it outlives the run, does not keep the lock. The file's content only
// says who holds it; an empty file is a free lock.

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

// Lock takes the project's lock for the ralph run with process id pid and
// returns the function that releases it; calling that again does nothing.
// If another run holds the lock, Lock returns a *LockedError.
//
// .ralph/lock is opened (created the first time) and never removed or
// replaced: a lock file that could be unlinked while a starter waits on it
// would let two runs hold locks on two different files. Whoever gets the
// flock writes its pid and start time into the file; a refused starter
// reads them for its message. The holder's content is written just after
// it takes the flock, so a starter that looks in that instant reports a
// holder without a pid, nothing worse. Release empties the file, then
// closes it, which drops the flock.
func (s *Store) Lock(pid int) (release func() error, err error) {
	if pid <= 0 {
		return nil, fmt.Errorf("lock: invalid pid %d", pid)
	}
	path := s.path(LockFile)
	f, err := s.fs().OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := flockRetry(f); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		data, _ := io.ReadAll(f)
		l, _ := parseLock(data)
		le := &LockedError{PID: l.PID, Path: path, Started: l.Started}
		if host, _ := os.Hostname(); l.Host != host {
			le.Host = l.Host
		}
		return nil, le
	}
	host, _ := os.Hostname()
	mine := lockInfo{PID: pid, Host: host, Started: time.Now().UTC().Format(time.RFC3339)}.bytes()
	if err := rewrite(f, mine); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Earlier versions kept spare files here (.accepting too); the
	// holder removes them.
	_ = s.fs().Remove(s.path(".accepting"))
	if err := durable.RemoveSpares(s.dir); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() {
			// Emptied first: a file naming a finished run would mislead
			// whoever reads it by hand.
			rerr = errors.Join(rewrite(f, nil), f.Close())
			if rerr != nil {
				rerr = fmt.Errorf("release lock %s: %w", path, rerr)
			}
		})
		return rerr
	}, nil
}

// rewrite replaces f's content with b.
func rewrite(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(b, 0)
	return err
}

// flockRetry is flock, tried again for a moment while the lock file is
// empty: a run that holds the lock writes its pid at once, so an empty
// file is a holder in its first instant or a `ralph status` looking
// (Held), which lets go at once.
func flockRetry(f *os.File) error {
	const tries, pause = 10, 10 * time.Millisecond
	for i := 1; ; i++ {
		err := flock(f)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) || i == tries {
			return err
		}
		if fi, serr := f.Stat(); serr != nil || fi.Size() > 0 {
			return err
		}
		time.Sleep(pause)
	}
}

// Held reports whether a ralph run holds the project's lock, which is
// how a run that stopped without saying so (killed, crashed, the machine
// restarted) is told from a live one: the kernel drops a dead process's
// flock, while state.json keeps saying "running". It takes a shared flock
// for an instant and writes nothing.
func (s *Store) Held() (bool, error) {
	f, err := s.fs().Open(s.path(LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock: %w", err)
	}
	defer f.Close() // and with it the shared flock
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	}
	return false, fmt.Errorf("lock %s: %w", s.path(LockFile), err)
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

// OpenLocked opens the store of projectDir and takes its lock for this
// process: what every command that writes runs does first. release waits
// until the store's writes are on disk (Sync), then gives the lock back:
// whoever takes it next finds them there whatever happens to the machine.
func OpenLocked(projectDir string) (s *Store, release func() error, err error) {
	s, err = Open(projectDir)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := s.Lock(os.Getpid())
	if err != nil {
		return nil, nil, err
	}
	return s, unlock, nil
}
