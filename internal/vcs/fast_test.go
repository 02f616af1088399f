package vcs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ralph-loop/ralph/internal/gittest"
)

// gitWith runs git in dir with extra environment, failing the test on
// error.
func gitWith(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gittest.Env(dir), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// noGit makes g unable to start git: what it still does, it does in
// process.
func noGit(t *testing.T, g *Git) {
	t.Helper()
	g.Env = append(slices.Clone(g.Env), "PATH="+t.TempDir())
}

// repoWithA makes a repository on main whose first commit holds a.txt
// and a .gitignore of .ralph/, and opens it.
func repoWithA(t *testing.T) (*Git, string) {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".gitignore"), ".ralph/\n")
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	gittest.Init(t, dir)
	g, err := Open(t.Context(), dir, gittest.Env(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, dir
}

// TestLookInProcessIsGitAdd walks a working tree through the changes an
// agent makes and checks each look made in process against git's own: a
// copy of the index brought up to date by git add -A (less .ralph/), its
// tree by git write-tree, the paths by git add -v.
func TestLookInProcessIsGitAdd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".gitignore"), ".ralph/\n*.log\nbuild/\n!keep.log\n/rooted.txt\ndocs/**/gen\n")
	write(t, filepath.Join(dir, "a.txt"), "A\n")
	write(t, filepath.Join(dir, "sub", "b.txt"), "b\n")
	write(t, filepath.Join(dir, "sub2", ".gitignore"), "*.tmp\n")
	write(t, filepath.Join(dir, "build", "tracked.txt"), "t\n")
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "add", "-f", "build/tracked.txt")
	gittest.Git(t, dir, "commit", "-q", "-m", "init")
	g, err := Open(ctx, dir, gittest.Env(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	ref := filepath.Join(t.TempDir(), "index")
	if err := copyIndex(g.index, ref); err != nil {
		t.Fatal(err)
	}
	refEnv := []string{"GIT_INDEX_FILE=" + ref, "LC_ALL=C"}
	if _, err := g.Changes(ctx); err != nil { // the baseline
		t.Fatal(err)
	}
	noGit(t, g)

	steps := []struct {
		name   string
		change func()
	}{
		{"nothing", func() {}},
		{"same size, same tick", func() { write(t, filepath.Join(dir, "a.txt"), "B\n") }},
		{"new, ignored, re-included", func() {
			write(t, filepath.Join(dir, "sub", "c.txt"), "c\n")
			write(t, filepath.Join(dir, "x.log"), "ignored\n")
			write(t, filepath.Join(dir, "keep.log"), "kept\n")
			write(t, filepath.Join(dir, "build", "out.bin"), "ignored dir\n")
			write(t, filepath.Join(dir, ".ralph", "state.json"), "{}\n")
			write(t, filepath.Join(dir, "rooted.txt"), "ignored at the top\n")
			write(t, filepath.Join(dir, "deep", "rooted.txt"), "not ignored below\n")
			write(t, filepath.Join(dir, "docs", "a", "b", "gen", "x.md"), "ignored\n")
			write(t, filepath.Join(dir, "sub2", "x.tmp"), "ignored below\n")
			write(t, filepath.Join(dir, "y.tmp"), "not ignored above\n")
		}},
		{"rewritten right after the look", func() {
			write(t, filepath.Join(dir, "racy.txt"), "X1\n")
			if _, err := g.Changes(ctx); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "racy.txt"), "Y2\n")
		}},
		{"tracked file in an ignored directory", func() {
			write(t, filepath.Join(dir, "build", "tracked.txt"), "changed\n")
		}},
		{"deleted, made executable", func() {
			if err := os.Remove(filepath.Join(dir, "sub", "b.txt")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink, empty directory, odd names, order", func() {
			if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "é ü.txt"), "unicode\n")
			write(t, filepath.Join(dir, "a-b"), "1\n")
			write(t, filepath.Join(dir, "a.b"), "2\n")
			write(t, filepath.Join(dir, "a0"), "3\n")
			write(t, filepath.Join(dir, "a", "b", "c", "d.txt"), "4\n")
			write(t, filepath.Join(dir, "empty.txt"), "")
		}},
		{"a directory becomes a file", func() {
			if err := os.RemoveAll(filepath.Join(dir, "sub")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "sub"), "now a file\n")
		}},
		{"a symlink retargeted, a file emptied", func() {
			if err := os.Remove(filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("sub", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "keep.log"), "")
		}},
	}
	for _, step := range steps {
		step.change()
		out := gitWith(t, dir, refEnv, "add", "-A", "-v", "--", ".")
		gitWith(t, dir, refEnv, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", ":(top).ralph")
		want, _ := parseAddVerbose(out)
		slices.Sort(want)
		wantTree := gitWith(t, dir, refEnv, "write-tree")

		got, err := g.Changes(ctx)
		if err != nil {
			t.Fatalf("%s: Changes: %v (in process, no git on PATH)", step.name, err)
		}
		for i, p := range got {
			got[i] = filepath.ToSlash(strings.TrimPrefix(p, g.Root+string(filepath.Separator)))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Changes = %q, git add -v says %q", step.name, got, want)
		}
		tree, err := g.Seen(ctx)
		if err != nil || tree != wantTree {
			t.Errorf("%s: tree %s, %v; git write-tree says %s", step.name, tree, err, wantTree)
		}
	}
	// git reads ralph's index as its own (once written: Close waits for
	// it) and finds nothing to add.
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if out := gitWith(t, dir, []string{"GIT_INDEX_FILE=" + g.private, "LC_ALL=C"}, "add", "-A", "-v", "--dry-run", "--", "."); out != "" {
		if changed, _ := parseAddVerbose(out); len(changed) > 0 {
			t.Errorf("git add -A on ralph's index still adds %q", changed)
		}
	}
	gittest.Git(t, dir, "fsck", "--strict", "--no-progress")
}

