// Package vcs drives the project's version control through the real git
// and sl (Sapling) binaries: looks at the working tree to tell whether an
// iteration changed anything, the diffs the checks read, a commit per
// accepted task, the run's branch, and git worktrees for tasks that run in
// parallel.
//
// Every look, diff and commit is one of git's own commands: git is the
// reference for what a commit is (ignore rules, attributes, line endings,
// paths it refuses, hooks, reflogs, locks), and a tool that commits a
// user's work must not make one git would not. It never commits ralph's
// own .ralph/ files and never removes a user's file from the index. It
// decides nothing about runs: the loop and the command line say what to
// do.
package vcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/projectfs"
)

// Git is a git working tree.
//
// Its looks go through an index of ralph's own, ralphIndex in the state
// directory of the project it was opened for, kept between calls and
// runs: the user's staging area is left alone, and git's stat cache makes
// a look cost what changed rather than the size of the tree. Only one
// process must use it at a time: ralph's run lock sees to that, and each
// git worktree has its own.
type Git struct {
	// Root is the top of the working tree.
	Root string
	// Env is the environment git runs with (nil: inherit).
	Env []string
	// Hooks, when set, is the sandbox ralph's commits run in: the hooks a
	// commit runs (pre-commit, commit-msg, ...) may run project code the
	// agent wrote (npx lint-staged, a Makefile target), so they run as
	// confined as the agent. Nil runs them as ralph.
	Hooks proc.Wrapper
	// NestedRepo, when set, is told what a look found of the
	// repositories nested in the working tree that the user should know
	// before running git here: one that was not there before (the
	// agent's), once; one whose git directory moved since the run's first
	// look at it (its .git file, or a commondir file in its git
	// directory, rewritten). Committed, a nested repository is a gitlink,
	// and git status, the user's too, runs git inside it, which obeys
	// the configuration it finds there (core.fsmonitor names a program).
	NestedRepo func(RepoNews)

	// bin is the git executable, an absolute path found before any agent
	// ran and never in the project (gitOutside); out is the lookup that
	// found it, whose PATH git runs with outside the sandbox.
	bin string
	out *proc.Outside
	// gitDir and commonDir are the git directory (per worktree) and the
	// one its worktrees share; realIndex is the user's index.
	gitDir, commonDir, realIndex string
	// index is ralph's own index (absolute), project the directory Open
	// was given (where a sandboxed commit starts: the sandbox's project).
	index, project string
	// commonFile is the git directory's commondir file as Open found it,
	// commonFileExists whether there was one (checkCommonDir).
	commonFile       string
	commonFileExists bool
	// gitDirInfo is the git directory's path as Open found it (lstat):
	// a link or another directory put in its place since is not obeyed
	// (checkCommonDir).
	gitDirInfo os.FileInfo
	// moved is why no more git command runs: the commondir file moved
	// (checkCommonDir).
	moved atomic.Pointer[error]

	// mu serialises the users of ralph's index and guards what follows.
	mu sync.Mutex
	// pending holds the files whose content changed in ralph's index
	// since the last Changes.
	pending map[string]bool
	// seen names the working tree's content as ralph last saw or made it
	// (a tree, or a commit whose tree it is), "" when only ralph's index
	// says and its tree is yet to be written.
	seen string
	// scanned: ralph's index has been brought up to date at least once
	// by this Git.
	scanned bool
	// legacyChecked: the files earlier versions of ralph left in the git
	// directory were looked for (legacy.go).
	legacyChecked bool
	// commits counts the commits made, for maintenanceEvery.
	commits atomic.Int64
	// nested: the working tree holds a repository of its own, so the
	// commit's git add runs in the sandbox (Hooks) and the look leaves
	// its gitlink out (look); nestedAsked asks the indexes once
	// (nestedRepos).
	nested      atomic.Bool
	nestedAsked sync.Once
	// told are the paths NestedRepo was told of as new; gitDirs the git
	// directory of each nested repository as the run's first look saw
	// it (gitDirOf). All three for the look, under mu.
	told    map[string]bool
	gitDirs map[string]gitDirSeen
	// dotGitFiles holds the .git file of each nested repository that has
	// one, as the run's first look found it (checkGitDirs).
	dotGitFiles map[string][]byte
}

