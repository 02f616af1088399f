package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A slot is one agent's at a time, and the same one comes back to the
// next agent; a layer grown past Max starts over empty, with a warning;
// a run's directory goes at Close, and one a killed run left (its lock
// free) at the next run's start, while a live run's stays.
func TestKeptSlots(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	live, err := OpenKept(base)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	killed := filepath.Join(base, "run-killed")
	if err := os.MkdirAll(filepath.Join(killed, "slot-1", "work", "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(killed, keptLock), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// overlay's work directory is mode 000.
	if err := os.Chmod(filepath.Join(killed, "slot-1", "work", "work"), 0); err != nil {
		t.Fatal(err)
	}

	k, err := OpenKept(base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("a killed run's layers are still there: %v", err)
	}
	if _, err := os.Stat(live.Dir()); err != nil {
		t.Errorf("a live run's layers were removed: %v", err)
	}

	var warned []string
	k.SetWarn(func(s string) { warned = append(warned, s) })
	k.Max = 1 << 20
	a, b := k.take(), k.take()
	if a == b {
		t.Fatalf("two agents at once share the slot %s", a)
	}
	k.put(a)
	if again := k.take(); again != a {
		t.Errorf("the next agent got %s, want the free slot %s", again, a)
	}
	big := filepath.Join(a, "0123", "upper", "big")
	if err := os.MkdirAll(filepath.Dir(big), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	k.put(a)
	if again := k.take(); again != a {
		t.Fatalf("the next agent got %s, want %s", again, a)
	}
	if _, err := os.Stat(big); !os.IsNotExist(err) {
		t.Errorf("a layer past cache-max was kept: %v", err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "past sandbox.cache-max (1 MiB)") {
		t.Errorf("warnings %q, want one naming sandbox.cache-max", warned)
	}
	k.Close()
	if _, err := os.Stat(k.Dir()); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", k.Dir(), err)
	}
}
