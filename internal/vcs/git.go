// Package vcs drives the project's version control through the real git
// and sl (Sapling) binaries: snapshots of the working tree to tell whether
// an iteration changed anything, a commit per accepted task, the run's
// branch, and git worktrees for tasks that run in parallel.
//
// The two things every iteration does, the look at the working tree and
// the commit, are made in process for a plain git repository (fast.go:
// git's index, ignore rules and loose objects read and written as git
// does), because a git process costs more than the rest of an
// iteration's bookkeeping; anything else is git's, and git stays the
// reference the tests compare with. It never commits ralph's own .ralph/
// files. It decides nothing about runs: the loop and the command line say
// what to do.
package vcs

import (
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ralph-loop/ralph/internal/proc"
)

// Git is a git working tree.
//
// Its snapshots go through an index of ralph's own, kept between calls and
// runs in the git directory (ralph-index beside the real index), so the
// user's staging area is left alone and git's stat cache makes a snapshot
// cost what changed rather than the size of the tree. Only one process
// must use a working tree's private index at a time: ralph's run lock sees
// to that, and each git worktree has its own.
type Git struct {
	// Root is the top of the working tree.
	Root string
	// Env is the environment git runs with (nil: inherit).
	Env []string

	// mu serialises the users of the private index and guards what
	// follows.
	mu sync.Mutex
	// index is the real index and private ralph's own, both absolute;
	// "" until asked for.
	index, private string
	// pending holds the files whose content changed in the private index
	// since the last Changes.
	pending map[string]bool
	// tree is the id of the private index's tree as its last write-tree
	// wrote it; "" once a scan has changed the index since.
	tree string
	// scanned: the private index has been brought up to date at least
	// once by this Git.
	scanned bool
	// gitDir and commonDir are the git directory (per worktree) and the
	// one its worktrees share; "" when unknown.
	gitDir, commonDir string
	// commits counts Commit calls.
	commits atomic.Int64
	// conf is the configuration the looks and commits in process (fast.go)
	// read, nil until read.
	conf *gitConfig
	// zw compresses the objects written in process, reused.
	zw *zlib.Writer
	// idx is the private index as the last look in process left it, nil
	// when only the file says; privRoot, when set, is its tree, and says
	// the file is yet to be written. See keepPrivate.
	idx      *index
	privRoot *treeNode
	// syncPrivate: the private index is written before a look returns
	// (a worktree removed when its task ends).
	syncPrivate bool
	// maint is closed when the maintenance started after a commit ends
	// (nil: none under way); maintMu guards it.
	maintMu sync.Mutex
	maint   chan struct{}
	// last is what the last commit in process left, for the next one to
	// start from without reading it again (fastcommit.go).
	last *lastCommit
}

// Close waits for what a look left to write (the private index) and for
// the maintenance a commit started; the Git stays usable.
func (g *Git) Close() error {
	g.waitMaintenance()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.settlePrivate()
	return nil
}

// startMaintenance runs what git commit would have started after its
// work, git maintenance run --auto (which nearly always finds nothing to
// do: see Commit), in the background: the next agent runs meanwhile. The
// next Commit and Close wait for it.
func (g *Git) startMaintenance(ctx context.Context) {
	done := make(chan struct{})
	g.maintMu.Lock()
	g.maint = done
	g.maintMu.Unlock()
	go func() {
		defer close(done)
		_, _ = g.run(ctx, nil, "maintenance", "run", "--auto", "--quiet")
	}()
}

// waitMaintenance waits for the maintenance startMaintenance started.
func (g *Git) waitMaintenance() {
	g.maintMu.Lock()
	done := g.maint
	g.maint = nil
	g.maintMu.Unlock()
	if done != nil {
		<-done
	}
}

// maintenanceEvery is how often a commit of ralph's lets git run its
// automatic maintenance (see Commit).
const maintenanceEvery = 10

// privateIndex names ralph's index in the git directory (per worktree).
const privateIndex = "ralph-index"

// Open finds the git working tree that contains dir.
func Open(ctx context.Context, dir string, env []string) (*Git, error) {
	g := &Git{Root: dir, Env: env}
	out, err := g.run(ctx, nil, "rev-parse", "--show-toplevel", "--git-path", "index", "--git-path", privateIndex,
		"--git-dir", "--git-common-dir")
	if err != nil {
		if _, lookErr := proc.LookPath("git", "", environ(env)); lookErr != nil {
			return nil, fmt.Errorf("git is not installed: %w", lookErr)
		}
		return nil, fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		return nil, fmt.Errorf("git rev-parse --show-toplevel: unexpected output %q", out)
	}
	g.Root = lines[0]
	// --git-path and --git-dir answer relative to where git ran.
	g.index, g.private = absIn(dir, lines[1]), absIn(dir, lines[2])
	g.gitDir, g.commonDir = absIn(dir, lines[3]), absIn(dir, lines[4])
	return g, nil
}

