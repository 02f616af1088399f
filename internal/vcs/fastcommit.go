package vcs

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// commitInProcess is Commit without git for a plain repository: the real
// index brought up to date with the working tree (as git add -A), its
// tree and a commit object written, the branch moved (with its reflog and
// HEAD's) and the index replaced, in git's order and under git's locks.
// ok is false when git must commit (nothing has been written then); hash
// is "" when there was nothing to commit.
func (g *Git) commitInProcess(ctx context.Context, message string) (hash string, ok bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	base, plain := g.plain(ctx)
	if !plain || g.index == "" {
		return "", false, nil
	}
	c := g.conf
	if c.bool("commit.gpgsign", false) || c.values["commit.cleanup"] != "" ||
		!strings.EqualFold(cmp.Or(c.values["i18n.commitencoding"], "utf-8"), "utf-8") ||
		cmp.Or(c.values["extensions.refstorage"], "files") != "files" {
		return "", false, nil
	}
	env := environ(g.Env)
	for _, k := range []string{"GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE", "GIT_REFLOG_ACTION"} {
		if lookupEnv(env, k) != "" {
			return "", false, nil
		}
	}
	if g.hooksPresent(c) {
		return "", false, nil
	}
	msg := cleanMessage(message)
	if msg == "" {
		return "", false, nil // git says why it refuses an empty message
	}
	last := g.last
	g.last = nil
	if last != nil && !last.fresh() {
		last = nil
	}
	var branch, parent, parentTree string
	if last != nil {
		branch, parent, parentTree = last.branch, last.commit, last.tree
	} else {
		// A branch checked out: a detached HEAD is git's to commit on.
		if branch, parent = g.readHead(); !strings.HasPrefix(branch, "refs/heads/") || parent == "" {
			return "", false, nil
		}
		if parentTree = looseCommitTree(filepath.Join(g.commonDir, "objects"), parent); parentTree == "" {
			return "", false, nil
		}
	}
	if c.author == "" {
		if !g.readIdents(ctx, c) {
			return "", false, nil
		}
	}

	// The locks of the index and of the branch are taken while the tree
	// is read and its objects written: creating a file costs as much as
	// the rest. Those not used are let go on the way out.
	// The spares are the worktree's own (beside its index, in its git
	// directory): the worktrees of --parallel commit side by side, on
	// branches of the directory they share.
	idxLock := lockAhead(g.index, filepath.Join(filepath.Dir(g.index), "ralph-index.spare"))
	refLock := lockAhead(filepath.Join(g.commonDir, filepath.FromSlash(branch)), filepath.Join(g.gitDir, "ralph-ref.spare"))
	defer idxLock.release()
	defer refLock.release()
	var idx *index
	if last != nil {
		idx = last.index
	} else if idx, err = readIndex(g.index); err != nil {
		return "", false, nil //nolint:nilerr // git reads it, or says what is wrong
	}
	read := stampOf(g.index)
	store := g.objects()
	s, err := scanWorkTree(g.Root, idx, store, base)
	if errors.Is(err, errUnplain) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	root, err := store.writeTrees(s.entries)
	if err != nil {
		return "", false, err
	}
	tree := fmt.Sprintf("%x", root.id)
	// The index is written before the branch moves, as git add does
	// before git commit: killed in between, the work is staged and the
	// next commit takes it. The lock is held only to write it, after a
	// check that nobody wrote the index since it was read (a git the user
	// ran): a kill -9 leaves no lock behind but in that instant.
	var written *index
	writeIndex := func() (bool, error) {
		lock, err := idxLock.take()
		if err != nil {
			return false, nil //nolint:nilerr // someone's git holds the index: git says so
		}
		if stampOf(g.index) != read {
			_ = lock.Close()
			_ = os.Remove(lock.Name())
			return false, nil
		}
		// Stamped a little before now, as the file system's clock may
		// lag (keepPrivate): entries changed since are smudged.
		written = &index{version: idx.version, entries: s.entries, mtime: time.Now().Add(-racyMargin)}
		data := encodeIndex(idx.version, s.entries, root, written.mtime)
		return true, idxLock.replace(g.index, data, nil)
	}
	if tree == parentTree {
		// Nothing to commit; what git add -A changed in the index stays.
		if err := store.flush(); err != nil {
			return "", false, err
		}
		if len(s.changed) > 0 || s.refreshed {
			wrote, err := writeIndex()
			return "", wrote, err
		}
		return "", true, nil
	}

	now := time.Now()
	stamp := strconv.FormatInt(now.Unix(), 10) + " " + now.Format("-0700")
	var body bytes.Buffer
	fmt.Fprintf(&body, "tree %s\nparent %s\nauthor %s %s\ncommitter %s %s\n\n%s",
		tree, parent, c.author, stamp, c.committer, stamp, msg)
	id, err := store.write("commit", body.Bytes())
	if err == nil {
		err = store.flush() // the blobs, the trees and the commit, side by side
	}
	if err != nil {
		return "", false, err
	}
	if wrote, err := writeIndex(); !wrote || err != nil {
		return "", false, err
	}
	hash = fmt.Sprintf("%x", id)
	subject, _, _ := strings.Cut(msg, "\n")
	if _, err := refLock.take(); err != nil {
		return "", false, nil //nolint:nilerr // the branch is locked: git commits what is staged now, or says why not
	}
	if err := g.moveBranch(refLock, branch, parent, hash, c.committer+" "+stamp, "commit: "+subject, c); err != nil {
		if errors.Is(err, errUnplain) {
			return "", false, nil // git commits what is staged now
		}
		return "", false, err
	}
	g.last = newLastCommit(g, branch, hash, tree, written)
	return hash, true, nil
}

