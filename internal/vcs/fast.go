package vcs

import (
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// This file is the look and the commit ralph makes in process, without a
// git process: each costs 1.5 to 2.5 ms, several times the rest of an
// iteration's bookkeeping. They are for a plain repository only, which is
// what most are: the files in the working tree are what git stores (no
// attributes, no line-ending conversion), an index of ordinary entries, no
// hook that a commit runs, no signing. Anything else, and any error, falls
// back to the git commands, which stay the reference: the tests compare
// the two.

// gitConfig is the configuration git reads in the working tree, as
// `git config --list` prints it, and the files it came from, whose stat
// data tells when to read it again.
type gitConfig struct {
	values map[string]string // keys lower-cased as git prints them; the last value wins
	stamps []fileStamp
	// author and committer are "Name <email>" as git var says, read at
	// the first commit in process ("" until then).
	author, committer string
}

// fileStamp is what a configuration file looked like when read.
type fileStamp struct {
	path  string
	size  int64
	mtime time.Time
	ino   uint64
	found bool
}

func stampOf(path string) fileStamp {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{path: path}
	}
	s := fileStamp{path: path, size: info.Size(), mtime: info.ModTime(), found: true}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	return s
}

// fresh reports whether no configuration file changed since the read.
func (c *gitConfig) fresh() bool {
	for _, s := range c.stamps {
		if stampOf(s.path) != s {
			return false
		}
	}
	return true
}

// bool reads a boolean as git does; def when unset or unreadable.
func (c *gitConfig) bool(key string, def bool) bool {
	v, ok := c.values[key]
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "", "true", "yes", "on", "1":
		return true
	case "false", "no", "off", "0":
		return false
	}
	return def
}

// config returns the repository's configuration, read again when a file
// it came from changed; g.mu is held.
func (g *Git) config(ctx context.Context) (*gitConfig, error) {
	if g.conf != nil && g.conf.fresh() {
		return g.conf, nil
	}
	out, err := g.run(ctx, nil, "config", "-z", "--list", "--show-origin")
	if err != nil && exitCode(err) != 1 { // 1: no configuration at all
		return nil, err
	}
	c := &gitConfig{values: map[string]string{}}
	env := environ(g.Env)
	paths := []string{filepath.Join(g.commonDir, "config"), filepath.Join(g.gitDir, "config.worktree"),
		"/etc/gitconfig"}
	if home := lookupEnv(env, "HOME"); home != "" {
		paths = append(paths, filepath.Join(home, ".gitconfig"))
	}
	if dir := userGitDir(env); dir != "" {
		paths = append(paths, filepath.Join(dir, "config"))
	}
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"} {
		if p := lookupEnv(env, k); p != "" {
			paths = append(paths, absIn(g.Root, p))
		}
	}
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		origin, kv := fields[i], fields[i+1]
		if p, ok := strings.CutPrefix(origin, "file:"); ok {
			paths = append(paths, absIn(g.Root, p))
		}
		k, v, _ := strings.Cut(kv, "\n")
		c.values[k] = v
	}
	for _, p := range paths {
		c.stamps = append(c.stamps, stampOf(p))
	}
	g.conf = c
	return c, nil
}

// plain reports whether the repository lets the look be made in process,
// and returns the ignore patterns that apply everywhere (the global
// excludes file, then info/exclude); g.mu is held.
func (g *Git) plain(ctx context.Context) ([]gitignore.Pattern, bool) {
	if g.gitDir == "" || g.objectsMoved() {
		return nil, false
	}
	env := environ(g.Env)
	for _, k := range []string{"GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES"} {
		if lookupEnv(env, k) != "" {
			return nil, false
		}
	}
	c, err := g.config(ctx)
	if err != nil {
		return nil, false
	}
	for key, want := range map[string]bool{
		"core.autocrlf": false, "core.filemode": true, "core.symlinks": true, "core.ignorecase": false,
		"core.precomposeunicode": false, "core.sparsecheckout": false, "index.sparse": false,
		"core.splitindex": false,
	} {
		if c.bool(key, want) != want {
			return nil, false
		}
	}
	for _, key := range []string{"core.eol", "core.attributesfile", "core.worktree"} {
		if _, set := c.values[key]; set {
			return nil, false
		}
	}
	if f := c.values["extensions.objectformat"]; f != "" && f != "sha1" {
		return nil, false
	}
	// Attributes anywhere may change what git stores.
	for _, f := range g.attributeFiles() {
		if _, err := os.Lstat(f); err == nil {
			return nil, false
		}
	}
	home := lookupEnv(env, "HOME")
	excludes := c.values["core.excludesfile"]
	switch {
	case strings.HasPrefix(excludes, "~/") && home != "":
		excludes = filepath.Join(home, excludes[2:])
	case excludes == "" && userGitDir(env) != "":
		excludes = filepath.Join(userGitDir(env), "ignore")
	case excludes != "" && !filepath.IsAbs(excludes):
		excludes = filepath.Join(g.Root, excludes)
	}
	var base []gitignore.Pattern
	for _, f := range []string{excludes, filepath.Join(g.commonDir, "info", "exclude")} {
		if f == "" {
			continue
		}
		ps, err := readIgnoreFile(f, nil)
		if err != nil {
			return nil, false
		}
		base = append(base, ps...)
	}
	return base, true
}