// TestLookKeepsIndexInMemory: a look in process keeps ralph's index in
// memory and leaves its file alone; a change made right after a look,
// which keeps the file's size and time stamp tick, is still found (the
// index's time stamp is put before the look); Close writes the file, and
// git finds it current.
func TestLookKeepsIndexInMemory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repoWithA(t)
	if _, err := g.Changes(ctx); err != nil { // the baseline
		t.Fatal(err)
	}
	before, err := os.Stat(g.private)
	if err != nil {
		t.Fatal(err)
	}
	noGit(t, g)
	// a.txt changes; its time stamp m is a second ahead, so the look
	// comes before it however slow the machine: a change git could miss.
	m := time.Now().Add(time.Second)
	write(t, filepath.Join(dir, "a.txt"), "b\n")
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), m, m); err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.txt")}
	if got, err := g.Changes(ctx); err != nil || !slices.Equal(got, want) {
		t.Fatalf("Changes = %q, %v; want %q", got, err, want)
	}
	// Its content changes again with its stat data the same (a change
	// within the clock tick of the look; here the index is told another
	// content): only the index's own time stamp, put before the look,
	// makes the next look read the file again.
	g.mu.Lock()
	for i, e := range g.idx.entries {
		if e.name == "a.txt" {
			g.idx.entries[i].oid[0] ^= 0xff
		}
	}
	g.mu.Unlock()
	if got, err := g.Changes(ctx); err != nil || !slices.Equal(got, want) {
		t.Fatalf("after a change the stat data do not show: Changes = %q, %v; want %q", got, err, want)
	}
	after, err := os.Stat(g.private)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the looks rewrote ralph's index file")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if written, err := os.Stat(g.private); err != nil || os.SameFile(before, written) {
		t.Fatalf("Close did not write ralph's index (%v)", err)
	}
	if out := gitWith(t, dir, []string{"GIT_INDEX_FILE=" + g.private, "LC_ALL=C"}, "add", "-A", "-v", "--dry-run", "--", "."); out != "" {
		t.Errorf("git add -A on ralph's index still adds: %s", out)
	}
}

