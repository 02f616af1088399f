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
	// Every file is read or matched by its stat data after this instant,
	// so a change after it has a later time stamp, or one within the
	// file system clock's last tick: the next look reads the files
	// modified from a little before it again (racy).
	racy := time.Now().Add(-racyMargin)
	s, err := scanWorkTree(g.Root, idx, store, base)
	if err != nil {
		if errors.Is(err, errUnplain) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if len(s.changed) == 0 && !s.refreshed && g.tree != "" {
		seen := *idx // every entry matched the files as of racy
		seen.mtime = racy
		g.idx = &seen
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
	g.keepPrivate(&index{version: idx.version, entries: s.entries, mtime: racy}, root)
	return s.changed, true, nil
}

// racyMargin is how far before a look its index's time stamp is put: a
// file system's clock runs up to a tick (at most 10 ms) behind the
// system's, so a change made right after the look may be stamped that
// much earlier.
const racyMargin = 20 * time.Millisecond

// keepPrivate keeps ralph's index in memory for the next look, and
// leaves the file for when something reads it; g.mu is held. Writing it
// at every look would replace a file per iteration (a new one made, the
// old one freed) for nobody: only ralph reads it, and what does writes it
// first (settlePrivate), as Close does. A run killed before leaves an
// older index, whose next look finds the changes since it again.
func (g *Git) keepPrivate(idx *index, root *treeNode) {
	g.idx, g.privRoot = idx, root
	if g.syncPrivate {
		g.settlePrivate()
	}
}

// settlePrivate writes the index a look kept in memory to its file, if
// not done yet; g.mu is held. Entries changed from the index's time stamp
// on are smudged, so whoever reads the file reads those files again. An
// index that could not be written is forgotten: the older one on disk
// makes the next look find more, not less.
func (g *Git) settlePrivate() {
	if g.privRoot == nil {
		return
	}
	idx, root := g.idx, g.privRoot
	g.privRoot = nil
	if writeIndexFile(g.private, encodeIndex(idx.version, idx.entries, root, idx.mtime)) != nil {
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
