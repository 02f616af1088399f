package agenthome

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// asUser runs fn as a user who cannot read what the permissions refuse:
// as root, on a thread of its own that drops the capabilities that
// override them (capabilities belong to a thread, and the thread ends
// with fn's goroutine: it is never unlocked).
func asUser(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		fn()
		return
	}
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- err
			return
		}
		drop := uint32(1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH)
		data[0].Effective &^= drop
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			done <- err
			return
		}
		fn()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("dropping the capabilities that read any file: %v", err)
	}
}

func TestSyncGoesOnPastWhatTheAgentMadeUnreadable(t *testing.T) {
	t.Parallel()
	f := newFakeHome(t)
	h, cp := f.open(t)
	write(t, filepath.Join(cp, ".credentials.json"), `{"token": "refreshed"}`)
	write(t, filepath.Join(cp, "settings.json"), `{"model": "opus", "hooks": {}}`)
	write(t, filepath.Join(cp, "!a", "x.txt"), "hidden\n")
	write(t, filepath.Join(cp, "projects", "x", "locked.jsonl"), "{}\n")
	for _, p := range []string{filepath.Join(cp, "!a"), filepath.Join(cp, "projects", "x", "locked.jsonl")} {
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
	}
	var rep Report
	var err error
	asUser(t, func() { rep, err = h.Sync() })
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	want := Report{
		WrittenBack: []string{"~/.claude/.credentials.json"},
		Discarded: []Change{
			{Path: "~/.claude/!a", Kind: Changed, Detail: unreadableInCopy},
			{Path: "~/.claude/projects/x/locked.jsonl", Kind: Added, Detail: unreadableInCopy},
			{Path: "~/.claude/settings.json", Kind: Changed},
		},
	}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if got := read(t, filepath.Join(f.claude, ".credentials.json")); got != `{"token": "refreshed"}` {
		t.Errorf("the user's .credentials.json: %q; want the refreshed login written back", got)
	}
}
