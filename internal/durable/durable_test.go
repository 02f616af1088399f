package durable

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadersSeeWholeFiles: while one writer replaces a file again and
// again with contents of different sizes, a reader opening it by name
// always reads one of them whole.
func TestReadersSeeWholeFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	contents := [][]byte{bytes.Repeat([]byte("a"), 10), bytes.Repeat([]byte("b"), 70000), bytes.Repeat([]byte("c"), 3)}
	if err := WriteFile(path, contents[0], 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := WriteFile(path, contents[i%len(contents)], 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 300 {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		whole := false
		for _, c := range contents {
			whole = whole || bytes.Equal(got, c)
		}
		if !whole {
			t.Fatalf("a reader saw %d bytes starting %q: part of a write", len(got), got[:min(len(got), 10)])
		}
	}
	close(stop)
	wg.Wait()
}

func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const writers, each = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			own := filepath.Join(dir, fmt.Sprintf("own-%d", w))
			for i := range each {
				if err := WriteFile(own, fmt.Appendf(nil, "%d", i), 0o644); err != nil {
					t.Error(err)
				}
				if err := WriteFile(filepath.Join(dir, "shared"), fmt.Appendf(nil, "w%d", w), 0o644); err != nil {
					t.Error(err)
				}
				if err := Append(filepath.Join(dir, "log"), fmt.Appendf(nil, "%d.%d\n", w, i), 0o644); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
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
	if err := WriteFile(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o640 || read(t, path) != "new" {
		t.Errorf("mode %v, content %q after a write; want the existing 0640 kept and the new content", info.Mode().Perm(), read(t, path))
	}
}

// TestWriteFailureLeavesTheFile: a write that cannot be made (its
// directory is read-only) leaves the old file as it was and no temporary
// file.
func TestWriteFailureLeavesTheFile(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root writes into a read-only directory")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "prd.json")
	if err := WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	if err := WriteFile(path, []byte("new"), 0o644); err == nil {
		t.Fatal("a write into a read-only directory succeeded")
	}
	if got := read(t, path); got != "old" {
		t.Errorf("content = %q, want the old one", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want the file alone", len(entries))
	}
}

func TestAppend(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	for _, line := range []string{"a\n", "b\n"} {
		if err := Append(path, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(t, path); got != "a\nb\n" {
		t.Errorf("content = %q", got)
	}
}

// TestRemoveSpares: the spare files earlier versions kept are removed,
// and nothing else.
func TestRemoveSpares(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{".state.json.spare-123", ".prd.json.spare-9", "state.json", "prd.json", ".gitignore"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveSpares(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != ".gitignore prd.json state.json" {
		t.Errorf("left %q", got)
	}
	if err := RemoveSpares(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing directory: %v", err)
	}
}
