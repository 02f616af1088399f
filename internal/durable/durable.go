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
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
)

// WriteFile replaces path with data atomically and durably. An existing
// file's permissions are kept; a new one gets perm (less the umask). path
// must not be a symlink the caller wants to keep: resolve it first.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	pf, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)),
		renameio.WithPermissions(perm), renameio.WithExistingPermissions())
	if err != nil {
		return err
	}
	defer func() { _ = pf.Cleanup() }() // a no-op once the file is replaced
	if _, err := pf.Write(data); err != nil {
		return err
	}
	// Fsynced, closed and renamed over path.
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
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
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		// Part of it may be written (a disk that filled up in the middle).
		_ = f.Truncate(info.Size())
		_ = f.Close()
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && info.Size() == 0 {
		err = syncDir(filepath.Dir(path)) // maybe created: its entry must last too
	}
	return err
}

// syncDir fsyncs a directory, so that the renames and creations in it
// last.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
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
