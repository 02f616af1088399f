package vcs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/gittest"
	"github.com/ralph-loop/ralph/internal/projectfs"
)

// repo makes a real git repository in a temp dir, with the shared test
// git environment (a fixed identity, no system or global config).
func repo(t *testing.T) (*Git, string) {
	t.Helper()
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q")
	gittest.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "init")
	g, err := Open(t.Context(), dir, gittest.Env(dir))
	if err != nil {
		t.Fatal(err)
	}
	return g, dir
}

func write(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotSeesEditsButNotRalphDir(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	before, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Changes(ctx); err != nil { // the baseline
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, ".ralph", "state.json"), "{}")
	same, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if same != before {
		t.Errorf("ralph's own files changed the snapshot")
	}
	if got, err := g.Changes(ctx); err != nil || len(got) != 0 {
		t.Errorf("ralph's own files counted as changes: %v, %v", got, err)
	}
	write(t, filepath.Join(dir, "a.txt"), "a")
	write(t, filepath.Join(dir, "sub", "b.txt"), "b")
	after, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Error("the snapshot did not change with the tree")
	}
	// A Snapshot in between does not hide what changed from Changes.
	got, err := g.Changes(ctx)
	want := []string{filepath.Join(g.Root, "a.txt"), filepath.Join(g.Root, "sub", "b.txt")}
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("Changes (-want +got), %v:\n%s", err, diff)
	}
	// Touched but not changed, changed back, removed.
	now := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), now, now); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub", "b.txt"), "B")
	write(t, filepath.Join(dir, "sub", "b.txt"), "b")
	if got, err := g.Changes(ctx); err != nil || len(got) != 0 {
		t.Errorf("Changes after a touch = %v, %v; want none", got, err)
	}
	if err := os.Remove(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	if got, err := g.Changes(ctx); err != nil || !slices.Equal(got, want[:1]) {
		t.Errorf("Changes after a removal = %v, %v; want %v", got, err, want[:1])
	}
	// The user's staging area is untouched.
	out, _ := g.run(ctx, nil, "diff", "--cached", "--name-only")
	if strings.TrimSpace(out) != "" {
		t.Errorf("snapshot staged files: %q", out)
	}
}

// TestChangesSurviveABrokenPrivateIndex: a private index git cannot use
// (a lock a killed git left, a file it cannot read) is made again.
func TestChangesSurviveABrokenPrivateIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, g.index+".lock", "")
	write(t, filepath.Join(dir, "a.txt"), "a")
	if _, err := g.Changes(ctx); err != nil {
		t.Fatalf("with a stale lock: %v", err)
	}
	write(t, g.index, "garbage")
	if _, err := g.Snapshot(ctx); err != nil {
		t.Fatalf("with a broken index: %v", err)
	}
}

func TestDirty(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	check := func(what string, want bool) {
		t.Helper()
		if got, err := g.Dirty(ctx); err != nil || got != want {
			t.Errorf("%s: Dirty = %v, %v; want %v", what, got, err, want)
		}
	}
	check("fresh", false)
	write(t, filepath.Join(dir, ".ralph", "state.json"), "{}")
	check(".ralph/ alone", false)
	write(t, filepath.Join(dir, "sub", "new.txt"), "x")
	check("an untracked file", true)
	if _, err := g.Commit(ctx, "feat: x"); err != nil {
		t.Fatal(err)
	}
	check("after the commit", false)
	write(t, filepath.Join(dir, "sub", "new.txt"), "y")
	check("a modified file", true)
}

func TestCommitExcludesRalphDirEvenWhenIgnored(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, ignored := range []bool{false, true} {
		g, dir := repo(t)
		if ignored {
			write(t, filepath.Join(dir, ".gitignore"), ".ralph/\n")
		}
		write(t, filepath.Join(dir, ".ralph", "history.jsonl"), "{}\n")
		write(t, filepath.Join(dir, "feature.go"), "package x\n")
		hash, err := g.Commit(ctx, "feat: T-1 - A feature")
		if err != nil {
			t.Fatalf("ignored=%v: %v", ignored, err)
		}
		if len(hash) != 40 {
			t.Fatalf("hash = %q", hash)
		}
		files, _ := g.run(ctx, nil, "show", "--name-only", "--format=%s", "HEAD")
		if !strings.Contains(files, "feat: T-1 - A feature") || !strings.Contains(files, "feature.go") || strings.Contains(files, ".ralph") {
			t.Errorf("ignored=%v: commit holds:\n%s", ignored, files)
		}
	}
}

