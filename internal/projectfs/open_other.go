//go:build !linux

package projectfs

import (
	"io/fs"
	"os"
)

// open opens rel beneath the root with os.Root: macOS has no openat2.
func (r Root) open(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	return openInRoot(r.dir, rel, flag, perm)
}
