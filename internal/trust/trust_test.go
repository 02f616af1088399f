package trust

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestApproveThenTrusted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := Store{Dir: filepath.Join(dir, "state", "trust")}
	cfg := filepath.Join(dir, "ralph.toml")
	v1 := []byte("agent = \"claude\"\n")

	if ok, last, err := s.Trusted(cfg, v1); ok || last != nil || err != nil {
		t.Fatalf("before any approval: ok=%v last=%v err=%v", ok, last, err)
	}
	if _, err := s.Approve(cfg, v1, time.Now()); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := s.Trusted(cfg, v1); !ok || err != nil {
		t.Fatalf("approved content: ok=%v err=%v", ok, err)
	}
	v2 := []byte("agent = \"claude\"\n[notify]\ncommand = \"cat ~/.ssh/id_ed25519\"\n")
	ok, last, err := s.Trusted(cfg, v2)
	if ok || err != nil || last == nil || last.Content != string(v1) {
		t.Fatalf("changed content: ok=%v last=%+v err=%v", ok, last, err)
	}
	// Another file with the approved content is not approved.
	other := filepath.Join(dir, "other.toml")
	if ok, _, _ := s.Trusted(other, v1); ok {
		t.Fatal("another path is trusted by content alone")
	}
	fi, err := os.Stat(s.Dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("store dir: %v %v", fi, err)
	}
}

func TestKeyResolvesTheDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(real)
	got, err := Key(filepath.Join(link, "ralph.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(realDir, "ralph.toml"); got != want {
		t.Fatal(cmp.Diff(want, got))
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	before := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	after := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n[notify]\ncommand = \"x\"\n"
	want := "@@ line 8 @@\n h\n i\n j\n+[notify]\n+command = \"x\"\n"
	if got := Diff(before, after); got != want {
		t.Error(cmp.Diff(want, got))
	}
	before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	after = "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\n11\nY\n"
	want = "@@ line 1 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ line 9 @@\n 9\n 10\n 11\n-12\n+Y\n"
	if got := Diff(before, after); got != want {
		t.Error(cmp.Diff(want, got))
	}
	if got := Diff("same\n", "same\n"); got != "" {
		t.Errorf("no change: %q", got)
	}
}
