package projectfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// open opens rel beneath the root: the kernel resolves it
// (openat2(2) with RESOLVE_BENEATH, no magic links such as
// /proc/self/fd/N), or os.Root where openat2 is missing (before Linux 5.6)
// or refused by a seccomp filter.
func (r Root) open(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	if !r.noOpenat2 {
		f, err := openat2(r.dir, rel, flag, perm)
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return f, err
		}
	}
	return openInRoot(r.dir, rel, flag, perm)
}

func openat2(dir, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	d, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(d)
	how := unix.OpenHow{
		Flags:   uint64(flag) | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	if flag&os.O_CREATE != 0 {
		how.Mode = uint64(perm.Perm())
	}
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(d, rel, &how)
		// EAGAIN: a rename elsewhere in the tree raced the walk; the
		// kernel asks for another try.
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) && tries < 8 {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "openat2", Path: filepath.Join(dir, rel), Err: err}
		}
		return os.NewFile(uintptr(fd), filepath.Join(dir, rel)), nil
	}
}