// lastCommit is what a commit in process leaves: the branch, its commit
// and tree, and the index as written, with the stat data of the files
// that say so (HEAD, the branch, the index). The next commit starts from
// it when none of them changed since: nobody else committed or staged.
type lastCommit struct {
	branch, commit, tree string
	index                *index
	stamps               []fileStamp
}

func newLastCommit(g *Git, branch, commit, tree string, idx *index) *lastCommit {
	if idx == nil {
		return nil
	}
	return &lastCommit{branch: branch, commit: commit, tree: tree, index: idx, stamps: []fileStamp{
		stampOf(filepath.Join(g.gitDir, "HEAD")),
		stampOf(filepath.Join(g.commonDir, filepath.FromSlash(branch))),
		stampOf(g.index),
	}}
}

// fresh reports whether the files are as the commit left them.
func (l *lastCommit) fresh() bool {
	for _, s := range l.stamps {
		if !s.found || stampOf(s.path) != s {
			return false
		}
	}
	return true
}

// hooksPresent reports whether a hook a commit runs is installed.
func (g *Git) hooksPresent(c *gitConfig) bool {
	dir := filepath.Join(g.commonDir, "hooks")
	if p := c.values["core.hookspath"]; p != "" {
		dir = absIn(g.Root, p)
	}
	// The hooks git commit runs, or that watch what it writes.
	for _, h := range []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit",
		"reference-transaction", "post-index-change"} {
		if info, err := os.Stat(filepath.Join(dir, h)); err == nil && info.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// readIdents asks git who commits (its rules for user.name, user.email,
// the environment and the host are its own), author and committer side
// by side; false when it cannot say.
func (g *Git) readIdents(ctx context.Context, c *gitConfig) bool {
	var author, committer string
	var wg sync.WaitGroup
	wg.Go(func() { author = g.ident(ctx, "GIT_AUTHOR_IDENT") })
	committer = g.ident(ctx, "GIT_COMMITTER_IDENT")
	wg.Wait()
	if author == "" || committer == "" {
		return false
	}
	c.author, c.committer = author, committer
	return true
}

// ident is git var's "Name <email>" for name, without its time; "" when
// git cannot say.
func (g *Git) ident(ctx context.Context, name string) string {
	out, err := g.run(ctx, nil, "var", name)
	if err != nil {
		return ""
	}
	// "Name <email> 1700000000 +0000": the time is the commit's own.
	f := strings.TrimSpace(out)
	for range 2 {
		if i := strings.LastIndexByte(f, ' '); i > 0 {
			f = f[:i]
		}
	}
	if !strings.HasSuffix(f, ">") {
		return ""
	}
	return f
}

// moveBranch points ref at commit next if it is still at old, through
// its lock (ref.lock, taken) as git does, and appends to the branch's and
// HEAD's reflogs.
func (g *Git) moveBranch(lock *aheadLock, ref, old, next, who, msg string, c *gitConfig) error {
	path := filepath.Join(g.commonDir, filepath.FromSlash(ref))
	if err := lock.replace(path, []byte(next+"\n"), func() error {
		if g.readRef(ref) != old {
			return fmt.Errorf("%w: %s moved", errUnplain, ref)
		}
		return nil
	}); err != nil {
		return err
	}
	if !c.bool("core.logallrefupdates", true) {
		return nil
	}
	// A failed reflog write does not undo the commit, as with git.
	line := old + " " + next + " " + who + "\t" + strings.Join(strings.Fields(msg), " ") + "\n"
	for _, p := range []string{filepath.Join(g.commonDir, "logs", filepath.FromSlash(ref)), filepath.Join(g.gitDir, "logs", "HEAD")} {
		_ = appendLine(p, line)
	}
	return nil
}

// aheadLock is a git lock file (path.lock) being taken in the
// background.
//
// Replacing a file by rename frees the file it replaces, and taking a
// lock by creating path.lock makes one; a commit does both for the index
// and for the branch. On ext4 without a journal every file made steps
// over each inode freed in the last minutes, so that cost grows with the
// run. A lock is taken instead by linking a spare file to its name (as
// exclusive as creating it: the link fails when the name exists), and
// the file the lock replaces becomes the next spare: no file made, none
// freed.
type aheadLock struct {
	done  chan struct{}
	f     *os.File
	err   error
	taken bool
	// spare is where the spare lives; spared says the lock is it, linked
	// to the lock's name.
	spare  string
	spared bool
}

// lockAhead starts taking path.lock (creating its directory if needed),
// through spare when that is a file no other name holds.
func lockAhead(path, spare string) *aheadLock {
	l := &aheadLock{done: make(chan struct{}), spare: spare}
	go func() {
		defer close(l.done)
		if l.err = os.MkdirAll(filepath.Dir(path), 0o755); l.err != nil {
			return
		}
		if l.f, l.spared, l.err = linkLock(path, spare); l.spared || l.err != nil {
			return
		}
		l.f, l.err = lockFile(path, false)
	}()
	return l
}

// linkLock takes path.lock by linking spare to it. spared is false, with
// no error, when the spare cannot serve: the lock is to be created.
func linkLock(path, spare string) (f *os.File, spared bool, err error) {
	lock := path + ".lock"
	info, err := os.Lstat(spare)
	if err != nil {
		return nil, false, nil
	}
	if held, err := os.Lstat(lock); err == nil && os.SameFile(info, held) {
		// The lock is a second name of the spare: ralph's own, left by a
		// run killed while it held it (no one else takes a lock this
		// way, and this Git's commits take turns). It is let go.
		_ = os.Remove(lock)
		if info, err = os.Lstat(spare); err != nil {
			return nil, false, nil
		}
	}
	if !info.Mode().IsRegular() || links(info) != 1 {
		// Another name holds it too (a run killed in the middle of a
		// replacement): it is not the spare's to write.
		_ = os.Remove(spare)
		return nil, false, nil
	}
	if err := os.Link(spare, lock); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, false, fmt.Errorf("%w: %s exists", errUnplain, lock)
		}
		return nil, false, nil
	}
	if f, err = os.OpenFile(lock, os.O_WRONLY, 0); err != nil {
		_ = os.Remove(lock)
		return nil, false, nil
	}
	return f, true, nil
}