func TestCommitNothingToCommit(t *testing.T) {
	t.Parallel()
	g, _ := repo(t)
	hash, err := g.Commit(t.Context(), "nothing")
	if err != nil || hash != "" {
		t.Errorf("Commit = %q, %v; want \"\", nil", hash, err)
	}
}

func TestCommitFailureCarriesGitStderr(t *testing.T) {
	t.Parallel()
	g, dir := repo(t)
	write(t, filepath.Join(dir, ".git", "hooks", "pre-commit"), "#!/bin/sh\necho 'lint failed: x.go' >&2\nexit 1\n")
	if err := os.Chmod(filepath.Join(dir, ".git", "hooks", "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "x.go"), "package x\n")
	_, err := g.Commit(t.Context(), "feat: x")
	if err == nil || !strings.Contains(err.Error(), "lint failed: x.go") {
		t.Errorf("err = %v, want the hook's stderr", err)
	}
}

func TestOpenOutsideRepo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Open(t.Context(), dir, append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir)))
	if !errors.Is(err, ErrNotRepo) {
		t.Errorf("err = %v, want ErrNotRepo", err)
	}
}

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, g *Git, args ...string) string {
	t.Helper()
	out, err := g.run(t.Context(), nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func TestBranchSwitchAndDetached(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, _ := repo(t)
	start, err := g.Branch(ctx)
	if err != nil || start == "" {
		t.Fatalf("Branch = %q, %v", start, err)
	}
	created, err := g.SwitchBranch(ctx, "ralph/feature")
	if err != nil || !created {
		t.Fatalf("SwitchBranch new = %v, %v; want created", created, err)
	}
	if b, _ := g.Branch(ctx); b != "ralph/feature" {
		t.Errorf("on %q after creating ralph/feature", b)
	}
	if created, err := g.SwitchBranch(ctx, "ralph/feature"); err != nil || created {
		t.Errorf("SwitchBranch current = %v, %v; want nothing to do", created, err)
	}
	git(t, g, "checkout", "-q", start)
	if created, err := g.SwitchBranch(ctx, "ralph/feature"); err != nil || created {
		t.Errorf("SwitchBranch existing = %v, %v; want checked out, not created", created, err)
	}
	if _, err := g.SwitchBranch(ctx, "bad name.."); err == nil || !strings.Contains(err.Error(), "not a valid branch name") {
		t.Errorf("SwitchBranch(bad name) = %v", err)
	}
	git(t, g, "checkout", "-q", "--detach")
	if _, err := g.Branch(ctx); !errors.Is(err, ErrDetached) {
		t.Errorf("Branch on a detached HEAD = %v, want ErrDetached", err)
	}
}

func TestStatusAndShow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "old.txt"), "old\n")
	write(t, filepath.Join(dir, "keep.txt"), "keep\n")
	git(t, g, "add", "-A")
	git(t, g, "commit", "-q", "-m", "files")
	write(t, filepath.Join(dir, "keep.txt"), "changed\n")
	write(t, filepath.Join(dir, "new dir", "a b.txt"), "new\n")
	git(t, g, "mv", "old.txt", "renamed.txt")
	got, err := g.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{"M", "keep.txt"}, {"R", "renamed.txt"}, {"??", "new dir/a b.txt"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	b, err := g.Show(ctx, "HEAD", "keep.txt")
	if err != nil || string(b) != "keep\n" {
		t.Errorf("Show = %q, %v", b, err)
	}
	if _, err := g.Show(ctx, "HEAD", "missing.txt"); err == nil {
		t.Error("Show of a missing file: no error")
	}
}

