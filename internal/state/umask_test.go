//go:build unix

package state

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// With umask 000 what ralph creates under .ralph/ is still the user's
// alone (issue 37, attack 9: .ralph/git/index was world-writable): .ralph/
// is 0700, its files 0600. Not parallel: the umask is the process's.
func TestStateIsPrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, Dir), 0o777); err != nil { // an older ralph's, or the umask's
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveState(State{RunID: "r", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendHistory(Record{RunID: "r", Iteration: 1}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{
		Dir:                             0o700,
		filepath.Join(Dir, RunsDir):     0o700,
		filepath.Join(Dir, StateFile):   0o600,
		filepath.Join(Dir, HistoryFile): 0o600,
	} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", name, got, want)
		}
	}
}
