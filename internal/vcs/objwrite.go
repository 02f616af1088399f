package vcs

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1" //nolint:gosec // git's object ids are SHA-1
	"encoding/hex"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// objectStore writes loose objects into a repository's objects directory
// as git does: zlib at core.looseCompression's default (fastest), a
// temporary file in the fan-out directory renamed into place, read-only,
// and nothing written for an object that is there already.
//
// Objects are compressed as they come and written by flush, all at once:
// each is a file created in a directory of its own, which costs far more
// than the rest (a journal transaction), and those overlap when made side
// by side. Nothing may refer to an object before flush returned.
type objectStore struct {
	dir string // .git/objects
	// zw is the compressor, reused: making one costs more than writing a
	// small object (its tables are hundreds of kilobytes).
	zw *zlib.Writer
	// pending are the objects compressed but not written yet, by id.
	pending map[[sha1.Size]byte][]byte
}

// hashObject is the id of an object of type kind with content data.
func hashObject(kind string, data []byte) [sha1.Size]byte {
	h := sha1.New() //nolint:gosec // git's object ids
	h.Write([]byte(kind + " " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	var id [sha1.Size]byte
	h.Sum(id[:0])
	return id
}

// path is where the loose object id lives.
func (s *objectStore) path(id [sha1.Size]byte) string {
	h := hex.EncodeToString(id[:])
	return filepath.Join(s.dir, h[:2], h[2:])
}

// has reports whether id is a loose object of the store, written or
// pending. A packed object reads as missing, and is written again loose:
// harmless, as git does when it cannot tell.
func (s *objectStore) has(id [sha1.Size]byte) bool {
	if _, ok := s.pending[id]; ok {
		return true
	}
	_, err := os.Lstat(s.path(id))
	return err == nil
}

// write queues an object of type kind with content data for flush and
// returns its id.
func (s *objectStore) write(kind string, data []byte) ([sha1.Size]byte, error) {
	id := hashObject(kind, data)
	if s.has(id) {
		return id, nil
	}
	var z bytes.Buffer
	zw := s.zw
	if zw == nil {
		var err error
		if zw, err = zlib.NewWriterLevel(&z, zlib.BestSpeed); err != nil {
			return id, err
		}
	} else {
		zw.Reset(&z)
	}
	_, _ = zw.Write([]byte(kind + " " + strconv.Itoa(len(data)) + "\x00"))
	_, _ = zw.Write(data)
	if err := zw.Close(); err != nil {
		return id, err
	}
	if s.pending == nil {
		s.pending = map[[sha1.Size]byte][]byte{}
	}
	s.pending[id] = z.Bytes()
	return id, nil
}

// flush writes the pending objects, side by side, and returns the first
// error.
func (s *objectStore) flush() error {
	pending := s.pending
	s.pending = nil
	if len(pending) == 1 {
		for id, z := range pending {
			return s.writeFile(id, z)
		}
	}
	errs := make(chan error, len(pending))
	for id, z := range pending {
		go func() { errs <- s.writeFile(id, z) }()
	}
	var first error
	for range pending {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// writeFile writes one compressed object.
func (s *objectStore) writeFile(id [sha1.Size]byte, z []byte) error {
	dst := s.path(id)
	// A temporary name of git's kind in the fan-out directory, created
	// read-only as objects are: written through the descriptor, then
	// renamed into place, so a reader never sees half an object.
	tmp := filepath.Join(filepath.Dir(dst), "tmp_obj_"+strconv.FormatUint(rand.Uint64(), 36)) //nolint:gosec // a name, not a secret
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.Mkdir(filepath.Dir(dst), 0o755); err == nil || errors.Is(err, fs.ErrExist) {
			f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(z)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// treeNode is a directory of the index being made into tree objects.
type treeNode struct {
	id [sha1.Size]byte
	// count is the number of index entries under the directory, for the
	// cache-tree extension.
	count    int
	subtrees []namedTree
}

type namedTree struct {
	name string
	node *treeNode
}

// writeTrees writes the tree objects for entries (sorted by name, as the
// index keeps them) and returns the root. Sorted index order is git's
// tree order: a directory sorts as its name followed by a slash.
func (s *objectStore) writeTrees(entries []indexEntry) (*treeNode, error) {
	root, rest, err := s.writeTree(entries, "")
	if err == nil && len(rest) != 0 {
		err = errors.New("index entries out of order")
	}
	return root, err
}

// writeTree writes the tree of the directory prefix (with its trailing
// slash, "" for the top) from the entries at the start of entries that
// are under it, and returns the entries after them.
func (s *objectStore) writeTree(entries []indexEntry, prefix string) (*treeNode, []indexEntry, error) {
	n := &treeNode{}
	var body []byte
	for len(entries) > 0 && strings.HasPrefix(entries[0].name, prefix) {
		e := entries[0]
		rel := e.name[len(prefix):]
		dir, _, isDir := strings.Cut(rel, "/")
		if !isDir {
			body = strconv.AppendUint(body, uint64(e.mode), 8)
			body = append(body, ' ')
			body = append(body, rel...)
			body = append(body, 0)
			body = append(body, e.oid[:]...)
			n.count++
			entries = entries[1:]
			continue
		}
		sub, rest, err := s.writeTree(entries, prefix+dir+"/")
		if err != nil {
			return nil, nil, err
		}
		body = append(body, "40000 "...)
		body = append(body, dir...)
		body = append(body, 0)
		body = append(body, sub.id[:]...)
		n.count += sub.count
		n.subtrees = append(n.subtrees, namedTree{dir, sub})
		entries = rest
	}
	id, err := s.write("tree", body)
	n.id = id
	return n, entries, err
}