// RepoNews is what a look found of a repository nested in the working
// tree (Git.NestedRepo).
type RepoNews struct {
	// Path is where it is, relative to the top of the working tree,
	// slash-separated.
	Path string
	// GitDir, when the repository was there before, is where its git
	// directory is now (a commondir file's directory after it), moved
	// since the run's first look; "" for a repository that appeared.
	GitDir string
	// PutBack: ralph put back what moved it (a submodule's .git file,
	// a commondir file in a submodule's git directory): it is where it
	// was again.
	PutBack bool
}

// maintenanceEvery is how often a commit of ralph's lets git run the
// automatic maintenance git commit starts after its work (git maintenance
// run --auto: a process of its own that costs more than the commit and
// nearly always finds nothing to do, its thresholds counting thousands of
// loose objects). The others say maintenance.auto=false for that commit
// alone; a user's own maintenance.auto=false holds for all.
const maintenanceEvery = 10

// LookDir is the directory of ralph's own index in the project's .ralph/.
const LookDir = "git"

// ralphIndex names ralph's own index in LookDir.
const ralphIndex = "index"

// Open finds the git working tree that contains dir, a project whose
// state directory is dir/.ralph.
func Open(ctx context.Context, dir string, env []string) (*Git, error) {
	programs, bin, err := gitOutside(ctx, dir, environ(env))
	if err != nil {
		return nil, err
	}
	g := &Git{Root: dir, Env: env, bin: bin, out: programs, project: absIn(dir, ".")}
	out, err := g.run(ctx, nil, "rev-parse", "--show-toplevel", "--git-dir", "--git-common-dir", "--git-path", "index")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		return nil, fmt.Errorf("git rev-parse --show-toplevel: unexpected output %q", out)
	}
	g.Root = lines[0]
	// --git-dir and --git-path answer relative to where git ran.
	g.gitDir, g.commonDir, g.realIndex = absIn(dir, lines[1]), absIn(dir, lines[2]), absIn(dir, lines[3])
	if g.gitDirInfo, err = os.Lstat(g.gitDir); err != nil {
		return nil, err
	}
	g.commonFile, g.commonFileExists = commonDirFile(g.gitDir)
	if g.commonFileExists {
		if err := checkCommonDirFile(g.gitDir, g.commonFile); err != nil {
			return nil, err
		}
	}
	g.index = filepath.Join(absIn(dir, "."), ralphDir, LookDir, ralphIndex)
	return g, nil
}

// absIn makes p, relative to dir, absolute.
func absIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if abs, err := filepath.Abs(filepath.Join(dir, p)); err == nil {
		return abs
	}
	return filepath.Join(dir, p)
}

// Snapshot returns the id of a tree object holding the working tree as it
// is now (tracked and untracked, ignored files and .ralph/ excepted): a
// look, then git write-tree of ralph's index.
func (g *Git) Snapshot(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.scan(ctx); err != nil {
		return "", err
	}
	return g.writeTree(ctx)
}

// Seen names the working tree's content as ralph last saw it (the last
// Changes or Snapshot) or made it (a commit of everything since, or a
// Dirty that found nothing to commit: then it is that commit), without
// looking again: for when nothing but ralph itself can have run since.
// Before any look it is Snapshot. It is a tree or a commit; git takes
// either wherever a tree is meant.
func (g *Git) Seen(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.scanned && g.seen == "" {
		if err := g.scan(ctx); err != nil {
			return "", err
		}
	}
	return g.writeTree(ctx)
}