// TestCommitInProcessIsGitCommit makes the same changes in two copies of a
// repository, commits one in process and the other with git, and
// compares what a user sees: the tree, the message, who committed, the
// index, the status, the reflog.
func TestCommitInProcessIsGitCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mk := func() string {
		dir := t.TempDir()
		write(t, filepath.Join(dir, ".gitignore"), ".ralph/\n*.log\n")
		write(t, filepath.Join(dir, "a.txt"), "a\n")
		write(t, filepath.Join(dir, "gone.txt"), "g\n")
		gittest.Init(t, dir)
		return dir
	}
	ours, theirs := mk(), mk()
	g, err := Open(ctx, ours, gittest.Env(ours))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	msg := "feat: T-1 - First\n\nBody line   \n\n\n\nRalph-Guard: 0 findings\n"
	changes := []func(dir string){
		func(dir string) {
			write(t, filepath.Join(dir, "a.txt"), "changed\n")
			write(t, filepath.Join(dir, "new", "b.txt"), "b\n")
			write(t, filepath.Join(dir, "x.log"), "ignored\n")
			write(t, filepath.Join(dir, ".ralph", "state.json"), "{}\n")
			if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
				t.Fatal(err)
			}
		},
		func(dir string) {
			write(t, filepath.Join(dir, "new", "b.txt"), "b2\n")
			if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o755); err != nil {
				t.Fatal(err)
			}
		},
	}
	for i, change := range changes {
		change(ours)
		change(theirs)
		if i == 1 {
			noGit(t, g) // who commits is known since the first commit
		}
		hash, err := g.Commit(ctx, msg)
		if err != nil || hash == "" {
			t.Fatalf("commit %d: %q, %v", i, hash, err)
		}
		gittest.Git(t, theirs, "add", "-A")
		gittest.Git(t, theirs, "commit", "-q", "-m", msg)
		if head := gittest.Git(t, ours, "rev-parse", "HEAD"); head != hash {
			t.Errorf("commit %d: HEAD %s, Commit said %s", i, head, hash)
		}
		for _, q := range [][]string{
			{"rev-parse", "HEAD^{tree}"},
			{"log", "-1", "--format=%B%n%an <%ae>%n%cn <%ce>%n%P"},
			{"ls-files", "-s"},
			{"status", "--porcelain"},
			{"reflog", "-1", "--format=%gs"},
			{"reflog", "-1", "--format=%gs", "main"},
			{"rev-list", "--count", "HEAD"},
		} {
			o, th := gittest.Git(t, ours, q...), gittest.Git(t, theirs, q...)
			if q[0] == "log" { // the parents differ: the repositories do
				o, th = o[:strings.LastIndexByte(o, '\n')], th[:strings.LastIndexByte(th, '\n')]
			}
			if o != th {
				t.Errorf("commit %d: git %s:\n in process: %q\n git:        %q", i, strings.Join(q, " "), o, th)
			}
		}
	}
	if hash, err := g.Commit(ctx, msg); err != nil || hash != "" {
		t.Errorf("nothing to commit: %q, %v", hash, err)
	}
	gittest.Git(t, ours, "fsck", "--strict", "--no-progress")
	// No lock and no temporary object is left behind.
	_ = filepath.WalkDir(filepath.Join(ours, ".git"), func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, ".lock") || strings.HasPrefix(d.Name(), "tmp_obj_")) {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// TestCommitInProcessWorktreeAndPackedRef commits in a linked worktree
// (HEAD there, the branch and objects shared) and on a branch that only
// packed-refs holds.
func TestCommitInProcessWorktreeAndPackedRef(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, ".gitignore"), ".ralph/\n")
	gittest.Git(t, dir, "pack-refs", "--all")
	if _, err := g.Commit(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	noGit(t, g)
	write(t, filepath.Join(dir, "f.txt"), "f\n")
	hash, err := g.Commit(ctx, "second")
	if err != nil || hash == "" {
		t.Fatalf("in process with no git: %q, %v", hash, err)
	}
	if head := gittest.Git(t, dir, "rev-parse", "HEAD"); head != hash {
		t.Errorf("HEAD %s, want %s", head, hash)
	}

	wtDir := filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, dir, "worktree", "add", "-q", "-b", "side", wtDir)
	wt, err := Open(ctx, wtDir, gittest.Env(wtDir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wt.Close() })
	write(t, filepath.Join(wtDir, "g.txt"), "g\n")
	if _, err := wt.Commit(ctx, "warm up"); err != nil {
		t.Fatal(err)
	}
	noGit(t, wt)
	write(t, filepath.Join(wtDir, "h.txt"), "h\n")
	hash, err = wt.Commit(ctx, "in the worktree")
	if err != nil || hash == "" {
		t.Fatalf("worktree: %q, %v", hash, err)
	}
	if side := gittest.Git(t, dir, "rev-parse", "side"); side != hash {
		t.Errorf("branch side %s, want %s", side, hash)
	}
	if st := gittest.Git(t, wtDir, "status", "--porcelain"); st != "" {
		t.Errorf("worktree status after the commit:\n%s", st)
	}
	if gs := gittest.Git(t, wtDir, "reflog", "-1", "--format=%gs"); gs != "commit: in the worktree" {
		t.Errorf("worktree HEAD reflog %q", gs)
	}
	gittest.Git(t, dir, "fsck", "--strict", "--no-progress")
}