func TestWorktreeSquashMergeAndConflict(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "progress.txt"), "# log\n")
	write(t, filepath.Join(dir, "shared.txt"), "base\n")
	write(t, filepath.Join(dir, ".gitignore"), ".ralph/\n")
	git(t, g, "add", "-A")
	git(t, g, "commit", "-q", "-m", "base")

	// Three tasks from the same base: A and B touch different files and
	// both append to the progress log; C rewrites what A rewrote.
	trees := map[string]*Git{}
	for _, id := range []string{"A", "B", "C"} {
		wt, err := g.AddWorktree(ctx, filepath.Join(dir, ".ralph", "worktrees", id), "ralph/task/"+id)
		if err != nil {
			t.Fatal(err)
		}
		trees[id] = wt
	}
	write(t, filepath.Join(trees["A"].Root, "shared.txt"), "from A\n")
	write(t, filepath.Join(trees["B"].Root, "b.txt"), "b\n")
	write(t, filepath.Join(trees["C"].Root, "shared.txt"), "from C\n")
	for id, wt := range trees {
		write(t, filepath.Join(wt.Root, "progress.txt"), "# log\n"+id+" was here\n")
		if _, err := wt.Commit(ctx, "task "+id); err != nil {
			t.Fatal(err)
		}
	}
	union := []string{"progress.txt"}
	for _, id := range []string{"A", "B"} {
		conflicts, err := g.SquashMerge(ctx, "ralph/task/"+id, union)
		if err != nil || len(conflicts) > 0 {
			t.Fatalf("merge %s: conflicts %v, err %v", id, conflicts, err)
		}
		if _, err := g.Commit(ctx, "feat: "+id); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "progress.txt")); string(b) != "# log\nA was here\nB was here\n" {
		t.Errorf("progress.txt after two merges:\n%s", b)
	}
	head := git(t, g, "rev-parse", "HEAD")
	conflicts, err := g.SquashMerge(ctx, "ralph/task/C", union)
	if err != nil || !slices.Equal(conflicts, []string{"shared.txt"}) {
		t.Fatalf("merge C: conflicts %v, err %v; want shared.txt", conflicts, err)
	}
	if st, _ := g.Status(ctx); len(st) != 0 || git(t, g, "rev-parse", "HEAD") != head {
		t.Errorf("a conflicting merge touched the tree: %v", st)
	}

	// The conflicting branch is kept under another name; the worktrees go.
	if err := g.RenameBranch(ctx, "ralph/task/C", "ralph/conflict/C-1"); err != nil {
		t.Fatal(err)
	}
	for id, wt := range trees {
		if err := g.RemoveWorktree(ctx, wt.Root); err != nil {
			t.Fatal(err)
		}
		if id != "C" {
			if err := g.DeleteBranch(ctx, "ralph/task/"+id); err != nil {
				t.Fatal(err)
			}
		}
	}
	if list := git(t, g, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", list)
	}
	got, err := g.Branches(ctx, "ralph/")
	if err != nil || !slices.Equal(got, []string{"ralph/conflict/C-1"}) {
		t.Errorf("Branches(ralph/) = %v, %v", got, err)
	}
}

func TestRemoveWorktreeGoneDirectory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	wt, err := g.AddWorktree(ctx, filepath.Join(dir, "wt"), "ralph/task/X")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(wt.Root); err != nil {
		t.Fatal(err)
	}
	if err := g.RemoveWorktree(ctx, wt.Root); err != nil {
		t.Errorf("RemoveWorktree of a vanished directory: %v", err)
	}
	if err := g.DeleteBranch(ctx, "ralph/task/X"); err != nil {
		t.Errorf("branch still checked out somewhere: %v", err)
	}
}

// TestNoDescriptorLeak: the looks, status checks and commits of a long
// run leave no file descriptor open. Not parallel, so that no other test
// opens any meanwhile.
func TestNoDescriptorLeak(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc/self/fd")
	}
	ctx := t.Context()
	g, dir := repo(t)
	round := func(i int) {
		write(t, filepath.Join(dir, "f.txt"), strings.Repeat("x", i))
		if _, err := g.Changes(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Dirty(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Commit(ctx, "round"); err != nil {
			t.Fatal(err)
		}
	}
	round(0) // the first round opens what stays open (the runtime's own)
	before := openFDs(t)
	for i := 1; i <= 20; i++ {
		round(i)
	}
	if after := openFDs(t); after > before {
		t.Errorf("open descriptors: %d before 20 rounds, %d after", before, after)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestOpenFromASubdirectory: the indexes are found from a subdirectory,
// named relatively, as well as from the top.
func TestOpenFromASubdirectory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	top, dir := repo(t)
	write(t, filepath.Join(dir, "sub", "a.txt"), "a")
	g, err := Open(ctx, filepath.Join(dir, "sub"), top.Env)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "sub", ".ralph", LookDir, "index"); g.index != want {
		t.Errorf("ralph's index %q, want %q: in the state directory of the project opened", g.index, want)
	}
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "b.txt"), "b")
	write(t, filepath.Join(dir, "sub", ".ralph", "state.json"), "{}")
	if got, err := g.Changes(ctx); err != nil || !slices.Equal(got, []string{filepath.Join(g.Root, "b.txt")}) {
		t.Errorf("Changes = %v, %v", got, err)
	}
}