// writeTree writes ralph's index as a tree unless seen already names the
// content; g.mu is held.
func (g *Git) writeTree(ctx context.Context) (string, error) {
	if g.seen != "" {
		return g.seen, nil
	}
	out, err := g.run(ctx, []string{"GIT_INDEX_FILE=" + g.index}, "write-tree")
	if err != nil {
		return "", err
	}
	g.seen = strings.TrimSpace(out)
	return g.seen, nil
}

// Changes implements Repo: one git process, git add -A -v into ralph's
// index, whose lines name what changed since the last look.
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

// scan brings ralph's index up to date with the working tree and adds
// what changed to g.pending; g.mu is held. An index git cannot use (left
// locked by a git that was killed, or written by another git version) is
// made again from the real one: it is ralph's alone.
func (g *Git) scan(ctx context.Context) error {
	if !g.legacyChecked {
		g.legacyChecked = true
		g.removeLegacy()
	}
	// A look writes objects too (the new content it hashes).
	if err := g.refuseLinks(); err != nil {
		return err
	}
	err := g.scanOnce(ctx)
	if err == nil || ctx.Err() != nil || errors.Is(err, errCommonDirMoved) {
		// Looking again would not find the index better.
		return err
	}
	_ = os.Remove(g.index + ".lock")
	if rerr := os.Remove(g.index); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return err
	}
	return g.scanOnce(ctx)
}