// TestInProcessLeavesToGit: what ralph cannot vouch for is git's.
func TestInProcessLeavesToGit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"attributes", func(t *testing.T, dir string) {
			t.Helper()
			write(t, filepath.Join(dir, "sub", ".gitattributes"), "*.txt text eol=crlf\n")
		}},
		{"autocrlf", func(t *testing.T, dir string) {
			t.Helper()
			gittest.Git(t, dir, "config", "core.autocrlf", "true")
		}},
		{"bracket pattern", func(t *testing.T, dir string) {
			t.Helper()
			write(t, filepath.Join(dir, ".gitignore"), ".ralph/\n[!a]*.log\n")
		}},
		{"nested repository", func(t *testing.T, dir string) {
			t.Helper()
			gittest.Git(t, dir, "init", "-q", filepath.Join(dir, "inner"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g, dir := repo(t)
			c.setup(t, dir)
			write(t, filepath.Join(dir, "f.txt"), "f\n")
			g.mu.Lock()
			_, ok, err := g.lookInProcess(ctx)
			g.mu.Unlock()
			if ok || err != nil {
				t.Errorf("looked in process (%v, %v); git should have", ok, err)
			}
		})
	}
	// A diff configured otherwise: git diffs (read again when it changes).
	g, dir := repo(t)
	if !g.plainDiff() {
		t.Error("plainDiff is false for a default configuration")
	}
	gittest.Git(t, dir, "config", "diff.algorithm", "patience")
	if g.plainDiff() {
		t.Error("plainDiff is true with diff.algorithm = patience")
	}
	// A commit hook, signing, a detached HEAD: git commits.
	for _, setup := range []func(dir string){
		func(dir string) {
			write(t, filepath.Join(dir, ".git", "hooks", "commit-msg"), "#!/bin/sh\n")
			if err := os.Chmod(filepath.Join(dir, ".git", "hooks", "commit-msg"), 0o755); err != nil {
				t.Fatal(err)
			}
		},
		func(dir string) { gittest.Git(t, dir, "config", "commit.gpgsign", "true") },
		func(dir string) { gittest.Git(t, dir, "checkout", "-q", "--detach") },
	} {
		g, dir := repo(t)
		setup(dir)
		write(t, filepath.Join(dir, "f.txt"), "f\n")
		if _, ok, err := g.commitInProcess(ctx, "m"); ok || err != nil {
			t.Errorf("committed in process (%v, %v); git should have", ok, err)
		}
	}
}

