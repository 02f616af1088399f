package vcs

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ralph-loop/ralph/internal/gittest"
)

// benchRepo is a repository of 50 files in 5 directories with .ralph/
// ignored, as the whole-process benchmark's project is, plus a look made.
func benchRepo(b *testing.B) (*Git, string) {
	b.Helper()
	dir := b.TempDir()
	write(b, filepath.Join(dir, ".gitignore"), ".ralph/\n")
	for i := range 50 {
		write(b, filepath.Join(dir, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%02d.txt", i)), fmt.Sprintf("file %d\n", i))
	}
	gittest.Init(b, dir)
	g, err := Open(b.Context(), dir, gittest.Env(dir))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := g.Snapshot(b.Context()); err != nil {
		b.Fatal(err)
	}
	return g, dir
}

// BenchmarkLook is an iteration's look at the tree after the agent wrote
// one new file: git add -A into ralph's index, and its tree.
func BenchmarkLook(b *testing.B) {
	g, dir := benchRepo(b)
	i := 0
	for b.Loop() {
		i++
		write(b, filepath.Join(dir, fmt.Sprintf("new-%d.txt", i)), "x\n")
		if _, err := g.Changes(b.Context()); err != nil {
			b.Fatal(err)
		}
		if _, err := g.Seen(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommit is ralph's commit of one new file and one changed one:
// git add -A, git commit.
func BenchmarkCommit(b *testing.B) {
	g, dir := benchRepo(b)
	i := 0
	for b.Loop() {
		i++
		write(b, filepath.Join(dir, fmt.Sprintf("new-%d.txt", i)), "x\n")
		write(b, filepath.Join(dir, "d0", "f00.txt"), fmt.Sprintf("v%d\n", i))
		if hash, err := g.Commit(b.Context(), fmt.Sprintf("commit %d", i)); err != nil || hash == "" {
			b.Fatal(hash, err)
		}
	}
}