func (g *Git) scanOnce(ctx context.Context) error {
	fresh := false
	if _, err := os.Lstat(g.index); errors.Is(err, fs.ErrNotExist) {
		// Starting from a copy of the real index lets git reuse its stat
		// cache: only files that changed are read again.
		if err := copyIndex(g.realIndex, g.index); err != nil {
			return err
		}
		// What the copy holds is the real index's, not what the last
		// look saw (it may hold what the agent staged itself, ignored
		// files included), even when this look fails and the next one
		// finds nothing to change.
		g.seen = ""
		fresh = true
	}
	changed, err := g.look(ctx)
	if err != nil {
		return err
	}
	if len(changed) > 0 || fresh || !g.scanned {
		g.seen = ""
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
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
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

// Dirty implements Repo with one git status, which takes no lock on the
// real index (--no-optional-locks) and so never gets in the way of a git
// the user runs at the same time. When nothing is left to commit, the
// working tree is HEAD's commit, which Seen then names.
func (g *Git) Dirty(ctx context.Context) (bool, error) {
	if err := g.ensureIgnored(false); err != nil {
		return false, err
	}
	out, err := g.run(ctx, nil, "--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z",
		"--untracked-files=normal", "--ignore-submodules=dirty", "--no-renames")
	if err != nil {
		return false, err
	}
	head, dirty := parseStatusV2(out)
	if !dirty && objectID(head) != "" {
		g.mu.Lock()
		g.seen = head
		g.mu.Unlock()
	}
	return dirty, nil
}

// parseStatusV2 reads git status --porcelain=v2 --branch -z: the commit
// HEAD is at ("" when unborn), and whether it lists any change.
func parseStatusV2(out string) (head string, dirty bool) {
	for f := range strings.SplitSeq(out, "\x00") {
		switch {
		case strings.HasPrefix(f, "# branch.oid "):
			head = strings.TrimPrefix(f, "# branch.oid ")
		case strings.HasPrefix(f, "#"), f == "":
		default:
			dirty = true
		}
	}
	return head, dirty
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

// Commit stages every change except .ralph/ (git add -A) and commits it
// (git commit, hooks and all). It returns "" when there is nothing to
// commit. Two git processes: the commit's summary line names the new
// commit in full (core.abbrev=40; a SHA-256 repository asks git once more).
func (g *Git) Commit(ctx context.Context, message string) (string, error) {
	if err := g.refuseLinks(); err != nil {
		return "", err
	}
	if _, err := g.addAll(ctx, g.Hooks, nil); err != nil {
		return "", err
	}
	return g.commitStaged(ctx, message)
}

// commitStaged commits what the index holds (git commit, hooks and all);
// "" when it holds nothing to commit.
func (g *Git) commitStaged(ctx context.Context, message string) (string, error) {
	args := []string{"-c", "core.abbrev=40", "commit", "-m", message}
	if g.commits.Add(1)%maintenanceEvery != 1 {
		args = append([]string{"-c", "maintenance.auto=false"}, args...)
	}
	// The summary line is read in English.
	out, err := g.commit(ctx, []string{"LC_ALL=C", "LANGUAGE="}, args...)
	if err != nil {
		if !g.stagedChanges(ctx) {
			return "", nil // nothing to commit, or what changed was changed back
		}
		// The message is in the history already; what the hook said is
		// what the user needs.
		var ce *CmdError
		if errors.As(err, &ce) {
			ce.Argv = []string{"git", "commit"}
			if ce.Stderr == "" {
				ce.Stderr = strings.TrimSpace(out)
			}
		}
		return "", err
	}
	return g.committed(ctx, out)
}

// committed is the commit git's summary out names (HEAD when it names
// none), which ralph's later looks start from.
func (g *Git) committed(ctx context.Context, out string) (string, error) {
	hash := commitSummaryID(out)
	if hash == "" {
		var err error
		if hash, err = g.Head(ctx); err != nil {
			return "", err
		}
	}
	g.mu.Lock()
	g.seen = hash
	g.mu.Unlock()
	return hash, nil
}

// CommitFiles commits paths alone, as the working tree has them, with
// message (git add, then git commit --only): ralph's setup files, apart
// from any work. Other staged changes stay staged. It returns "" when the
// paths hold nothing to commit.
func (g *Git) CommitFiles(ctx context.Context, message string, paths []string) (string, error) {
	if err := g.refuseLinks(); err != nil {
		return "", err
	}
	if _, err := g.run(ctx, nil, append([]string{"add", "--"}, paths...)...); err != nil {
		return "", err
	}
	out, err := g.commit(ctx, []string{"LC_ALL=C", "LANGUAGE="},
		append([]string{"-c", "core.abbrev=40", "commit", "-m", message, "--only", "--"}, paths...)...)
	if err != nil {
		if !g.stagedChanges(ctx) {
			return "", nil
		}
		return "", err
	}
	return g.committed(ctx, out)
}

// commitSummaryID reads the commit's id from the first line git commit
// prints, "[BRANCH (root-commit) ID] SUBJECT" ("[detached HEAD ID] ..."),
// "" when it holds no full id. Hooks print on stderr, not there.
func commitSummaryID(out string) string {
	line, _, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(line, "[") {
		return ""
	}
	for f := range strings.FieldsSeq(line) {
		if id, ok := strings.CutSuffix(f, "]"); ok {
			return objectID(id)
		}
	}
	return ""
}

// stagedChanges reports whether the index differs from HEAD (or, when it
// cannot tell, that it does: the commit then says).
func (g *Git) stagedChanges(ctx context.Context) bool {
	_, err := g.run(ctx, nil, "diff", "--cached", "--quiet")
	return err != nil
}

// look brings ralph's index up to date with the working tree and returns
// the files whose content changed there, as ralph, outside any sandbox:
// what it reads is what the guard and the commit are checked by. git add
// asks git status inside a nested repository (a submodule .gitmodules
// names), and that git obeys the repository's own configuration and
// attributes, which the agent writes (a clean filter): each gitlink with
// a repository is left out of git add and recorded by git update-index,
// which reads its HEAD and runs nothing there.
func (g *Git) look(ctx context.Context) ([]string, error) {
	env := []string{"GIT_INDEX_FILE=" + g.index}
	if !g.nestedRepos(ctx) {
		changed, err := g.addAll(ctx, nil, env)
		g.tellNewRepos(changed)
		return changed, err
	}
	links, err := g.gitlinks(ctx, env)
	if err != nil {
		return nil, err
	}
	var paths, exclude []string
	for _, p := range slices.Sorted(maps.Keys(links)) {
		if g.holdsRepo(p) {
			paths = append(paths, p)
			exclude = append(exclude, ":(top,exclude,literal)"+p)
		}
	}
	changed, err := g.addAll(ctx, nil, env, exclude...)
	g.tellNewRepos(changed)
	g.checkGitDirs(paths)
	if err != nil || len(paths) == 0 {
		return changed, err
	}
	if _, err := g.output(ctx, env, nil, append([]string{"update-index", "--add", "--remove", "--"}, paths...)...); err != nil {
		return nil, err
	}
	now, err := g.gitlinks(ctx, env, paths...)
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		if now[p] != links[p] {
			changed = append(changed, p)
		}
	}
	return changed, nil
}

// holdsRepo reports whether the directory p of the working tree (relative
// to its top, slash-separated) holds a repository of its own: a .git
// there, as git looks for one.
func (g *Git) holdsRepo(p string) bool {
	_, err := os.Lstat(filepath.Join(g.Root, filepath.FromSlash(p), ".git"))
	return err == nil
}

// holdsRepoFile reports whether p is a directory (not a link) whose .git
// is not a directory: a .git file, or what was put in its place.
func (g *Git) holdsRepoFile(p string) bool {
	dir := filepath.Join(g.Root, filepath.FromSlash(p))
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	fi, err = os.Lstat(filepath.Join(dir, ".git"))
	return err == nil && !fi.IsDir()
}

// tellNewRepos tells NestedRepo the paths among changed, the look's,
// that hold a repository: the look leaves the ones it knew out of its
// git add, so these are new (g.mu is held).
func (g *Git) tellNewRepos(changed []string) {
	if g.NestedRepo == nil {
		return
	}
	for _, p := range changed {
		p = strings.TrimSuffix(p, "/") // git add -v writes a gitlink's path so
		if g.told[p] || !g.holdsRepo(p) {
			continue
		}
		if g.told == nil {
			g.told = map[string]bool{}
		}
		g.told[p] = true
		g.NestedRepo(RepoNews{Path: p})
	}
}

// checkGitDirs tells NestedRepo of each of the nested repositories at
// paths whose git directory is not where the run's first look found it
// (g.mu is held), and puts back what moved it when ralph can tell it was
// not git: a submodule's .git file rewritten (git writes it when the
// submodule is made, in .git/modules/, which the sandbox keeps
// read-only), a commondir file in a submodule's git directory under
// .git/modules/ (git never writes one there: checkCommonDir removes one
// in the repository's own too).
func (g *Git) checkGitDirs(paths []string) {
	if g.NestedRepo == nil {
		return
	}
	if g.gitDirs == nil {
		g.gitDirs, g.dotGitFiles = map[string]gitDirSeen{}, map[string][]byte{}
	}
	modules := filepath.Join(g.commonDir, "modules") + string(filepath.Separator)
	for _, p := range paths {
		dir := filepath.Join(g.Root, filepath.FromSlash(p))
		now := gitDirOf(dir)
		was, seen := g.gitDirs[p]
		if !seen {
			g.gitDirs[p] = now
			if b, ok := dotGitFile(dir); ok {
				g.dotGitFiles[p] = b
			}
			continue
		}
		if now == was {
			continue
		}
		news := RepoNews{Path: p, GitDir: now.String()}
		if orig, ok := g.dotGitFiles[p]; ok && now.dir != was.dir && g.holdsRepoFile(p) {
			// Beneath the working tree, and never through a link: the
			// agent may have made one of the directory, or of .git.
			if projectfs.New(g.Root).Replace(path.Join(p, ".git"), orig, 0o644) == nil {
				now = gitDirOf(dir)
			}
		}
		if now.dir == was.dir && was.common == "" && now.common != "" && strings.HasPrefix(now.dir, modules) {
			if err := os.Remove(filepath.Join(now.dir, "commondir")); err == nil || errors.Is(err, fs.ErrNotExist) {
				now = gitDirOf(dir)
			}
		}
		news.PutBack = now == was
		g.gitDirs[p] = now
		g.NestedRepo(news)
	}
}

// dotGitFile is what the .git file of the repository in dir holds; false
// when .git is not a regular file.
func dotGitFile(dir string) ([]byte, bool) {
	p := filepath.Join(dir, ".git")
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	b, err := readGitFile(p)
	return b, err == nil
}

// gitDirSeen is where git finds a nested repository's git directory
// (gitDirOf).
type gitDirSeen struct {
	// dir is the git directory, or why it cannot be told, in brackets.
	dir string
	// common is the directory a commondir file there names, "" for none.
	common string
}

func (s gitDirSeen) String() string {
	if s.common == "" {
		return s.dir
	}
	return s.dir + " (commondir) " + s.common
}

// gitDirOf is where git finds the git directory of the repository in
// dir, as it reads dir/.git: a directory; a file whose "gitdir: PATH"
// line names it (relative to dir); a symbolic link, followed; and the
// directory a commondir file there moves the configuration and hooks
// to. What cannot be read is said as such: it differs from what could.
func gitDirOf(dir string) gitDirSeen {
	dotGit := filepath.Join(dir, ".git")
	gitDir := dotGit
	fi, err := os.Lstat(dotGit)
	switch {
	case err != nil:
		return gitDirSeen{dir: "(no .git)"}
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(dotGit)
		if err != nil {
			return gitDirSeen{dir: "(unreadable link)"}
		}
		gitDir = absIn(dir, target)
	case fi.Mode().IsRegular():
		b, err := readGitFile(dotGit)
		if err != nil {
			return gitDirSeen{dir: "(unreadable .git file)"}
		}
		var ok bool
		if gitDir, ok = gitFileDir(dir, b); !ok {
			return gitDirSeen{dir: "(not a gitdir file)"}
		}
	}
	seen := gitDirSeen{dir: filepath.Clean(gitDir)}
	var ok bool
	if seen.common, ok = commonDirIn(gitDir); !ok {
		if _, err := os.Lstat(filepath.Join(gitDir, "commondir")); err == nil {
			seen.common = "(unreadable commondir)" // a fifo, say: there all the same
		}
	}
	return seen
}

// gitlinks lists the gitlinks of the index env names, by path, with the
// commit each records; paths, when given, limit the listing.
func (g *Git) gitlinks(ctx context.Context, env []string, paths ...string) (map[string]string, error) {
	args := []string{"ls-files", "--stage", "-z", "--"}
	for _, p := range paths {
		args = append(args, ":(top,literal)"+p)
	}
	out, err := g.output(ctx, env, nil, args...)
	if err != nil {
		return nil, err
	}
	links := map[string]string{}
	for rec := range strings.SplitSeq(string(out), "\x00") {
		// "MODE OID STAGE\tPATH"
		meta, p, ok := strings.Cut(rec, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 && f[0] == "160000" {
			links[p] = f[1]
		}
	}
	return links, nil
}

// addAll stages every change into the index env names (the real one when
// env is nil), git add -A, but for the paths exclude leaves out, and
// returns the files whose content it changed there. ralph's own files are
// not among them: .ralph/ ignores them (ensureIgnored), while a file git
// tracks there is the user's. Once the tree holds a repository of its
// own, git add runs in sandbox (nestedRepos).
func (g *Git) addAll(ctx context.Context, sandbox proc.Wrapper, env []string, exclude ...string) ([]string, error) {
	if err := g.ensureIgnored(true); err != nil {
		return nil, err
	}
	if sandbox != nil && !g.nestedRepos(ctx) {
		sandbox = nil
	}
	// git add -v's lines are translated: read them in English.
	out, err := g.exec(ctx, gitCall{sandbox: sandbox, env: append(env, "LC_ALL=C", "LANGUAGE=")},
		append([]string{"add", "-A", "-v", "--", ":(top)"}, exclude...)...)
	if err != nil {
		return nil, refused(err)
	}
	changed := parseAddVerbose(string(out))
	if !g.nested.Load() && slices.ContainsFunc(changed, g.holdsRepo) {
		g.nested.Store(true) // a repository the agent made: the next add asks git status in it
	}
	return changed, nil
}

// nestedRepos reports whether the working tree holds a repository of its
// own, as far as ralph knows: an index git add uses has a gitlink. Both
// are asked, once, by the first add, the others waiting for the answer:
// ralph's own index outlives a run, and may hold a repository an earlier
// run's agent made and nobody committed. git add -v names the ones added
// later.
func (g *Git) nestedRepos(ctx context.Context) bool {
	g.nestedAsked.Do(func() {
		for _, env := range [][]string{nil, {"GIT_INDEX_FILE=" + g.index}} {
			out, err := g.run(ctx, env, "ls-files", "--stage", "-z")
			if err != nil || hasGitlink(out) {
				g.nested.Store(true) // an error cannot tell: the sandbox is the safe side
				return
			}
		}
	})
	return g.nested.Load()
}

// hasGitlink reports whether git ls-files --stage -z lists a gitlink.
func hasGitlink(out string) bool {
	for rec := range strings.SplitSeq(out, "\x00") {
		if strings.HasPrefix(rec, "160000 ") {
			return true
		}
	}
	return false
}

// parseAddVerbose reads git add -v: "add 'PATH'" and "remove 'PATH'", one
// per file whose content changed in the index.
func parseAddVerbose(out string) (changed []string) {
	for line := range strings.SplitSeq(out, "\n") {
		rest, ok := strings.CutPrefix(line, "add '")
		if !ok {
			rest, ok = strings.CutPrefix(line, "remove '")
		}
		if p, ok2 := strings.CutSuffix(rest, "'"); ok && ok2 && p != "" {
			changed = append(changed, p)
		}
	}
	return changed
}

// ralphIgnore is what .ralph/.gitignore holds: every file of ralph's own
// is ignored, so that no git command, ralph's or the user's, adds one,
// whatever the project's .gitignore says (the deepest .gitignore wins).
const ralphIgnore = "# ralph's own files: never committed\n*\n"

// ensureIgnored makes .ralph/'s .gitignore when missing, and .ralph/
// itself (where ralph's index lives) when create is true. An existing
// .gitignore there is left as it is: it may be a file the user tracks.
func (g *Git) ensureIgnored(create bool) error {
	dir := filepath.Join(g.project, ralphDir)
	if !create {
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(ralphIgnore)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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

// HasBranch says whether branch name exists.
func (g *Git) HasBranch(ctx context.Context, name string) bool { return g.hasBranch(ctx, name) }

func (g *Git) hasBranch(ctx context.Context, name string) bool {
	_, err := g.run(ctx, nil, "rev-parse", "--verify", "-q", "refs/heads/"+name)
	return err == nil
}

// Status lists changed and untracked files (each untracked file, not just
// its directory), as `git status --porcelain` names them.
func (g *Git) Status(ctx context.Context) ([]Change, error) {
	out, err := g.run(ctx, nil, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=dirty")
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
	programs, bin, err := gitOutside(ctx, dir, environ(env))
	if err != nil {
		return nil, err
	}
	g := &Git{Root: dir, Env: env, bin: bin, out: programs}
	if _, err := g.run(ctx, nil, "-c", "init.defaultBranch=main", "init", "-q"); err != nil {
		return nil, err
	}
	return g, nil
}
