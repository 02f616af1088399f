package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/projectfs"
)

// outsideFile makes a file outside the project s is in, as ~/.bashrc is.
func outsideFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(p, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func plant(t *testing.T, link, to string) {
	t.Helper()
	_ = os.Remove(link)
	if err := os.Symlink(to, link); err != nil {
		t.Fatal(err)
	}
}

func wantUntouched(t *testing.T, p string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != "mine\n" {
		t.Errorf("%s = %q, %v; want it untouched", p, b, err)
	}
}

// TestStoreStaysInProject: links planted in .ralph/ (or .ralph/ itself, or
// the progress log the archive rewrites) are not followed out of the
// project, for reading or writing.
func TestStoreStaysInProject(t *testing.T) {
	t.Parallel()
	t.Run("state.json", func(t *testing.T) {
		t.Parallel()
		s, out := openTemp(t), outsideFile(t)
		plant(t, filepath.Join(s.Dir(), StateFile), out)
		if _, err := s.LoadState(); !errors.Is(err, projectfs.ErrOutside) {
			t.Errorf("LoadState = %v, want ErrOutside", err)
		}
		if err := s.SaveState(State{Tasks: map[string]TaskState{}}); !errors.Is(err, projectfs.ErrOutside) {
			t.Errorf("SaveState = %v, want ErrOutside", err)
		}
		wantUntouched(t, out)
	})
	t.Run("history.jsonl", func(t *testing.T) {
		t.Parallel()
		s, out := openTemp(t), outsideFile(t)
		plant(t, filepath.Join(s.Dir(), HistoryFile), out)
		if err := s.AppendHistory(Record{TaskID: "A"}); !errors.Is(err, projectfs.ErrOutside) {
			t.Errorf("AppendHistory = %v, want ErrOutside", err)
		}
		wantUntouched(t, out)
	})
	t.Run(".ralph", func(t *testing.T) {
		t.Parallel()
		project, elsewhere := t.TempDir(), t.TempDir()
		plant(t, filepath.Join(project, Dir), elsewhere)
		if _, err := Open(project); !errors.Is(err, projectfs.ErrOutside) {
			t.Errorf("Open with .ralph linked out = %v, want ErrOutside", err)
		}
		if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
			t.Errorf("Open wrote %d entries where .ralph leads", len(ents))
		}
	})
	t.Run("progress.txt", func(t *testing.T) {
		t.Parallel()
		s, out := openTemp(t), outsideFile(t)
		project := filepath.Dir(s.Dir())
		plan := filepath.Join(project, "prd.json")
		writeFileT(t, plan, "{}")
		plant(t, filepath.Join(project, ProgressFile), out)
		if err := s.SaveLastBranch("ralph/old"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Archive("ralph/new", plan, time.Now()); !errors.Is(err, projectfs.ErrOutside) {
			t.Errorf("Archive = %v, want ErrOutside", err)
		}
		wantUntouched(t, out)
	})
}
