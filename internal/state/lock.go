package state

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LockedError says another ralph run, still alive, holds the project's lock.
type LockedError struct {
	PID  int
	Path string
	// Host is the holder's host name when it is not this host; its pid
	// cannot be checked from here, so the lock counts as held.
	Host string
}

func (e *LockedError) Error() string {
	who := "pid " + strconv.Itoa(e.PID)
	if e.Host != "" {
		who += " on host " + e.Host
	}
	return fmt.Sprintf("another ralph run (%s) holds the lock %s; if that run is gone, the lock is stale: remove it with `rm %s` and start again",
		who, e.Path, e.Path)
}

// lockInfo is the content of .ralph/lock. The file is plain text so that a
// person can read it and `kill $(head -1 .ralph/lock)` works:
//
//	12345
//	host=box
//	started=2026-11-21T07:20:12Z
//	boot=5e0c...        (Linux boot id)
//	proc_start=882211   (the process's start time in clock ticks, Linux)
//
// boot and proc_start tell a live holder from an unrelated process that
// reuses its pid (after a reboot, or in a restarted container where ralph is
// pid 1 again).
type lockInfo struct {
	PID       int
	Host      string
	Started   string
	Boot      string
	ProcStart string
}

func (l lockInfo) bytes() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", l.PID)
	for _, kv := range [][2]string{{"host", l.Host}, {"started", l.Started}, {"boot", l.Boot}, {"proc_start", l.ProcStart}} {
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
		case "boot":
			l.Boot = v
		case "proc_start":
			l.ProcStart = v
		}
	}
	return l, true
}

// Lock takes the project's lock for the ralph run with process id pid and
// returns the function that releases it.
//
// The lock file appears atomically with its content (hard-linked from a
// fsynced temporary file, so it fails if the lock exists; O_CREATE|O_EXCL
// where the file system has no hard links). If the lock exists and its
// holder is alive, Lock returns a *LockedError. A lock whose holder is dead,
// whose pid now belongs to another process, or whose content is empty or
// garbage is stale: it is removed and creation retried. Removal happens
// under flock(2) on .ralph/ and only if the file still has the content that
// was judged stale, so of several starters racing for a stale lock exactly
// one wins.
//
// Release removes the lock only if it still has the content Lock wrote
// (our pid); calling it again does nothing.
func (s *Store) Lock(pid int) (release func() error, err error) {
	if pid <= 0 {
		return nil, fmt.Errorf("lock: invalid pid %d", pid)
	}
	path := s.path(LockFile)
	host, _ := os.Hostname()
	ps, _ := procStart(pid)
	mine := lockInfo{
		PID:       pid,
		Host:      host,
		Started:   time.Now().UTC().Format(time.RFC3339),
		Boot:      bootID(),
		ProcStart: ps,
	}.bytes()

	for range 10 {
		err := s.createLock(path, mine)
		if err == nil {
			var once sync.Once
			var rerr error
			return func() error {
				once.Do(func() { rerr = s.releaseLock(path, mine) })
				return rerr
			}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock: %w", err)
		}
		held, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released in between: try again
		}
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		if l, ok := parseLock(held); ok {
			if otherHost, alive := holderAlive(l, host); alive {
				return nil, &LockedError{PID: l.PID, Path: path, Host: otherHost}
			}
		}
		if err := s.removeIfUnchanged(path, held); err != nil {
			return nil, fmt.Errorf("lock: take over stale lock %s: %w (remove it by hand if no ralph run is active)", path, err)
		}
	}
	return nil, fmt.Errorf("lock: %s keeps changing; is another ralph run starting?", path)
}

// createLock creates path with content, failing with fs.ErrExist if it
// exists. The file never exists without its content, so a racing starter
// never mistakes a lock being written for a garbage one.
func (s *Store) createLock(path string, content []byte) error {
	tmp, err := os.CreateTemp(s.dir, ".lock-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	_, err = tmp.Write(content)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	err = os.Link(tmpName, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	// No hard links on this file system: O_EXCL, with a moment in which the
	// file is empty.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeIfUnchanged removes path if it still holds stale.
func (s *Store) removeIfUnchanged(path string, stale []byte) error {
	unlock, err := s.guard()
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !bytes.Equal(cur, stale) {
		return nil // someone else took it over first; look again
	}
	return os.Remove(path)
}

// releaseLock removes path if it still holds mine.
func (s *Store) releaseLock(path string, mine []byte) error {
	unlock, err := s.guard()
	if err != nil {
		return fmt.Errorf("release lock: %w", err)
	}
	defer unlock()
	cur, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release lock: %w", err)
	}
	if !bytes.Equal(cur, mine) {
		return nil // taken over: not ours to remove
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("release lock: %w", err)
	}
	return nil
}

// guard takes an exclusive flock(2) on .ralph/ itself, serialising the
// check-then-remove steps on the lock file between processes and between
// goroutines (each call opens its own descriptor, and flock locks conflict
// per open file description).
func (s *Store) guard() (unlock func(), err error) {
	d, err := os.Open(s.dir)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("flock %s: %w", s.dir, err)
	}
	// Closing the descriptor releases the flock.
	return func() { _ = d.Close() }, nil
}

// holderAlive reports whether the lock's holder may still be running. A
// holder on another host cannot be checked and counts as alive; otherHost
// names it.
func holderAlive(l lockInfo, myHost string) (otherHost string, alive bool) {
	if l.Host != "" && myHost != "" && l.Host != myHost {
		return l.Host, true
	}
	if l.Boot != "" {
		if cur := bootID(); cur != "" && cur != l.Boot {
			return "", false // written before a reboot
		}
	}
	err := syscall.Kill(l.PID, 0)
	switch {
	case err == nil || errors.Is(err, syscall.EPERM):
		// A process with that pid exists; below: is it the holder?
	case errors.Is(err, syscall.ESRCH):
		return "", false
	default:
		return "", true // cannot tell: do not steal
	}
	if l.ProcStart != "" {
		if cur, ok := procStart(l.PID); ok && cur != l.ProcStart {
			return "", false // the pid was reused by another process
		}
	}
	return "", true
}

// bootID returns Linux's id of the current boot, or "" elsewhere.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStart returns the start time of process pid in clock ticks since
// boot (field 22 of /proc/PID/stat); ok is false where there is no /proc.
func procStart(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// The command name (field 2) is in parentheses and may contain spaces
	// and parentheses: fields are counted after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(b[i+1:]))
	const starttime = 22 - 3 // f[0] is field 3 (state)
	if len(f) <= starttime {
		return "", false
	}
	return f[starttime], true
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