// links is the number of names info's file has (0 when unknown).
func links(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink) //nolint:unconvert // its type differs between systems
	}
	return 0
}

// take waits for the lock and hands it over: the caller replaces path
// through it (replace) or removes it.
func (l *aheadLock) take() (*os.File, error) {
	<-l.done
	l.taken = l.err == nil
	return l.f, l.err
}

// replace puts data in path's place through the lock taken, and releases
// the lock: git's commit of a lock file. check, when set, runs once data
// is written; its error abandons the lock. The file replaced is kept as
// the next spare.
func (l *aheadLock) replace(path string, data []byte, check func() error) error {
	f := l.f
	_, err := f.WriteAt(data, 0) // over what a spare held
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && check != nil {
		err = check()
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	// The file replaced keeps a second name, then the lock is renamed
	// over it as git does (the lock gone in that same step), then that
	// name becomes the spare's. A kill anywhere leaves no lock but in
	// git's own window, and at worst a spare the next lock will not use.
	keep := l.spare + ".next"
	_ = os.Remove(keep) // one a killed run left
	kept := os.Link(path, keep) == nil
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		if kept {
			_ = os.Remove(keep)
		}
		return err
	}
	switch {
	case kept:
		if os.Rename(keep, l.spare) != nil {
			_ = os.Remove(keep)
			_ = os.Remove(l.spare) // the new file must not keep the spare's name
		}
	case l.spared:
		_ = os.Remove(l.spare) // the new file must not keep the spare's name
	}
	return nil
}

// release removes the lock unless it was taken.
func (l *aheadLock) release() {
	<-l.done
	if l.f != nil && !l.taken {
		_ = l.f.Close()
		_ = os.Remove(l.f.Name())
	}
}

// appendLine appends one line to a file, creating it and its directory.
func appendLine(path, line string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// cleanMessage is git commit -m's cleanup (whitespace mode): trailing
// whitespace off every line, runs of empty lines made one, none at the
// start or end, and a final newline.
func cleanMessage(m string) string {
	var out []string
	blank := false
	for line := range strings.SplitSeq(m, "\n") {
		line = strings.TrimRight(line, " \t\r\v\f")
		if line == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}