func TestSeenIsTheLastLook(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	first, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A change nobody looked at yet is not in what the last look saw.
	write(t, filepath.Join(dir, "a.txt"), "a")
	if seen, err := g.Seen(ctx); err != nil || seen != first {
		t.Errorf("Seen before a look = %q, %v; want the last snapshot %q", seen, err, first)
	}
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	seen, err := g.Seen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if seen == first {
		t.Fatal("Seen after a look that found a.txt is still the tree before it")
	}
	// With no git to run, Seen still answers: the look's tree is kept.
	bin := g.bin
	g.bin = filepath.Join(t.TempDir(), "git")
	if again, err := g.Seen(ctx); err != nil || again != seen {
		t.Errorf("Seen with nothing new = %q, %v; want %q without running git", again, err, seen)
	}
	if _, err := g.Snapshot(ctx); err == nil {
		t.Fatal("Snapshot ran git with no git to run: the test proves nothing")
	}
	g.bin = bin
	if snap, err := g.Snapshot(ctx); err != nil || snap != seen {
		t.Errorf("Snapshot = %q, %v; want the tree Seen named, %q", snap, err, seen)
	}
}

// TestCommitHashIsHEAD: the hash Commit reads from git commit's summary
// line is the one git names, on a branch, in a linked worktree and on a
// detached HEAD.
func TestCommitHashIsHEAD(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, _ := repo(t)
	wt, err := g.AddWorktree(ctx, filepath.Join(t.TempDir(), "wt"), "ralph/task/X")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, r *Git) {
		t.Helper()
		write(t, filepath.Join(r.Root, name+".txt"), name)
		hash, err := r.Commit(ctx, "feat: "+name)
		if err != nil {
			t.Fatal(err)
		}
		if want := git(t, r, "rev-parse", "HEAD"); hash != want {
			t.Errorf("%s: Commit = %q, git rev-parse HEAD = %q", name, hash, want)
		}
		if seen, err := r.Seen(ctx); err != nil || seen != hash {
			t.Errorf("%s: Seen after the commit = %q, %v; want the commit %q", name, seen, err, hash)
		}
	}
	check("branch", g)
	check("worktree", wt)
	git(t, g, "checkout", "-q", "--detach")
	check("detached", g)
}

// TestLegacyFilesRemoved: the files versions before 0.1 kept in the git
// directory (an index, spares, and a git lock that is a second name of a
// spare, left by a ralph killed while it held it) are removed by the
// first look; a lock that is no second name of a spare is someone else's
// and stays.
func TestLegacyFilesRemoved(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	gitDir := filepath.Join(dir, ".git")
	for _, name := range []string{"ralph-index", "ralph-index.spare", "ralph-ref.spare", "ralph-ref.spare.next"} {
		write(t, filepath.Join(gitDir, name), "old")
	}
	if err := os.Link(filepath.Join(gitDir, "ralph-index.spare"), filepath.Join(gitDir, "index.lock")); err != nil {
		t.Fatal(err)
	}
	branchLock := filepath.Join(gitDir, "refs", "heads", "main.lock")
	if err := os.Link(filepath.Join(gitDir, "ralph-ref.spare"), branchLock); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(gitDir, "refs", "heads", "theirs.lock")
	write(t, theirs, "a git of the user's")
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ralph-index", "ralph-index.spare", "ralph-ref.spare", "ralph-ref.spare.next", "index.lock", "refs/heads/main.lock"} {
		if _, err := os.Lstat(filepath.Join(gitDir, name)); err == nil {
			t.Errorf(".git/%s is still there", name)
		}
	}
	if _, err := os.Lstat(theirs); err != nil {
		t.Errorf("a lock that was not ralph's was removed: %v", err)
	}
	write(t, filepath.Join(dir, "a.txt"), "a")
	if hash, err := g.Commit(ctx, "feat: a"); err != nil || hash == "" {
		t.Errorf("Commit after the clean-up = %q, %v", hash, err)
	}
}

