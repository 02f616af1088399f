package vcs

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// errCannot says something cannot be done in process: an object is not
// loose (packed, or in an alternate), does not parse or is too large, the
// repository is one whose objects git would read differently (replace
// refs, SHA-256), or git would print the diff differently. The caller
// asks git instead.
var errCannot = errors.New("not possible in process")

// maxObject bounds what is read in process: a larger blob goes through git
// (and its diff too), so a huge file costs no more memory than before.
const maxObject = 1 << 20

// looseObjects reads the loose objects of one SHA-1 repository. It
// verifies nothing it cannot read cheaply: the id names the file, and
// git itself wrote it. One looseObjects serves one caller at a time: it
// keeps its inflater between objects, which saves most of what reading a
// small object costs.
type looseObjects struct {
	dir string // the objects directory
	z   io.ReadCloser
	raw bytes.Reader
	// trees keeps the trees read, which a caller may ask for twice.
	trees map[string][]byte
	// abbrev is how many hex digits an abbreviated id has; 0 until asked.
	abbrev int
}

// abbrevLen is git's automatic abbreviation length (core.abbrev unset):
// one hex digit per two bits of the packed object count, seven at least.
// git reads the count from the pack indexes as here, loose objects left
// out. It also lengthens an abbreviation that would be ambiguous, which
// is not checked here: a clash of seven or more digits is rare, and it
// changes only an index line, which the guard does not read.
func (s *looseObjects) abbrevLen() int {
	if s.abbrev > 0 {
		return s.abbrev
	}
	count := uint64(0)
	packs, _ := os.ReadDir(filepath.Join(s.dir, "pack"))
	for _, e := range packs {
		if strings.HasSuffix(e.Name(), ".idx") {
			count += packIndexCount(filepath.Join(s.dir, "pack", e.Name()))
		}
	}
	s.abbrev = max(7, (bits.Len64(count)+1)/2)
	return s.abbrev
}

// packIndexCount reads how many objects a pack index lists: the last
// entry of its fan-out table (after the version 2 header, or at the start
// of a version 1 index); 0 when it does not read.
func packIndexCount(name string) uint64 {
	f, err := os.Open(name)
	if err != nil {
		return 0
	}
	defer f.Close()
	var b [8 + 256*4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return 0
	}
	fanout := b[:256*4]
	if bytes.Equal(b[:4], []byte{0xff, 't', 'O', 'c'}) {
		fanout = b[8:]
	}
	return uint64(binary.BigEndian.Uint32(fanout[255*4:]))
}

// looseStore returns the objects directory of g to read in process, or
// false when the repository's objects cannot be vouched for: moved by the
// environment, replaced by refs/replace, or other than SHA-1.
func (g *Git) looseStore() (*looseObjects, bool) {
	if g.objectsMoved() || lookupEnv(environ(g.Env), "GIT_REPLACE_REF_BASE") != "" {
		return nil, false
	}
	if entries, err := os.ReadDir(filepath.Join(g.commonDir, "refs", "replace")); err == nil && len(entries) > 0 {
		return nil, false
	}
	if b, err := os.ReadFile(filepath.Join(g.commonDir, "packed-refs")); err == nil &&
		bytes.Contains(b, []byte(" refs/replace/")) {
		return nil, false
	}
	return &looseObjects{dir: filepath.Join(g.commonDir, "objects")}, true
}

// read returns the type and content of the loose object id (40 hex
// digits), refusing one larger than maxObject.
func (s *looseObjects) read(id string) (string, []byte, error) {
	if len(id) != 40 || objectID(id) == "" {
		return "", nil, errCannot
	}
	if body, ok := s.trees[id]; ok {
		return "tree", body, nil
	}
	compressed, err := os.ReadFile(filepath.Join(s.dir, id[:2], id[2:]))
	if err != nil {
		return "", nil, errCannot
	}
	s.raw.Reset(compressed)
	if s.z == nil {
		s.z, err = zlib.NewReader(&s.raw)
	} else {
		err = s.z.(zlib.Resetter).Reset(&s.raw, nil)
	}
	if err != nil {
		return "", nil, errCannot
	}
	// "TYPE SIZE\x00": the longest type is "commit", a size 20 digits.
	var head [32]byte
	n, err := io.ReadFull(s.z, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", nil, errCannot
	}
	typ, size, rest, ok := parseObjectHeader(head[:n])
	if !ok || size > maxObject {
		return "", nil, errCannot
	}
	body := make([]byte, size)
	copied := copy(body, rest)
	if copied < len(rest) {
		return "", nil, errCannot // more content than the header says
	}
	if _, err := io.ReadFull(s.z, body[copied:]); err != nil {
		return "", nil, errCannot
	}
	if typ == "tree" {
		if s.trees == nil {
			s.trees = map[string][]byte{}
		}
		s.trees[id] = body
	}
	return typ, body, nil
}

// parseObjectHeader reads "TYPE SIZE\x00" at the start of b.
func parseObjectHeader(b []byte) (typ string, size int, rest []byte, ok bool) {
	header, rest, ok := bytes.Cut(b, []byte{0})
	if !ok {
		return "", 0, nil, false
	}
	t, n, ok := bytes.Cut(header, []byte{' '})
	if !ok {
		return "", 0, nil, false
	}
	switch string(t) {
	case "blob", "tree", "commit", "tag":
	default:
		return "", 0, nil, false
	}
	size, err := strconv.Atoi(string(n))
	if err != nil || size < 0 || (len(n) > 1 && n[0] == '0') {
		return "", 0, nil, false
	}
	return string(t), size, rest, true
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	mode string // as git writes it: "100644", "100755", "120000", "40000", "160000"
	name string
	id   string // 40 hex digits
}

// parseTree reads a SHA-1 tree object's content: "MODE NAME\x00" and 20
// bytes of id per entry.
func parseTree(b []byte) ([]treeEntry, error) {
	var out []treeEntry
	for len(b) > 0 {
		header, rest, ok := bytes.Cut(b, []byte{0})
		if !ok || len(rest) < 20 {
			return nil, errCannot
		}
		mode, name, ok := bytes.Cut(header, []byte{' '})
		if !ok || len(name) == 0 || !validMode(mode) || bytes.IndexByte(name, '/') >= 0 ||
			string(name) == "." || string(name) == ".." {
			return nil, errCannot
		}
		out = append(out, treeEntry{mode: string(mode), name: string(name), id: hex.EncodeToString(rest[:20])})
		b = rest[20:]
	}
	return out, nil
}

// validMode reports whether git writes mode in a tree it makes today.
func validMode(mode []byte) bool {
	switch string(mode) {
	case "100644", "100755", "120000", "40000", "160000":
		return true
	}
	return false
}

// fileEntry is a file of a tree, by its path.
type fileEntry struct {
	mode, id string
}

// maxDepth bounds the nesting of trees read.
const maxDepth = 256

// blob reads the blob id.
func (s *looseObjects) blob(id string) ([]byte, error) {
	typ, body, err := s.read(id)
	if err != nil {
		return nil, err
	}
	if typ != "blob" {
		return nil, errCannot
	}
	return body, nil
}
