package state

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTranscriptFiles(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		dir, run    string
		iter        int
		prompt, out string
	}{
		{"/p", "20261121-072012-a1b2c3", 7, "/p/.ralph/runs/20261121-072012-a1b2c3/iter-007.prompt.md", "/p/.ralph/runs/20261121-072012-a1b2c3/iter-007.out"},
		{"/p", "r", 1000, "/p/.ralph/runs/r/iter-1000.prompt.md", "/p/.ralph/runs/r/iter-1000.out"},
		// The dry run's placeholder.
		{"", "<run_id>", 1, ".ralph/runs/<run_id>/iter-001.prompt.md", ".ralph/runs/<run_id>/iter-001.out"},
	} {
		p, o := TranscriptFiles(tt.dir, tt.run, tt.iter)
		if p != filepath.FromSlash(tt.prompt) || o != filepath.FromSlash(tt.out) {
			t.Errorf("TranscriptFiles(%q, %q, %d) = %q, %q", tt.dir, tt.run, tt.iter, p, o)
		}
	}
}

func TestRepoPath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		root, p, want string
		ok            bool
	}{
		{root, root, ".", true},
		{root, sub, "a/b", true},
		{root, filepath.Join(link, "a", "b"), "a/b", true}, // the project reached through a symlink
		{link, filepath.Join(sub, "x.json"), "a/b/x.json", true},
		{sub, root, "", false},
	} {
		got, err := RepoPath(tt.root, tt.p)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("RepoPath(%q, %q) = %q, %v; want %q", tt.root, tt.p, got, err, tt.want)
		}
	}
}
