package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// recorder is an fsync hook that counts what was synced by name and can
// hold the flusher until released.
type recorder struct {
	mu     sync.Mutex
	synced map[string]int
	// entered, when set, gets a value as each fsync starts; release
	// then holds it until closed.
	entered chan string
	release chan struct{}
	fail    map[string]error
}

func (r *recorder) fsync(f *os.File) error {
	if r.entered != nil {
		r.entered <- f.Name()
		<-r.release
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.synced == nil {
		r.synced = map[string]int{}
	}
	r.synced[f.Name()]++
	if err := r.fail[f.Name()]; err != nil {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return nil
}

func (r *recorder) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.synced[name]
}

// idle waits until s's flusher has stopped, without taking the error as
// Wait would.
func idle(s *Syncer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	for s.running {
		s.cond.Wait()
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteFileIsInPlaceBeforeTheFsync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	rec := &recorder{entered: make(chan string, 8), release: make(chan struct{})}
	s := &Syncer{fsync: rec.fsync}
	if err := s.WriteFile(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	<-rec.entered // the fsync is under way, and held
	if got := read(t, path); got != "one" {
		t.Errorf("content while the fsync is pending = %q, want %q", got, "one")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only state.json (no temporary file left)", len(entries))
	}
	close(rec.release)
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestWaitIsABarrier(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	rec := &recorder{entered: make(chan string, 8), release: make(chan struct{})}
	s := &Syncer{fsync: rec.fsync}
	if err := s.WriteFile(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	<-rec.entered
	waited := make(chan error)
	go func() { waited <- s.Wait() }()
	close(rec.release)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	// Both the file and its directory were synced before Wait returned.
	if rec.count(dir) != 1 {
		t.Errorf("directory synced %d times, want 1", rec.count(dir))
	}
	total := 0
	rec.mu.Lock()
	for name, n := range rec.synced {
		if name != dir {
			total += n
		}
	}
	rec.mu.Unlock()
	if total != 1 {
		t.Errorf("files synced %d times, want 1", total)
	}
}

func TestPendingWritesCoalesce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	rec := &recorder{entered: make(chan string, 64), release: make(chan struct{})}
	s := &Syncer{fsync: rec.fsync}
	// The first write's fsync is held; the next ten queue behind it.
	if err := s.WriteFile(filepath.Join(dir, "first"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	<-rec.entered
	for i := range 10 {
		if err := s.WriteFile(path, fmt.Appendf(nil, "v%d", i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	close(rec.release)
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "v9" {
		t.Errorf("content = %q, want the last write", got)
	}
	// first, its directory; then one file for the ten writes and the
	// directory once more.
	if got := len(rec.entered); got != 3 {
		t.Errorf("%d more fsyncs after the first, want 3 (the newest state.json, the directory twice)", got)
	}
}

func TestFsyncErrorIsReportedByWait(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := &recorder{fail: map[string]error{dir: syscall.EIO}}
	s := &Syncer{fsync: rec.fsync}
	if err := s.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := s.Wait()
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Wait = %v, want EIO naming %s", err, dir)
	}
	// Reported once: the next write and Wait go on.
	if err := s.WriteFile(filepath.Join(dir, "b"), []byte("b"), 0o644); err != nil {
		t.Errorf("write after the report: %v", err)
	}
	rec.mu.Lock()
	rec.fail = nil
	rec.mu.Unlock()
	if err := s.Wait(); err != nil {
		t.Errorf("second Wait = %v, want nil", err)
	}
}

func TestFsyncErrorIsReportedByTheNextWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	rec := &recorder{entered: make(chan string, 8), release: make(chan struct{})}
	s := &Syncer{fsync: rec.fsync}
	if err := s.Append(path, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	name := <-rec.entered // the appended file, held
	rec.mu.Lock()
	rec.fail = map[string]error{name: syscall.EIO}
	rec.mu.Unlock()
	close(rec.release)
	<-rec.entered // the directory's fsync: the batch is done after it
	idle(s)
	err := s.Append(path, []byte("2\n"), 0o644)
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), path) {
		t.Fatalf("next write = %v, want EIO naming %s", err, path)
	}
	if got := read(t, path); got != "1\n" {
		t.Errorf("content = %q: the refused write must not be made", got)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait after the write reported it = %v, want nil", err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := &Syncer{}
	const writers, each = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			own := filepath.Join(dir, fmt.Sprintf("own-%d", w))
			for i := range each {
				if err := s.WriteFile(own, fmt.Appendf(nil, "%d", i), 0o644); err != nil {
					t.Error(err)
				}
				if err := s.WriteFile(filepath.Join(dir, "shared"), fmt.Appendf(nil, "w%d", w), 0o644); err != nil {
					t.Error(err)
				}
				if err := s.Append(filepath.Join(dir, "log"), fmt.Appendf(nil, "%d.%d\n", w, i), 0o644); err != nil {
					t.Error(err)
				}
				if i%5 == 0 {
					if err := s.Wait(); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for w := range writers {
		if got, want := read(t, filepath.Join(dir, fmt.Sprintf("own-%d", w))), fmt.Sprint(each-1); got != want {
			t.Errorf("own-%d = %q, want %q", w, got, want)
		}
	}
	if got := read(t, filepath.Join(dir, "shared")); !strings.HasPrefix(got, "w") || len(got) != 2 {
		t.Errorf("shared = %q, want one writer's whole content", got)
	}
	lines := strings.Split(strings.TrimSuffix(read(t, filepath.Join(dir, "log")), "\n"), "\n")
	if len(lines) != writers*each {
		t.Errorf("log has %d lines, want %d", len(lines), writers*each)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != writers+2 {
		t.Errorf("%d files in the directory, want %d: temporary files left?", len(entries), writers+2)
	}
}

func TestWriteAfterCloseFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	s := &Syncer{}
	if err := s.WriteFile(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func() error{
		"WriteFile": func() error { return s.WriteFile(path, []byte("two"), 0o644) },
		"Append":    func() error { return s.Append(path, []byte("two"), 0o644) },
	} {
		err := write()
		if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s after Close = %v, want ErrClosed naming the file", name, err)
		}
	}
	if got := read(t, path); got != "one" {
		t.Errorf("content = %q, want the write before Close only", got)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait after Close = %v", err)
	}
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil { // whatever the umask
		t.Fatal(err)
	}
	for _, s := range []*Syncer{nil, {}} {
		if err := s.WriteFile(path, []byte("new"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o640 {
			t.Errorf("mode %v after a write (syncer %v), want the existing 0640 kept", info.Mode().Perm(), s != nil)
		}
	}
}

func TestNilSyncerWritesAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var s *Syncer
	if err := s.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(filepath.Join(dir, "b"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(filepath.Join(dir, "b"), []byte("c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, "a")) + read(t, filepath.Join(dir, "b")); got != "ab\nc\n" {
		t.Errorf("content = %q", got)
	}
	if err := s.Wait(); err != nil {
		t.Error(err)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}

// TestSpare: a path given a spare is written through temporary files made
// ahead, with the file's own permissions; a spare a killed process left is
// removed by the next Spare, and Unspare leaves no temporary file.
func TestSpare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	stale := filepath.Join(dir, ".state.json"+spareSuffix+"123")
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var s Syncer
	s.Spare(path)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale spare is still there (%v)", err)
	}
	// A new file: made as without a spare.
	if err := s.WriteFile(path, []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o604); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"two", "three"} {
		if err := s.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != body {
			t.Fatalf("read %q, %v; want %q", got, err, body)
		}
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o604 {
			t.Errorf("permissions %v, %v; want the file's own 0604", info.Mode().Perm(), err)
		}
	}
	// The next spare is made in the background: wait for it.
	s.mu.Lock()
	next := s.spares[path]
	s.mu.Unlock()
	<-next.done
	spares, _ := filepath.Glob(filepath.Join(dir, ".state.json"+spareSuffix+"*"))
	if len(spares) != 1 {
		t.Errorf("spares waiting: %q, want one", spares)
	}
	s.Unspare()
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "state.json" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("left in the directory: %q, want state.json alone", names)
	}
	// Writes go on without spares.
	if err := s.WriteFile(path, []byte("four"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSpareRecycles: where names can be exchanged (Linux), a path with a
// spare is written without making or freeing a file: the file a write
// replaces is the next write's spare, so two files take turns. Where they
// cannot, the spare is renamed over it and a new one made, as before.
func TestSpareRecycles(t *testing.T) {
	t.Parallel()
	for _, exchange := range []bool{true, false} {
		t.Run(fmt.Sprintf("exchange=%v", exchange), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if err := os.WriteFile(path, []byte("zero"), 0o600); err != nil {
				t.Fatal(err)
			}
			s := &Syncer{noExchange: !exchange}
			s.Spare(path)
			inodes := map[uint64]bool{}
			for i, body := range []string{"one", "two!", "3", "four", "five five"} {
				if err := s.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(path)
				if err != nil || string(got) != body {
					t.Fatalf("write %d: read %q, %v; want %q", i, got, err, body)
				}
				info, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if info.Mode().Perm() != 0o600 {
					t.Errorf("write %d: permissions %v, want the file's own 0600", i, info.Mode().Perm())
				}
				inodes[info.Sys().(*syscall.Stat_t).Ino] = true
			}
			recycled := runtime.GOOS == "linux" && exchange
			if recycled && len(inodes) != 2 {
				t.Errorf("the writes went through %d files, want the same two taking turns", len(inodes))
			}
			if !recycled && len(inodes) <= 2 {
				// A freed inode's number may come back: more than two is all that holds.
				t.Errorf("the writes went through %d files, want a new one each (renamed)", len(inodes))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("left in the directory: %v, want state.json alone", ents)
			}
		})
	}
}

// TestSpareIn: a user's file takes its spares from a directory of the
// program's own, and its own directory shows none, ever.
func TestSpareIn(t *testing.T) {
	t.Parallel()
	user, own := t.TempDir(), t.TempDir()
	path := filepath.Join(user, "prd.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var s Syncer
	s.SpareIn(path, own)
	for _, body := range []string{"{\"a\":1}", "{\"b\":2}", "{}"} {
		if err := s.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != body {
			t.Fatalf("read %q, %v; want %q", got, err, body)
		}
		if ents, _ := os.ReadDir(user); len(ents) != 1 {
			t.Fatalf("the user's directory holds %v, want prd.json alone", ents)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(own); len(ents) != 0 {
		t.Errorf("spares left after Close: %v", ents)
	}
}