// absIn makes p, relative to dir, absolute.
func absIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	if abs, err := filepath.Abs(filepath.Join(dir, p)); err == nil {
		return abs
	}
	return filepath.Join(dir, p)
}

// indexPaths finds the real and the private index once; g.mu is held.
func (g *Git) indexPaths(ctx context.Context) error {
	if g.private != "" {
		return nil
	}
	out, err := g.run(ctx, nil, "rev-parse", "--git-path", "index", "--git-path", privateIndex)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return fmt.Errorf("git rev-parse --git-path: unexpected output %q", out)
	}
	g.index, g.private = absIn(g.Root, lines[0]), absIn(g.Root, lines[1])
	return nil
}

// Snapshot returns the id of a tree object holding the working tree as it
// is now (tracked and untracked, ignored files and .ralph/ excepted). It is
// written through ralph's private index so the user's staging area is left
// alone.
func (g *Git) Snapshot(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.scan(ctx); err != nil {
		return "", err
	}
	return g.writeTree(ctx)
}

// Seen returns the id of the tree the last look at the working tree saw
// (Changes or Snapshot), without looking again: for when nothing but ralph
// itself can have run since. Before any look it is Snapshot.
func (g *Git) Seen(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.scanned {
		if err := g.scan(ctx); err != nil {
			return "", err
		}
	}
	return g.writeTree(ctx)
}

// writeTree writes the private index as a tree, or returns the id the
// last write-tree gave when no scan has changed the index since; g.mu is
// held.
func (g *Git) writeTree(ctx context.Context) (string, error) {
	if g.tree != "" {
		return g.tree, nil
	}
	if tree, ok := g.treeInProcess(ctx); ok {
		g.tree = tree
		return tree, nil
	}
	g.settlePrivate()
	out, err := g.run(ctx, []string{"GIT_INDEX_FILE=" + g.private}, "write-tree")
	if err != nil {
		return "", err
	}
	g.tree = strings.TrimSpace(out)
	return g.tree, nil
}

// Changes implements Repo: one git process when .ralph/ is ignored, as
// ralph makes it.
func (g *Git) Changes(ctx context.Context) ([]string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.scan(ctx); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(g.pending))
	for _, p := range slices.Sorted(maps.Keys(g.pending)) {
		paths = append(paths, filepath.Join(g.Root, filepath.FromSlash(p)))
	}
	g.pending = nil
	return paths, nil
}

// scan brings the private index up to date with the working tree and adds
// what changed to g.pending; g.mu is held. A private index git cannot use
// (left locked by a killed git, or written by another git version) is
// made again from the real one.
func (g *Git) scan(ctx context.Context) error {
	if err := g.indexPaths(ctx); err != nil {
		return err
	}
	err := g.scanOnce(ctx)
	if err == nil || ctx.Err() != nil {
		return err
	}
	_ = os.Remove(g.private + ".lock")
	if rerr := os.Remove(g.private); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return err
	}
	return g.scanOnce(ctx)
}

func (g *Git) scanOnce(ctx context.Context) error {
	fresh := false
	if _, err := os.Stat(g.private); errors.Is(err, fs.ErrNotExist) {
		// Starting from a copy of the real index lets git reuse its stat
		// cache: only files that changed are read again.
		if err := copyIndex(g.index, g.private); err != nil {
			return err
		}
		fresh = true
		g.tree, g.idx, g.privRoot = "", nil, nil
	}
	// In process when the repository is plain (fast.go), else git.
	changed, ok, err := g.lookInProcess(ctx)
	if err != nil {
		return err
	}
	if !ok {
		g.settlePrivate() // what the last look in process kept is git's to start from
		g.idx = nil       // git writes the file
		if changed, err = g.addAll(ctx, []string{"GIT_INDEX_FILE=" + g.private}, fresh); err != nil {
			return err
		}
		if len(changed) > 0 || fresh {
			g.tree = ""
		}
	}
	g.scanned = true
	if len(changed) > 0 && g.pending == nil {
		g.pending = map[string]bool{}
	}
	for _, p := range changed {
		g.pending[p] = true
	}
	return nil
}

