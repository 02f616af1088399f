// Package durable writes files so that they are whole at once and on disk
// when the write returns: a replacement is a temporary file beside the
// target, fsynced and renamed over it, then the directory fsynced; an
// append is one write(2), then an fsync. A reader, or a process killed
// with SIGKILL, sees the old content or the new, never a part, and a power
// loss after the call loses nothing.
//
// It must not decide what to write or when: its callers (the state
// store, the plan writer) do.
package durable

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// WriteFile replaces path with data atomically and durably. An existing
// file's permissions are kept; a new one gets perm (less the umask). path
// must not be a symlink the caller wants to keep: resolve it first.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return ReplaceAt(dir, filepath.Base(path), data, perm)
}

// ReplaceAt is WriteFile for the entry name of the open directory dir:
// a temporary file in dir, fsynced, renamed over name, then dir fsynced.
// Nothing but dir's own entries is touched: a symlink at name is replaced,
// not written through, so a caller that has opened dir safely (see
// projectfs) writes nowhere else.
func ReplaceAt(dir *os.File, name string, data []byte, perm fs.FileMode) error {
	return ReplaceFrom(dir, name, bytes.NewReader(data), perm)
}

// ReplaceFrom is ReplaceAt with the content read from r, which is not
// held in memory whole (a session transcript may be large).
func ReplaceFrom(dir *os.File, name string, r io.Reader, perm fs.FileMode) error {
	if name != filepath.Base(name) || name == "." || name == ".." {
		return fmt.Errorf("%s: not a name in %s", name, dir.Name())
	}
	dfd := int(dir.Fd())
	keep := false
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		perm, keep = fs.FileMode(st.Mode)&0o777, true
	}
	var id [6]byte
	_, _ = rand.Read(id[:]) // never fails
	tmp := "." + name + ".tmp-" + hex.EncodeToString(id[:])
	fd, err := openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm))
	if err != nil {
		return &fs.PathError{Op: "create", Path: filepath.Join(dir.Name(), tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), tmp))
	err = writeAll(f, r, perm, keep)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = renameat(dfd, tmp, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return &fs.PathError{Op: "replace", Path: filepath.Join(dir.Name(), name), Err: err}
	}
	return dir.Sync()
}

// writeAll writes a new temporary file whole and fsyncs it; keep gives it
// perm exactly, as the file it replaces had it (the umask is not applied
// twice).
func writeAll(f *os.File, r io.Reader, perm fs.FileMode, keep bool) error {
	if keep {
		if err := f.Chmod(perm); err != nil {
			return err
		}
	}
	if _, err := io.Copy(f, r); err != nil {
		return err
	}
	return f.Sync()
}

// openat and renameat retry on EINTR, which a signal during a slow file
// system's call gives.
func openat(dfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dfd, name, flags, perm)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func renameat(dfd int, from, to string) error {
	for {
		if err := unix.Renameat(dfd, from, dfd, to); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// Append adds data at the end of path (created with perm when missing) in
// one write(2), so that readers never see a part of it beside another
// writer's line, and fsyncs it (and the directory, when the file was
// new) before it returns. A write that fails part way is taken back (the
// file is truncated to its size before), so the next one does not follow
// a torn one.
func Append(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	created, err := AppendTo(f, data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && created {
		err = syncDir(filepath.Dir(path)) // its entry must last too
	}
	return err
}

// AppendTo is Append on a file opened for appending: it reports whether
// the file was empty before (maybe created by the open), in which case
// the caller fsyncs its directory. It does not close f.
func AppendTo(f *os.File, data []byte) (wasEmpty bool, err error) {
	info, err := f.Stat()
	if err != nil {
		return false, err
	}
	if _, err := f.Write(data); err != nil {
		// Part of it may be written (a disk that filled up in the middle).
		_ = f.Truncate(info.Size())
		return false, err
	}
	return info.Size() == 0, f.Sync()
}

// syncDir fsyncs a directory, so that the renames and creations in it
// last.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return SyncClose(d)
}

// SyncClose fsyncs and closes an open directory (or file), and returns
// the first error.
func SyncClose(d *os.File) error {
	err := d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// RemoveSpares removes from dir the spare files that versions of ralph
// before 0.1 kept beside the files they wrote (".NAME.spare-*"): nothing
// uses them now.
func RemoveSpares(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if name := e.Name(); strings.HasPrefix(name, ".") && strings.Contains(name, ".spare-") {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