// objects is the repository's object store with the Git's compressor;
// g.mu is held.
func (g *Git) objects() *objectStore {
	if g.zw == nil {
		g.zw, _ = zlib.NewWriterLevel(io.Discard, zlib.BestSpeed) // a valid level: no error
	}
	return &objectStore{dir: filepath.Join(g.commonDir, "objects"), zw: g.zw}
}

// lookInProcess is scanOnce without git: the private index brought up to
// date with the working tree, and its tree written. ok is false when git
// must look instead (nothing has been changed then); g.mu is held.
func (g *Git) lookInProcess(ctx context.Context) (changed []string, ok bool, err error) {
	base, plain := g.plain(ctx)
	if !plain {
		return nil, false, nil
	}
	idx := g.idx
	if idx == nil {
		if idx, err = readIndex(g.private); err != nil {
			return nil, false, nil //nolint:nilerr // git reads it, or says what is wrong
		}
	}
	store := g.objects()
	s, err := scanWorkTree(g.Root, idx, store, base)
	if err != nil {
		if errors.Is(err, errUnplain) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if len(s.changed) == 0 && !s.refreshed && g.tree != "" {
		g.idx = idx
		return nil, true, nil
	}
	root, err := store.writeTrees(s.entries)
	if err == nil {
		err = store.flush()
	}
	if err != nil {
		return nil, false, err
	}
	g.tree = fmt.Sprintf("%x", root.id)
	g.writePrivate(&index{version: idx.version, entries: s.entries}, root)
	return s.changed, true, nil
}

// writePrivate writes ralph's index to disk off the loop's path, and
// keeps it in memory for the next look; g.mu is held. Only ralph reads
// that file, and everything that does waits for the write first
// (settlePrivate), as does Close. A run killed before the write is done
// leaves the previous look's index, whose next look finds the changes
// again.
func (g *Git) writePrivate(idx *index, root *treeNode) {
	done := make(chan struct{})
	g.idx, g.privDone = idx, done
	path := g.private
	write := func() {
		defer close(done)
		lock, err := lockFile(path, true)
		if err != nil {
			idx.broken = true
			return
		}
		// The racy check of the next look compares with the time the
		// file was written, which the lock file's creation stamps.
		idx.mtime = lockTime(lock)
		if err := writeIndexFile(path, encodeIndex(idx.version, idx.entries, root, idx.mtime), lock); err != nil {
			idx.broken = true
		}
	}
	if g.syncPrivate {
		write()
		g.settlePrivate()
		return
	}
	go write()
}

// settlePrivate waits for the private index's write under way, if any;
// g.mu is held. An index that could not be written is read again from
// disk (the older one there makes the next look find more, not less).
func (g *Git) settlePrivate() {
	if g.privDone == nil {
		return
	}
	<-g.privDone
	g.privDone = nil
	if g.idx != nil && g.idx.broken {
		g.idx = nil
	}
}

// treeInProcess is write-tree without git: the private index's tree,
// written as loose objects. ok is false when git must write it; g.mu is
// held.
func (g *Git) treeInProcess(ctx context.Context) (string, bool) {
	if _, plain := g.plain(ctx); !plain {
		return "", false
	}
	g.settlePrivate()
	idx, err := readIndex(g.private)
	if err != nil {
		return "", false
	}
	store := g.objects()
	root, err := store.writeTrees(idx.entries)
	if err == nil {
		err = store.flush()
	}
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%x", root.id), true
}
