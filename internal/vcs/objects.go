package vcs

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// SeenCommitted reports whether the tree the last look saw (Changes or
// Snapshot, once its tree was written) is the tree HEAD's commit holds:
// the working tree had nothing left to commit when it was looked at. ok is
// false when that cannot be told without a git process (no tree written
// since the last look, HEAD not a plain loose ref, its commit packed), and
// then Dirty answers. It is for a caller that knows nothing has written to
// the working tree since that look; it starts no process.
func (g *Git) SeenCommitted(_ context.Context) (committed, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tree == "" || !g.scanned || g.objectsMoved() {
		return false, false
	}
	head := g.headRef()
	if head == "" {
		return false, false
	}
	tree := looseCommitTree(filepath.Join(g.commonDir, "objects"), head)
	if tree == "" {
		return false, false
	}
	return tree == g.tree, true
}

// objectsMoved reports whether git's objects are anywhere but
// commonDir/objects, as the environment can say.
func (g *Git) objectsMoved() bool {
	if g.commonDir == "" {
		return true
	}
	for _, kv := range environ(g.Env) {
		if strings.HasPrefix(kv, "GIT_OBJECT_DIRECTORY=") || strings.HasPrefix(kv, "GIT_DIR=") ||
			strings.HasPrefix(kv, "GIT_COMMON_DIR=") {
			return true
		}
	}
	return false
}

// looseCommitTree returns the tree id the commit id names, read from its
// loose object in objects, or "" when the commit is not a loose object
// there (packed, or written elsewhere) or does not read as a commit. A
// commit git has just made is a loose object; git's own answer is the
// fallback for everything else. The object's header and first line are
// all it inflates: "commit SIZE\x00tree ID\n".
func looseCommitTree(objects, id string) string {
	if objectID(id) == "" {
		return ""
	}
	f, err := os.Open(filepath.Join(objects, id[:2], id[2:]))
	if err != nil {
		return ""
	}
	defer f.Close()
	z, err := zlib.NewReader(bufio.NewReader(f))
	if err != nil {
		return ""
	}
	defer z.Close()
	// "commit " + up to 20 digits + NUL + "tree " + 64 hex + "\n".
	var head [7 + 20 + 1 + 5 + 64 + 1]byte
	n, err := io.ReadFull(z, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return ""
	}
	b := head[:n]
	size, rest, ok := bytes.Cut(b, []byte{0})
	if !ok || !bytes.HasPrefix(size, []byte("commit ")) {
		return ""
	}
	line, _, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return ""
	}
	tree, ok := bytes.CutPrefix(line, []byte("tree "))
	if !ok {
		return ""
	}
	return objectID(string(tree))
}