// TestRacyEntries: an entry whose stat data matches the file but was
// modified at or after the index was written is read again (a file system
// with a coarse clock can change a file in the same tick without its stat
// data showing it); an older one is trusted. The index written smudges
// such entries' size, as git does, so that a later index, written after
// the tick, does not vouch for them.
func TestRacyEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f.txt"), "new content\n")
	info, err := os.Lstat(filepath.Join(dir, "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "f.txt"), &st); err != nil {
		t.Fatal(err)
	}
	e := indexEntry{name: "f.txt", mode: 0o100644, stat: statOf(&st)}
	e.oid = hashObject("blob", []byte("old content\n")) // what the index says: not the file
	store := &objectStore{dir: t.TempDir()}
	for _, c := range []struct {
		indexTime time.Time
		changed   bool
	}{
		{info.ModTime(), true},                   // the same tick: read again
		{info.ModTime().Add(-time.Second), true}, // written before the file: read again
		{info.ModTime().Add(time.Second), false}, // after: the stat data is trusted
	} {
		s, err := scanWorkTree(dir, &index{version: 2, entries: []indexEntry{e}, mtime: c.indexTime}, store, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(s.changed) == 1; got != c.changed {
			t.Errorf("index written at %v, file at %v: changed = %v, want %v", c.indexTime, info.ModTime(), got, c.changed)
		}
	}
	for _, c := range []struct {
		at      time.Time
		smudged bool
	}{{info.ModTime(), true}, {info.ModTime().Add(time.Second), false}} {
		idx, err := parseIndex(encodeIndex(2, []indexEntry{e}, nil, c.at))
		if err != nil {
			t.Fatal(err)
		}
		if got := idx.entries[0].stat.size == 0; got != c.smudged {
			t.Errorf("written at %v, file at %v: size smudged = %v, want %v", c.at, info.ModTime(), got, c.smudged)
		}
	}
}

// FuzzParseIndex: no index file, however broken, crashes the reader, and
// what it reads writes back as it was.
func FuzzParseIndex(f *testing.F) {
	dir := f.TempDir()
	write(f, filepath.Join(dir, "a.txt"), "a")
	write(f, filepath.Join(dir, "d", "b.txt"), "b")
	gittest.Git(f, dir, "init", "-q")
	gittest.Git(f, dir, "add", "-A")
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	gittest.Git(f, dir, "update-index", "--index-version", "4")
	if data, err = os.ReadFile(filepath.Join(dir, ".git", "index")); err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := parseIndex(data)
		if err != nil {
			return
		}
		again, err := parseIndex(encodeIndex(idx.version, idx.entries, nil, time.Unix(1<<32-1, 0)))
		if err != nil {
			t.Fatalf("what was read does not read back: %v", err)
		}
		if len(again.entries) != len(idx.entries) {
			t.Fatalf("%d entries, read back %d", len(idx.entries), len(again.entries))
		}
		for i := range idx.entries {
			a, b := idx.entries[i], again.entries[i]
			a.stat.size, b.stat.size = 0, 0 // smudged
			if a != b {
				t.Fatalf("entry %d: %+v, read back %+v", i, a, b)
			}
		}
	})
}

// TestCommitInProcessAfterSomeoneElse: a commit or a staged change made
// with git between two of ralph's commits is seen (ralph does not start
// from what it left).
func TestCommitInProcessAfterSomeoneElse(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, ".gitignore"), ".ralph/\n")
	first, err := g.Commit(ctx, "ralph one")
	if err != nil || first == "" {
		t.Fatal(first, err)
	}
	write(t, filepath.Join(dir, "user.txt"), "u\n")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "the user's")
	user := gittest.Git(t, dir, "rev-parse", "HEAD")
	write(t, filepath.Join(dir, "staged.txt"), "s\n")
	gittest.Git(t, dir, "add", "staged.txt")
	write(t, filepath.Join(dir, "ralph.txt"), "r\n")
	second, err := g.Commit(ctx, "ralph two")
	if err != nil || second == "" {
		t.Fatal(second, err)
	}
	if parent := gittest.Git(t, dir, "rev-parse", second+"^"); parent != user {
		t.Errorf("ralph's commit has parent %s, want the user's %s", parent, user)
	}
	if files := gittest.Git(t, dir, "show", "--name-only", "--format=", second); files != "ralph.txt\nstaged.txt" {
		t.Errorf("ralph's commit holds %q", files)
	}
	if st := gittest.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("status after: %q", st)
	}
}