// copyIndex makes a copy of the real index at dst, or nothing when there
// is no real index yet (git reads a missing index as an empty one). The
// copy is renamed into place so a crash leaves no half of it.
func copyIndex(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// Dirty implements Repo with git status, which takes no lock on the real
// index (GIT_OPTIONAL_LOCKS=0) and so never gets in the way of a git the
// user runs at the same time.
func (g *Git) Dirty(ctx context.Context) (bool, error) {
	out, err := g.run(ctx, []string{"GIT_OPTIONAL_LOCKS=0"}, "status", "--porcelain", "-z",
		"--untracked-files=normal", "--ignore-submodules=dirty", "--no-renames")
	if err != nil {
		return false, err
	}
	for f := range strings.SplitSeq(out, "\x00") {
		if len(f) > 3 && !ralphPath(strings.TrimSuffix(f[3:], "/")) {
			return true, nil
		}
	}
	return false, nil
}

// Commit stages every change except .ralph/ and commits it. It returns ""
// when there is nothing to commit. The pre-commit and commit-msg hooks
// run as for any commit.
func (g *Git) Commit(ctx context.Context, message string) (string, error) {
	g.waitMaintenance()
	if hash, ok, err := g.commitInProcess(ctx, message); ok || err != nil {
		if err == nil && hash != "" && g.commits.Add(1)%maintenanceEvery == 0 {
			g.startMaintenance(ctx)
		}
		return hash, err
	}
	staged, err := g.addAll(ctx, nil, false)
	if err != nil {
		return "", err
	}
	// git add -v names what it changed in the index; when that is nothing,
	// the index may still hold changes staged before (by the agent, say).
	if len(staged) == 0 && !g.stagedChanges(ctx) {
		return "", nil
	}
	args := []string{"commit", "-q", "-m", message}
	if g.commits.Add(1)%maintenanceEvery != 1 {
		// git commit starts git maintenance run --auto after its work, a
		// process of its own that costs about as much as the commit and
		// nearly always finds nothing to do: its thresholds count
		// thousands of loose objects. One commit in maintenanceEvery lets
		// it run, as the user's configuration says.
		args = append([]string{"-c", "maintenance.auto=false"}, args...)
	}
	if _, err := g.run(ctx, nil, args...); err != nil {
		if len(staged) > 0 && !g.stagedChanges(ctx) {
			return "", nil // what changed was changed back
		}
		// The message is in the history already; what the hook said is
		// what the user needs.
		var ce *CmdError
		if errors.As(err, &ce) {
			ce.Argv = []string{"git", "commit"}
		}
		return "", err
	}
	if hash := g.headRef(); hash != "" {
		return hash, nil
	}
	out, err := g.run(ctx, nil, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// headRef reads the commit HEAD names from git's files, a process saved
// per commit; "" when they cannot say (reftable, a symbolic ref to a
// symbolic ref), and the caller asks git.
func (g *Git) headRef() string {
	_, commit := g.readHead()
	return commit
}

// readHead reads HEAD from git's files: the ref it names ("" when
// detached) and the commit it is at ("" when unborn or not in files the
// files backend keeps).
func (g *Git) readHead() (ref, commit string) {
	if g.gitDir == "" {
		return "", ""
	}
	head, err := os.ReadFile(filepath.Join(g.gitDir, "HEAD"))
	if err != nil {
		return "", ""
	}
	line := strings.TrimSpace(string(head))
	ref, symbolic := strings.CutPrefix(line, "ref: ")
	if !symbolic {
		return "", objectID(line)
	}
	if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return "", ""
	}
	return ref, g.readRef(ref)
}

// readRef reads a ref from its loose file (the worktree's own, then the
// shared one) or packed-refs.
func (g *Git) readRef(ref string) string {
	for _, dir := range []string{g.gitDir, g.commonDir} {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ref))); err == nil {
			return objectID(strings.TrimSpace(string(b)))
		}
	}
	b, err := os.ReadFile(filepath.Join(g.commonDir, "packed-refs"))
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if id, name, ok := strings.Cut(line, " "); ok && name == ref {
			return objectID(id)
		}
	}
	return ""
}

