package serve

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRegistryListsLiveRunsAndDropsStaleOnes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	unregister, err := Register(dir, Entry{RunID: "live", Dir: "/p/a", PID: os.Getpid(), StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	// A run killed with -9 left its entry: its pid is gone.
	if _, err := Register(dir, Entry{RunID: "dead", Dir: "/p/b", PID: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	got := Registered(dir)
	if len(got) != 1 || got[0].RunID != "live" || got[0].Dir != "/p/a" {
		t.Fatalf("registered = %+v, want the live run only", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "dead.json")); !os.IsNotExist(err) {
		t.Errorf("the stale entry is still there: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "runs", "live.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("entry: %v, mode %v", err, fi.Mode())
	}
	unregister()
	if got := Registered(dir); len(got) != 0 {
		t.Errorf("after the run ended: %+v", got)
	}
}

func TestStateDir(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=/home/u", "XDG_STATE_HOME=/st"}, "/st/ralph"},
		{[]string{"HOME=/home/u", "XDG_STATE_HOME=relative"}, "/home/u/.local/state/ralph"},
		{nil, ""},
	} {
		if got := StateDir(c.env); got != c.want {
			t.Errorf("StateDir(%q) = %q, want %q", c.env, got, c.want)
		}
	}
}