// TestCommitKeepsSpares: commits in process replace the index and the
// branch through a spare (the lock linked from it, the file replaced the
// next one), so the same two files take turns and none is made or freed;
// what git reads stays whole and current. A
// spare another name holds too (a run killed in the middle of a
// replacement) is never written: it is dropped and the commit goes on; a
// lock that is a spare's second name (a run killed holding it) is let go.
func TestCommitKeepsSpares(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repoWithA(t)
	index := filepath.Join(dir, ".git", "index")
	ref := filepath.Join(dir, ".git", "refs", "heads", "main")
	indexSpare := filepath.Join(dir, ".git", "ralph-index.spare")
	refSpare := filepath.Join(dir, ".git", "ralph-ref.spare")
	ino := func(path string) uint64 {
		t.Helper()
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return info.Sys().(*syscall.Stat_t).Ino
	}
	var last [4]uint64 // the index, its spare, the branch, its spare after the last commit
	for i := range 5 {
		write(t, filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), fmt.Sprintf("%d\n", i))
		if i == 3 {
			// A spare that is the index too, as a kill between the
			// lock's rename and the spare's leaves it.
			if err := os.Remove(indexSpare); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(index, indexSpare); err != nil {
				t.Fatal(err)
			}
		}
		if i == 4 {
			// The locks a run killed in the middle of a commit leaves:
			// second names of the spares. They are ralph's, and let go.
			for lock, spare := range map[string]string{index + ".lock": indexSpare, ref + ".lock": refSpare} {
				if err := os.Link(spare, lock); err != nil {
					t.Fatal(err)
				}
			}
		}
		hash, err := g.Commit(ctx, fmt.Sprintf("commit %d", i))
		if err != nil || hash == "" {
			t.Fatalf("commit %d: %q, %v", i, hash, err)
		}
		now := [4]uint64{ino(index), ino(indexSpare), ino(ref), ino(refSpare)}
		if i == 2 && (now[0] != last[1] || now[1] != last[0] || now[2] != last[3] || now[3] != last[2]) {
			t.Errorf("commit 2 made or freed files: before %v, after %v; want the same ones, trading places", last, now)
		}
		last = now
		info, err := os.Stat(indexSpare)
		if err != nil {
			t.Fatal(err)
		}
		if idx, _ := os.Stat(index); links(info) != 1 || os.SameFile(info, idx) {
			t.Fatalf("commit %d: the index's spare has %d names (the index's among them: %v)", i, links(info), os.SameFile(info, idx))
		}
		if got := strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD")); got != hash {
			t.Fatalf("commit %d: HEAD is %s, want %s", i, got, hash)
		}
		// Without optional locks: git status would write an index of its own.
		if out := gitWith(t, dir, []string{"GIT_OPTIONAL_LOCKS=0"}, "status", "--porcelain"); out != "" {
			t.Fatalf("commit %d: git status says\n%s", i, out)
		}
	}
	gittest.Git(t, dir, "fsck", "--strict", "--no-progress")
	if n := strings.Count(gittest.Git(t, dir, "log", "--format=%H"), "\n"); n != 5 {
		t.Errorf("%d commits, want 5", n)
	}
}

// TestCommitSparesPerWorktree: linked worktrees commit side by side on
// branches of the git directory they share (--parallel); each takes its
// branch's lock through a spare of its own, so no commit lands on the
// other's branch or is lost.
func TestCommitSparesPerWorktree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, dir := repoWithA(t)
	const rounds = 15
	var wts []*Git
	for _, b := range []string{"one", "two"} {
		wt := filepath.Join(t.TempDir(), b)
		gittest.Git(t, dir, "worktree", "add", "-q", "-b", b, wt)
		g, err := Open(ctx, wt, gittest.Env(wt))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		wts = append(wts, g)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(wts)*rounds)
	for _, g := range wts {
		wg.Go(func() {
			for i := range rounds {
				write(t, filepath.Join(g.Root, fmt.Sprintf("f%d.txt", i)), filepath.Base(g.Root)+"\n")
				if hash, err := g.Commit(ctx, fmt.Sprintf("%s %d", filepath.Base(g.Root), i)); err != nil || hash == "" {
					errs <- fmt.Errorf("%s commit %d: %q, %w", filepath.Base(g.Root), i, hash, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	base := strings.Count(gittest.Git(t, dir, "log", "--format=%H", "main"), "\n")
	for _, b := range []string{"one", "two"} {
		log := gittest.Git(t, dir, "log", "--format=%s", b)
		if n := strings.Count(log, "\n"); n != base+rounds {
			t.Errorf("branch %s has %d commits, want %d", b, n, base+rounds)
		}
		if other := map[string]string{"one": "two ", "two": "one "}[b]; strings.Contains(log, other) {
			t.Errorf("branch %s holds the other worktree's commits:\n%s", b, log)
		}
	}
	gittest.Git(t, dir, "fsck", "--strict", "--no-progress")
}
