package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/ralph-loop/ralph/internal/proc"
)

// Kept is the agent's view of the toolchains' caches in bubblewrap: the
// user's caches read-only below, and over them one writable layer per
// agent running at once (a --parallel slot), on disk, kept across that
// slot's iterations so that the agent's second build is warm, and
// removed when the run ends (Close). A layer is never a gate's base: the
// gates lay their own over the user's caches (Layers), so nothing the
// agent writes in its layer reaches a verdict.
//
// A slot is leased for one agent run (Wrap takes one, the process's end
// gives it back): two overlays never share an upper layer, and with one
// agent at a time every iteration gets the same layer.
type Kept struct {
	// Exe is ralph's executable, which has LayersCommand.
	Exe string
	// Caches are the toolchains' cache directories (FindCaches).
	Caches []string
	// Max bounds a slot's layer (sandbox.cache-max): past it, the layer
	// starts over empty at the slot's next agent start, with a warning.
	// Zero for no bound.
	Max  int64
	dir  string
	lock *os.File

	mu    sync.Mutex
	free  []string
	slots int
	// warn says that a slot's layer started over; nil says nothing.
	warn func(string)
}

// keptLock is the file a run holds locked in its directory while it
// lives: another run's directory whose lock is free was left by a run
// that ended without Close (kill -9), and is removed.
const keptLock = ".lock"

// OpenKept makes a directory for a run's agent layers under base (the
// user's cache directory for ralph), removing those of runs that are gone.
func OpenKept(base string) (*Kept, error) {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, err
	}
	sweepKept(base)
	dir, err := os.MkdirTemp(base, "run-")
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, keptLock), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &Kept{dir: dir, lock: f}, nil
}

// sweepKept removes the directories under base of runs that ended
// without removing theirs: those whose lock no one holds.
func sweepKept(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(base, e.Name())
		f, err := os.Open(filepath.Join(dir, keptLock))
		if err != nil {
			continue // not a run's, or one being made
		}
		free := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
		f.Close()
		if free {
			removeTree(dir)
		}
	}
}

// SetWarn sets what says that a slot's layer grew past Max and started
// over (the run's warnings); it may be set while agents run.
func (k *Kept) SetWarn(warn func(string)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.warn = warn
}

// Dir is where the run's layers are.
func (k *Kept) Dir() string { return k.dir }

// Close removes the run's layers.
func (k *Kept) Close() {
	removeTree(k.dir)
	k.lock.Close()
}

// take leases a slot's layer directory, making one when all are in use;
// one grown past Max starts over empty.
func (k *Kept) take() string {
	k.mu.Lock()
	var slot string
	if n := len(k.free); n > 0 {
		slot, k.free = k.free[n-1], k.free[:n-1]
	} else {
		k.slots++
		slot = filepath.Join(k.dir, "slot-"+strconv.Itoa(k.slots))
	}
	warn := k.warn
	k.mu.Unlock()
	if k.Max > 0 {
		if size := treeSize(slot); size > k.Max {
			removeTree(slot)
			if warn != nil {
				warn(fmt.Sprintf("the agent's cache layer (%s) grew to %d MiB, past sandbox.cache-max (%d MiB): it starts over empty",
					slot, size>>20, k.Max>>20))
			}
		}
	}
	return slot
}

// put gives a slot back once its agent has ended.
func (k *Kept) put(slot string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !slices.Contains(k.free, slot) {
		k.free = append(k.free, slot)
	}
}

// ForAgent returns the box the agent runs in with k's layers over the
// caches, where bubblewrap can have them.
func (b *Box) ForAgent(k *Kept) *Box {
	c := *b
	c.kept = k
	return &c
}

// wrapKept starts l (laid out as r) as an agent with a slot's layers over
// the caches it may not write itself (one under sandbox.allow-write it
// writes as it is).
func (b *Box) wrapKept(l proc.Launch, r layout) proc.Launch {
	c := *b
	c.layers = &Layers{Exe: b.kept.Exe, Caches: b.kept.Caches}
	ly := c.layer(&r)
	var kept layered
	for i := 0; i+1 < len(ly.args); i += 2 {
		if ly.args[i] == "--over" {
			kept.args = append(kept.args, "--over", ly.args[i+1])
			kept.caches = append(kept.caches, ly.args[i+1])
		}
	}
	if len(kept.caches) == 0 {
		return b.wrapBwrap(l, r)
	}
	slot := b.kept.take()
	kept.args = append([]string{"--keep", slot}, append(kept.args, "--")...)
	out := c.launchLayered(l, r, kept)
	out.Release = func() { b.kept.put(slot) }
	return out
}

// treeSize is the bytes the files under dir take on disk.
func treeSize(dir string) int64 {
	var size int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // a part it cannot read (overlay's work directory) counts as nothing
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				size += st.Blocks * 512
			} else {
				size += info.Size()
			}
		}
		return nil
	})
	return size
}

// removeTree removes dir and everything in it, overlay's work
// directories (mode 000) included.
func removeTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// KeptBase is where runs keep their agents' layers: ralph's directory in
// the user's cache directory ($XDG_CACHE_HOME, else ~/.cache), on disk
// (a tmpfs /tmp would hold gigabytes in memory); "" when env names
// neither.
func KeptBase(env []string) string {
	cache := getenv(env, "XDG_CACHE_HOME")
	if !filepath.IsAbs(cache) {
		home := getenv(env, "HOME")
		if !filepath.IsAbs(home) {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "ralph", "agent-layers")
}
