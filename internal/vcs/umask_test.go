//go:build unix

package vcs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// With umask 000, ralph's own index (.ralph/git/index), which git writes
// anew at each look, is still 0600 (issue 37, attack 9: it was
// world-writable). Not parallel: the umask is the process's.
func TestPrivateIndexWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "a.txt"), "a")
	for i, body := range []string{"", "b"} { // the first look, and one that writes the index again
		if body != "" {
			write(t, filepath.Join(dir, "a.txt"), body)
		}
		if _, err := g.Changes(ctx); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(g.index)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("look %d: %s has mode %o, want 600", i+1, g.index, got)
		}
	}
}
