package durable

import (
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps the files at a and b in one step (renameat2 with
// RENAME_EXCHANGE): a reader of either name sees one file or the other.
// Where the system cannot, it fails with an error cannotExchange
// recognizes (or EXDEV across file systems, ENOENT for a missing name).
func exchange(a, b string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
	return nil
}