// TestGitObeysTheUserNotTheAgent: what an agent can write in the project
// makes ralph's git run nothing and write nowhere else: a git of its own
// on PATH inside the project, a commondir moving the common directory to
// hooks of its own (refused), an fsmonitor in a nested repository's configuration
// (or the repository's), a reflog linked to a file outside.
func TestGitObeysTheUserNotTheAgent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	gittest.Init(t, dir)
	marker := filepath.Join(t.TempDir(), "ran")
	evil := "#!/bin/sh\necho \"$0\" >>" + marker + "\n"
	// A git inside the project, first on PATH (an activated virtualenv).
	write(t, filepath.Join(dir, ".venv", "bin", "git"), evil+"exit 1\n")
	if err := os.Chmod(filepath.Join(dir, ".venv", "bin", "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(gittest.Env(dir), "PATH="+filepath.Join(dir, ".venv", "bin")+string(filepath.ListSeparator)+os.Getenv("PATH"))
	g, err := Open(ctx, dir, env)
	if err != nil {
		t.Fatalf("Open with a git in the project first on PATH: %v", err)
	}
	if projectfs.New(dir).Contains(g.bin) {
		t.Fatalf("git is %s, inside the project", g.bin)
	}
	// The agent's common directory, with a hook that would run at the
	// commit; fsmonitor hooks in the repository and a nested one.
	other := t.TempDir()
	write(t, filepath.Join(other, "hooks", "pre-commit"), evil)
	write(t, filepath.Join(other, "config"), "[core]\n\trepositoryformatversion = 0\n")
	if err := os.Chmod(filepath.Join(other, "hooks", "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "watch.sh"), evil)
	if err := os.Chmod(filepath.Join(dir, "watch.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "config", "core.fsmonitor", filepath.Join(dir, "watch.sh"))
	nested := filepath.Join(dir, "nested")
	write(t, filepath.Join(nested, "n.txt"), "n")
	gittest.Init(t, nested)
	gittest.Git(t, nested, "config", "core.fsmonitor", filepath.Join(dir, "watch.sh"))

	write(t, filepath.Join(dir, "a.txt"), "a")
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Dirty(ctx); err != nil {
		t.Fatal(err)
	}
	hash, err := g.Commit(ctx, "feat: a")
	if err != nil || hash == "" {
		t.Fatalf("Commit = %q, %v", hash, err)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("ralph's git ran what the agent wrote:\n%s", b)
	}

	// A commondir the agent writes (git follows it whatever GIT_DIR and
	// GIT_COMMON_DIR say): no git command runs in this run any more, and
	// the file is gone, so that the user's own git never obeys it; the
	// next run's commit goes on.
	write(t, filepath.Join(dir, ".git", "commondir"), other+"\n")
	write(t, filepath.Join(dir, "c.txt"), "c")
	if _, err := g.Commit(ctx, "feat: c"); err == nil || !strings.Contains(err.Error(), "commondir changed") ||
		!strings.Contains(err.Error(), "put it back") {
		t.Errorf("Commit with the agent's commondir = %v, want a refusal that says it was put back", err)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("ralph's git ran the hook of the agent's common directory:\n%s", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git", "commondir")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the agent's commondir is still there: %v", err)
	}
	if _, err := g.Commit(ctx, "feat: c"); err == nil || !strings.Contains(err.Error(), "commondir changed") {
		t.Errorf("the run's next Commit = %v, want the same refusal", err)
	}
	next, err := Open(ctx, dir, g.Env)
	if err != nil {
		t.Fatal(err)
	}
	next.Hooks = g.Hooks
	if hash, err := next.Commit(ctx, "feat: c"); err != nil || hash == "" {
		t.Errorf("the next run's Commit = %q, %v", hash, err)
	}
	g = next

	// A reflog linked outside: the commit refuses to write through it.
	outside := filepath.Join(t.TempDir(), "bashrc")
	write(t, outside, "# mine\n")
	reflog := filepath.Join(dir, ".git", "logs", "refs", "heads", "main")
	if err := os.Remove(reflog); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, reflog); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "b.txt"), "b")
	if _, err := g.Commit(ctx, "feat: b"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Commit through a linked reflog = %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "# mine\n" {
		t.Errorf("the file outside was written: %q", b)
	}

	// An object directory linked outside: no object of ralph's is written
	// there.
	if err := os.Remove(reflog); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "reflog", "expire", "--all", "--expire=now")
	away := t.TempDir()
	objDir := filepath.Join(dir, ".git", "objects", "ff")
	_ = os.RemoveAll(objDir)
	if err := os.Symlink(away, objDir); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Commit(ctx, "feat: b"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Commit with a linked object directory = %v, want a refusal", err)
	}
	if ents, _ := os.ReadDir(away); len(ents) > 0 {
		t.Errorf("objects written outside: %v", ents)
	}
}

// TestOpenRefusesAPlantedCommondir: a commondir file in a repository's
// own git directory (git writes one only for linked worktrees, naming
// their common directory) was left by someone else, maybe an agent in an
// earlier run: Open refuses it rather than take configuration and hooks
// from where it points. A linked worktree's own opens as usual.
func TestOpenRefusesAPlantedCommondir(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	if _, err := g.AddWorktree(ctx, filepath.Join(t.TempDir(), "wt"), "ralph/task/X"); err != nil {
		t.Fatalf("a linked worktree: %v", err)
	}
	evil := t.TempDir()
	gittest.Git(t, evil, "init", "-q", "--bare")
	write(t, filepath.Join(dir, ".git", "commondir"), evil+"\n")
	if _, err := Open(ctx, dir, g.Env); err == nil || !strings.Contains(err.Error(), "commondir") {
		t.Errorf("Open with a planted commondir = %v, want a refusal naming it", err)
	}
}

// A repository nested in the tree (a submodule .gitmodules names) has
// a configuration of its own, the agent's: ralph's look runs nothing in
// it (git add would ask git status there, which runs its clean filter),
// yet names its gitlink when its HEAD moves, in a later run as well.
func TestLookRunsNothingInANestedRepository(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	sub := filepath.Join(dir, "sub")
	write(t, filepath.Join(sub, "f.txt"), "a\n")
	write(t, filepath.Join(sub, ".gitattributes"), "f.txt filter=agent\n")
	gittest.Init(t, sub)
	marker := filepath.Join(t.TempDir(), "filter-ran")
	gittest.Git(t, sub, "config", "filter.agent.clean", "touch "+marker+"; cat")
	write(t, filepath.Join(dir, ".gitmodules"), "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "a submodule")
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(sub, "f.txt"), "b\n") // as long as before: git must read it to tell
	_ = os.Remove(marker)
	for _, look := range []*Git{g, reopen(t, dir)} { // this run's look, and the next run's first
		if _, err := look.Changes(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("ralph's look ran the nested repository's clean filter")
		}
	}
	gittest.Git(t, sub, "-c", "filter.agent.clean=cat", "commit", "-q", "-a", "-m", "b")
	changes, err := g.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(changes, sub) {
		t.Errorf("changes %q, want the submodule whose HEAD moved", changes)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("ralph's look ran the nested repository's clean filter")
	}
}

// NestedRepo is told, once, of a repository that appears in the tree,
// and not of one committed before (a submodule), whose HEAD moving is a
// change like any other; and it is told when a nested repository's git
// directory moves: its .git file rewritten, a commondir file added. What
// moved a submodule's is put back.
func TestLookTellsOfNestedRepositories(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	sub := filepath.Join(dir, "sub")
	write(t, filepath.Join(sub, "f.txt"), "a\n")
	gittest.Init(t, sub)
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "a submodule")
	var told []RepoNews
	g.NestedRepo = func(n RepoNews) { told = append(told, n) }
	look := func() {
		t.Helper()
		if _, err := g.Changes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	look()
	write(t, filepath.Join(sub, "f.txt"), "b\n")
	gittest.Git(t, sub, "commit", "-q", "-a", "-m", "b")
	nested := filepath.Join(dir, "made", "by agent")
	write(t, filepath.Join(nested, "n.txt"), "n\n")
	gittest.Init(t, nested)
	for i := range 2 {
		look()
		write(t, filepath.Join(nested, "n.txt"), strconv.Itoa(i)+"\n")
		gittest.Git(t, nested, "commit", "-q", "-a", "-m", "m")
	}
	if want := []RepoNews{{Path: "made/by agent"}}; !slices.Equal(told, want) {
		t.Fatalf("NestedRepo told %+v, want %+v", told, want)
	}

	// A submodule whose git directory is under .git/modules: a commondir
	// file there is removed.
	told = nil
	modSub, modules := absorbedSubmodule(t, dir, "modsub")
	look() // new to ralph's index (a user's commit): told as new
	look() // its git directory, as this look finds it
	told = nil
	write(t, filepath.Join(modules, "commondir"), "../../../elsewhere\n")
	look()
	if _, err := os.Stat(filepath.Join(modules, "commondir")); err == nil {
		t.Error("the commondir file in .git/modules/modsub is still there")
	}
	// Its .git file rewritten to name a git directory of the agent's: put
	// back as it was.
	evil := filepath.Join(dir, "evil")
	if err := os.MkdirAll(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(modSub, ".git"), "gitdir: ../evil\n")
	look()
	look() // nothing new
	if b, err := os.ReadFile(filepath.Join(modSub, ".git")); err != nil || string(b) != "gitdir: ../.git/modules/modsub\n" {
		t.Errorf("modsub/.git holds %q (%v), want it put back", b, err)
	}
	wantPutBack := []RepoNews{
		{Path: "modsub", GitDir: modules + " (commondir) " + filepath.Join(dir, "elsewhere"), PutBack: true},
		{Path: "modsub", GitDir: evil, PutBack: true},
	}
	if !slices.Equal(told, wantPutBack) {
		t.Errorf("NestedRepo told %+v, want %+v", told, wantPutBack)
	}

	// A repository whose .git is a directory: moved elsewhere and
	// pointed at by a file, and a commondir file in the agent's own git
	// directory, are told of, not put back.
	told = nil
	moved := filepath.Join(dir, "moved")
	if err := os.Rename(filepath.Join(sub, ".git"), moved); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(sub, ".git"), "gitdir: ../moved\n")
	look()
	write(t, filepath.Join(moved, "commondir"), "../elsewhere\n")
	look()
	look() // nothing new
	want := []RepoNews{{Path: "sub", GitDir: moved}, {Path: "sub", GitDir: moved + " (commondir) " + filepath.Join(dir, "elsewhere")}}
	if !slices.Equal(told, want) {
		t.Errorf("NestedRepo told %+v, want %+v", told, want)
	}
}

// A look git refuses (a path it will not add) makes ralph's index again
// from the real one, which holds what the agent staged itself, an
// ignored file included: the next look, finding nothing more to add,
// names that index's tree, not the one the last good look saw. (Found by
// the seeded oracle, seed 1795784277388224479.)
func TestLookAfterARefusedLookNamesTheCopiedIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "ignore logs")
	before, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "x.log"), "staged by the agent\n")
	gittest.Git(t, dir, "add", "-f", "x.log")
	write(t, filepath.Join(dir, ".GIT", "config"), "[core]\n")
	if _, err := g.Snapshot(ctx); err == nil {
		t.Fatal("a look with .GIT/config in the tree succeeded; git refuses that path")
	}
	if err := os.RemoveAll(filepath.Join(dir, ".GIT")); err != nil {
		t.Fatal(err)
	}
	after, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(gittest.Git(t, dir, "write-tree"))
	if after != want || after == before {
		t.Errorf("the look names tree %s (before the refused look: %s), want the index's %s", after, before, want)
	}
}

