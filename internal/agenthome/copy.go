package agenthome

import (
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// copyRoot copies r to r.copy. Every name is opened in the directory
// opened before it, without following a link: a link swapped in for a
// directory while the copy is made cannot take it out of the root.
func (h *Home) copyRoot(r *root) error {
	parent, err := os.Open(filepath.Dir(r.real)) // the user's own path
	if err != nil {
		return err
	}
	defer parent.Close()
	return h.copyEntry(r, parent, filepath.Base(r.real), r.copy, "", false)
}

// copyEntry copies name, in the directory dir, to dst; rel is its path
// in the root, scratch says a directory it is in is scratch.
func (h *Home) copyEntry(r *root, dir *os.File, name, dst, rel string, scratch bool) error {
	st, err := lstatAt(dir, name)
	if errors.Is(err, unix.ENOENT) {
		return nil // gone since the listing
	}
	if err != nil {
		return err
	}
	scratch = scratch || r.isScratch(rel)
	switch fileType(&st) {
	case unix.S_IFDIR:
		return h.copyDir(r, dir, name, dst, rel, scratch)
	case unix.S_IFREG:
		if scratch {
			return nil
		}
		return h.copyFile(r, dir, name, dst, rel)
	case unix.S_IFLNK:
		if scratch {
			return nil
		}
		target, err := readlinkAt(dir, name)
		if err != nil {
			return err
		}
		if !staysInside(r, rel, target) {
			h.leaveOut(r, rel, "a symbolic link out of its directory, to "+target)
			return nil
		}
		r.base[rel] = entry{link: true, target: target}
		return os.Symlink(target, dst)
	}
	return nil // sockets, pipes, devices: no configuration
}

// copyDir copies the directory name to dst: all of it, or, when it is
// scratch, only the directories that lead to a read-only path. A
// read-only directory is copied as an empty one for the sandbox to
// mount the user's on.
func (h *Home) copyDir(r *root, dir *os.File, name, dst, rel string, scratch bool) error {
	d, err := openAt(dir, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENOENT) {
		return nil // swapped for a link or a file, or gone, since the look
	}
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		h.leaveOut(r, rel, "a directory you cannot read either")
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, n := range names {
		crel := path.Join(rel, n)
		if r.isReadOnly(crel) {
			if st, err := lstatAt(d, n); err == nil && fileType(&st) == unix.S_IFDIR {
				if err := os.Mkdir(filepath.Join(dst, n), 0o700); err != nil {
					return err
				}
				r.mounts = append(r.mounts, crel)
			}
			continue
		}
		if scratch && !r.leadsToReadOnly(crel) {
			continue
		}
		if err := h.copyEntry(r, d, n, filepath.Join(dst, n), crel, scratch); err != nil {
			return err
		}
	}
	return os.Chmod(dst, fi.Mode().Perm())
}

// copyFile copies the regular file name to dst, with its permissions and
// modification time, and records both files in r.base.
func (h *Home) copyFile(r *root, dir *os.File, name, dst, rel string) error {
	src, st, err := openRegular(dir, name)
	if denied(err) {
		// Another user's (a CLI once run with sudo): the agent could
		// not read it in place either.
		h.leaveOut(r, rel, "a file you cannot read either")
		return nil
	}
	if err != nil || src == nil {
		return err // or nothing: swapped for a link, or gone, since the look
	}
	defer src.Close()
	perm := modeOf(&st) & 0o777
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	sum := sha256.New()
	var cst unix.Stat_t
	_, err = io.Copy(io.MultiWriter(out, sum), src)
	if err == nil {
		err = out.Chmod(os.FileMode(perm))
	}
	if err == nil {
		mtime := unix.NsecToTimeval(st.Mtim.Nano())
		err = unix.Futimes(int(out.Fd()), []unix.Timeval{mtime, mtime})
	}
	if err == nil {
		err = unix.Fstat(int(out.Fd()), &cst)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	e := entry{perm: perm, copy: stampOf(&cst), real: stampOf(&st)}
	sum.Sum(e.sum[:0])
	r.base[rel] = e
	return nil
}

// leaveOut notes what the copy goes without, and why.
func (h *Home) leaveOut(r *root, rel, why string) {
	h.notCopied = append(h.notCopied, Change{Path: h.display(r, rel), Kind: NotCopied, Detail: why})
}

// openAt opens name in dir without following a link at name.
func openAt(dir *os.File, name string, flags int) (*os.File, error) {
	for {
		fd, err := unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), nil
	}
}

// openRegular opens the regular file name in dir for reading, without
// following a link and without waiting on a fifo, with its fstat(2); nil
// and no error when name is gone, a link or not a regular file now.
func openRegular(dir *os.File, name string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	f, err := openAt(dir, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOENT) {
		return nil, st, nil
	}
	if err != nil {
		return nil, st, err
	}
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || fileType(&st) != unix.S_IFREG {
		f.Close()
		return nil, st, err
	}
	return f, st, nil
}

// lstatAt is lstat(2) of name in dir.
func lstatAt(dir *os.File, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if !errors.Is(err, unix.EINTR) {
			return st, err
		}
	}
}

// readlinkAt is readlink(2) of name in dir.
func readlinkAt(dir *os.File, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(int(dir.Fd()), name, buf)
		if err != nil {
			return "", &os.PathError{Op: "readlink", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// hashFile is the SHA-256 of what f holds from where it is read.
func hashFile(f *os.File) ([32]byte, error) {
	var sum [32]byte
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}