// objectID returns s when it is a full object name (SHA-1 or SHA-256 in
// hex), "" otherwise.
func objectID(s string) string {
	if len(s) != 40 && len(s) != 64 {
		return ""
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return s
}

// stagedChanges reports whether the index differs from HEAD (or, when it
// cannot tell, that it does: the commit then says).
func (g *Git) stagedChanges(ctx context.Context) bool {
	_, err := g.run(ctx, nil, "diff", "--cached", "--quiet")
	return err != nil
}

// addAll stages every change but ralph's own .ralph/, whatever the
// project's .gitignore says, into the index env names (the real one when
// env is nil), and returns the files whose content it changed there.
//
// An exclude pathspec cannot keep .ralph/ out: git refuses a pathspec that
// names an ignored path. So .ralph/ is unstaged after, which git add -v
// shows is needed only when .ralph/ is not ignored (or was tracked); force
// unstages it all the same, for an index just copied from the real one.
func (g *Git) addAll(ctx context.Context, env []string, force bool) ([]string, error) {
	// git add -v's lines are translated: read them in English.
	out, err := g.run(ctx, append(env, "LC_ALL=C", "LANGUAGE="), "add", "-A", "-v", "--", ".")
	if err != nil {
		return nil, err
	}
	changed, ralph := parseAddVerbose(out)
	if ralph || force {
		if _, err := g.run(ctx, env, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", ":(top).ralph"); err != nil {
			return nil, err
		}
	}
	return changed, nil
}

// parseAddVerbose reads git add -v: "add 'PATH'" and "remove 'PATH'", one
// per file whose content changed in the index. ralph reports whether any
// of them was in .ralph/, which changed leaves out.
func parseAddVerbose(out string) (changed []string, ralph bool) {
	for line := range strings.SplitSeq(out, "\n") {
		rest, ok := strings.CutPrefix(line, "add '")
		if !ok {
			rest, ok = strings.CutPrefix(line, "remove '")
		}
		p, ok2 := strings.CutSuffix(rest, "'")
		if !ok || !ok2 || p == "" {
			continue
		}
		if ralphPath(p) {
			ralph = true
			continue
		}
		changed = append(changed, p)
	}
	return changed, ralph
}

// run runs one git command in the working tree; a failure is a *CmdError
// carrying git's stderr.
func (g *Git) run(ctx context.Context, env []string, args ...string) (string, error) {
	return command(ctx, g.Root, environ(g.Env), env, "git", args...)
}

// Kind implements Repo.
func (g *Git) Kind() string { return "git" }

// Dir implements Repo.
func (g *Git) Dir() string { return g.Root }

// Branch returns the checked-out branch, or an error wrapping ErrDetached
// that names the commit HEAD is at.
func (g *Git) Branch(ctx context.Context) (string, error) {
	out, err := g.run(ctx, nil, "symbolic-ref", "-q", "--short", "HEAD")
	if err == nil {
		return strings.TrimSpace(out), nil
	}
	if exitCode(err) != 1 {
		return "", err
	}
	at, _ := g.run(ctx, nil, "rev-parse", "--short", "HEAD")
	return "", fmt.Errorf("%w at %s", ErrDetached, strings.TrimSpace(at))
}

// SwitchBranch checks out branch name, creating it from HEAD when it does
// not exist. Uncommitted changes go along; git refuses (and says which
// files) when they would be overwritten.
func (g *Git) SwitchBranch(ctx context.Context, name string) (bool, error) {
	if _, err := g.run(ctx, nil, "check-ref-format", "--branch", name); err != nil {
		return false, fmt.Errorf("%q is not a valid branch name", name)
	}
	if cur, err := g.Branch(ctx); err == nil && cur == name {
		return false, nil
	}
	if g.hasBranch(ctx, name) {
		_, err := g.run(ctx, nil, "checkout", "-q", name)
		return false, err
	}
	_, err := g.run(ctx, nil, "checkout", "-q", "-b", name)
	return err == nil, err
}

func (g *Git) hasBranch(ctx context.Context, name string) bool {
	_, err := g.run(ctx, nil, "rev-parse", "--verify", "-q", "refs/heads/"+name)
	return err == nil
}

// Status lists changed and untracked files (each untracked file, not just
// its directory), as `git status --porcelain` names them.
func (g *Git) Status(ctx context.Context) ([]Change, error) {
	out, err := g.run(ctx, nil, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var changes []Change
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		code := strings.TrimSpace(f[:2])
		changes = append(changes, Change{Code: code, Path: f[3:]})
		if f[0] == 'R' || f[0] == 'C' {
			i++ // the rename's source follows
		}
	}
	return changes, nil
}

// Show returns path's content at rev.
func (g *Git) Show(ctx context.Context, rev, path string) ([]byte, error) {
	if rev == "." {
		rev = "HEAD"
	}
	out, err := g.run(ctx, nil, "show", rev+":"+filepath.ToSlash(path))
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// Head returns the commit HEAD is at.
func (g *Git) Head(ctx context.Context) (string, error) {
	out, err := g.run(ctx, nil, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return "", fmt.Errorf("the repository has no commit yet: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// Init creates a git repository in dir (on branch main) and returns it.
func Init(ctx context.Context, dir string, env []string) (*Git, error) {
	if _, err := proc.LookPath("git", "", environ(env)); err != nil {
		return nil, fmt.Errorf("git is not installed: %w", err)
	}
	g := &Git{Root: dir, Env: env}
	if _, err := g.run(ctx, nil, "-c", "init.defaultBranch=main", "init", "-q"); err != nil {
		return nil, err
	}
	return g, nil
}