// absorbedSubmodule commits a submodule at name whose git directory is
// .git/modules/name, named by its .git file, as git submodule
// absorbgitdirs leaves it; it returns the submodule and its git
// directory.
func absorbedSubmodule(t *testing.T, dir, name string) (sub, gitDir string) {
	t.Helper()
	sub, gitDir = filepath.Join(dir, name), filepath.Join(dir, ".git", "modules", name)
	write(t, filepath.Join(sub, "f.txt"), "a\n")
	gittest.Init(t, sub)
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "submodule "+name)
	if err := os.MkdirAll(filepath.Dir(gitDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(sub, ".git"), gitDir); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(sub, ".git"), "gitdir: ../.git/modules/"+name+"\n")
	return sub, gitDir
}

// watchedSubmodule is a repository with a submodule at lib
// (absorbedSubmodule) that ralph's looks know, and what NestedRepo is
// told from here on.
func watchedSubmodule(t *testing.T) (g *Git, dir, sub, gitDir string, told *[]RepoNews) {
	t.Helper()
	g, dir = repo(t)
	sub, gitDir = absorbedSubmodule(t, dir, "lib")
	told = &[]RepoNews{}
	g.NestedRepo = func(n RepoNews) { *told = append(*told, n) }
	for range 2 { // new to ralph's index, then its git directory as found
		if _, err := g.Changes(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	*told = nil
	return g, dir, sub, gitDir, told
}

// A submodule the agent replaced with a link to a directory elsewhere
// has its git directory moved, and told of, but nothing is put back
// there: ralph writes no .git file through a link.
func TestLookPutsNothingBackThroughALink(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, _, sub, _, told := watchedSubmodule(t)
	elsewhere := t.TempDir()
	write(t, filepath.Join(elsewhere, ".git"), "gitdir: "+elsewhere+"\n")
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(elsewhere, ".git")); err != nil || string(b) != "gitdir: "+elsewhere+"\n" {
		t.Errorf("the .git file the link leads to holds %q (%v): ralph wrote through the link", b, err)
	}
	if want := []RepoNews{{Path: "lib", GitDir: elsewhere}}; !slices.Equal(*told, want) {
		t.Errorf("NestedRepo told %+v, want %+v", told, want)
	}
}

// A fifo the agent puts where ralph reads one of git's small files
// (.git/commondir, a submodule's commondir) holds nothing up: ralph's
// git stops, the fifo is removed from .git, and the submodule's is put
// back too.
func TestAFifoForAGitFileHoldsNothingUp(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir, _, modules, told := watchedSubmodule(t)
	if err := syscall.Mkfifo(filepath.Join(modules, "commondir"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(modules, "commondir")); err == nil {
		t.Error("the fifo in the submodule's git directory is still there")
	}
	if len(*told) != 1 || !(*told)[0].PutBack {
		t.Errorf("NestedRepo told %+v, want the submodule's commondir put back", *told)
	}

	fifo := filepath.Join(dir, ".git", "commondir")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Snapshot(ctx); !errors.Is(err, errCommonDirMoved) {
		t.Errorf("a look with a fifo for .git/commondir: %v, want ralph's git stopped", err)
	}
	if _, err := os.Lstat(fifo); err == nil {
		t.Error("the fifo for .git/commondir is still there")
	}
}

func reopen(t *testing.T, dir string) *Git {
	t.Helper()
	g, err := Open(t.Context(), dir, gittest.Env(dir))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A linked worktree's git directory lies in the common one, which the
// agent can write: swapped for a link to a directory of its own, it is
// not obeyed, and nothing is written through it.
func TestGitDirSwappedForALinkStopsGit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	main := gittest.Init(t, t.TempDir())
	wt := filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, main, "worktree", "add", "-q", "-b", "task", wt)
	g, err := Open(ctx, wt, gittest.Env(main))
	if err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(main, ".git", "worktrees", "wt")
	theirs := filepath.Join(t.TempDir(), "theirs")
	if err := os.Rename(gitDir, theirs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(theirs, "commondir"), []byte("/elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(theirs, gitDir); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt, "a.txt"), "a\n")
	if _, err := g.Changes(ctx); err == nil || !strings.Contains(err.Error(), "is not the directory it was when the run started") {
		t.Fatalf("Changes: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(filepath.Join(theirs, "commondir")); string(b) != "/elsewhere\n" {
		t.Errorf("ralph wrote through the link: commondir now %q", b)
	}
}
