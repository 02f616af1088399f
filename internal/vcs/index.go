package vcs

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git's object and index checksums are SHA-1
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// This file reads and writes git's index file (Documentation/gitformat-
// index.txt), versions 2 to 4, for the look and the commit ralph makes in
// process (fast.go). It reads only what a plain working tree's index holds:
// an index with merge stages, sparse or split parts, entries git must not
// look at (assume-unchanged, skip-worktree, intent-to-add) or a checksum
// that does not match is errUnplain, and git does the work instead.

// errUnplain says a repository, index or working tree has something ralph
// leaves to git: the caller falls back to the git process.
var errUnplain = errors.New("left to git")

// statData is what git records of a file's lstat to tell, without reading
// it, that it has not changed.
type statData struct {
	ctimeSec, ctimeNsec uint32
	mtimeSec, mtimeNsec uint32
	dev, ino            uint32
	uid, gid            uint32
	size                uint32
}

// statOf is the stat data git would record for a file.
func statOf(st *unix.Stat_t) statData {
	return statData{
		ctimeSec: uint32(st.Ctim.Sec), ctimeNsec: uint32(st.Ctim.Nsec), //nolint:gosec // git keeps 32 bits
		mtimeSec: uint32(st.Mtim.Sec), mtimeNsec: uint32(st.Mtim.Nsec), //nolint:gosec // git keeps 32 bits
		dev: uint32(st.Dev), ino: uint32(st.Ino), //nolint:gosec // git keeps 32 bits
		uid: st.Uid, gid: st.Gid,
		size: uint32(st.Size), //nolint:gosec // git keeps the size modulo 2^32
	}
}

// indexEntry is one path of the index.
type indexEntry struct {
	name string // relative to the top of the working tree, with slashes
	mode uint32 // 0o100644, 0o100755 or 0o120000
	oid  [sha1.Size]byte
	stat statData
}

// index is a parsed index file.
type index struct {
	version uint32
	entries []indexEntry // sorted by name
	// mtime is the index file's modification time (for one a look keeps
	// in memory, a little before the look: keepPrivate): an entry
	// modified at or after it may have changed without its stat data
	// showing it (git's "racily clean" entries), and is read again.
	mtime time.Time
}

// Index entry flags.
const (
	flagAssumeValid = 0x8000
	flagExtended    = 0x4000
	flagStage       = 0x3000
	flagNameMask    = 0x0fff
)

// readIndex parses the index file at path; a missing file is an empty
// index (as git reads it).
func readIndex(path string) (*index, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &index{version: 2}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, err
	}
	idx, err := parseIndex(data)
	if err != nil {
		return nil, err
	}
	idx.mtime = info.ModTime()
	return idx, nil
}

// parseIndex reads an index file's content.
func parseIndex(data []byte) (*index, error) {
	if len(data) < 12+sha1.Size || string(data[:4]) != "DIRC" {
		return nil, fmt.Errorf("index: %w: not an index file", errUnplain)
	}
	body := data[:len(data)-sha1.Size]
	if sum := sha1.Sum(body); !bytes.Equal(sum[:], data[len(body):]) { //nolint:gosec // git's checksum
		// A wrong checksum, or index.skipHash's zeros: git knows.
		return nil, fmt.Errorf("index: %w: checksum", errUnplain)
	}
	idx := &index{version: binary.BigEndian.Uint32(body[4:8])}
	if idx.version < 2 || idx.version > 4 {
		return nil, fmt.Errorf("index: %w: version %d", errUnplain, idx.version)
	}
	n := binary.BigEndian.Uint32(body[8:12])
	if uint64(n) > uint64(len(body))/62 {
		return nil, fmt.Errorf("index: %w: %d entries in %d bytes", errUnplain, n, len(body))
	}
	idx.entries = make([]indexEntry, 0, n)
	pos := 12
	prev := ""
	for range n {
		if pos+62 > len(body) {
			return nil, fmt.Errorf("index: %w: truncated entry", errUnplain)
		}
		b := body[pos:]
		var e indexEntry
		u := func(i int) uint32 { return binary.BigEndian.Uint32(b[i*4:]) }
		e.stat = statData{ctimeSec: u(0), ctimeNsec: u(1), mtimeSec: u(2), mtimeNsec: u(3),
			dev: u(4), ino: u(5), uid: u(7), gid: u(8), size: u(9)}
		e.mode = u(6)
		copy(e.oid[:], b[40:60])
		flags := binary.BigEndian.Uint16(b[60:62])
		at := 62
		if flags&flagExtended != 0 {
			if idx.version < 3 || pos+64 > len(body) {
				return nil, fmt.Errorf("index: %w: extended flags", errUnplain)
			}
			if binary.BigEndian.Uint16(b[62:64]) != 0 {
				return nil, fmt.Errorf("index: %w: skip-worktree or intent-to-add", errUnplain)
			}
			at = 64
		}
		if flags&(flagAssumeValid|flagStage) != 0 {
			return nil, fmt.Errorf("index: %w: assume-unchanged or merge stage", errUnplain)
		}
		switch e.mode {
		case 0o100644, 0o100755, 0o120000:
		default: // submodules (gitlinks) and anything odd
			return nil, fmt.Errorf("index: %w: mode %o", errUnplain, e.mode)
		}
		if idx.version == 4 {
			strip, k := decodeVarint(b[at:])
			if k == 0 || strip > uint64(len(prev)) {
				return nil, fmt.Errorf("index: %w: name prefix", errUnplain)
			}
			end := bytes.IndexByte(b[at+k:], 0)
			if end < 0 {
				return nil, fmt.Errorf("index: %w: name", errUnplain)
			}
			e.name = prev[:len(prev)-int(strip)] + string(b[at+k:at+k+end]) //nolint:gosec // bounded above
			pos += at + k + end + 1
		} else {
			end := bytes.IndexByte(b[at:], 0)
			if end < 0 {
				return nil, fmt.Errorf("index: %w: name", errUnplain)
			}
			if l := int(flags & flagNameMask); l != flagNameMask && l != end {
				return nil, fmt.Errorf("index: %w: name length", errUnplain)
			}
			e.name = string(b[at : at+end])
			pos += (at + end + 8) &^ 7 // padded with 1 to 8 NULs
		}
		if e.name <= prev && len(idx.entries) > 0 {
			return nil, fmt.Errorf("index: %w: entries out of order", errUnplain)
		}
		prev = e.name
		idx.entries = append(idx.entries, e)
	}
	// Extensions: the ones git may drop (an upper-case first letter) are
	// dropped; any other (split index, sparse directories) is git's.
	for pos < len(body) {
		if pos+8 > len(body) {
			return nil, fmt.Errorf("index: %w: truncated extension", errUnplain)
		}
		sig := body[pos : pos+4]
		size := binary.BigEndian.Uint32(body[pos+4 : pos+8])
		if sig[0] < 'A' || sig[0] > 'Z' || uint64(size) > uint64(len(body)-pos-8) {
			return nil, fmt.Errorf("index: %w: extension %q", errUnplain, sig)
		}
		pos += 8 + int(size)
	}
	return idx, nil
}

// decodeVarint reads git's offset varint (varint.c); k is 0 when b does
// not hold one.
func decodeVarint(b []byte) (v uint64, k int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v = uint64(c & 127)
	k = 1
	for c&128 != 0 {
		if k >= len(b) || v >= 1<<56 {
			return 0, 0
		}
		v++
		c = b[k]
		k++
		v = v<<7 + uint64(c&127)
	}
	return v, k
}

// appendVarint writes v as git's offset varint.
func appendVarint(b []byte, v uint64) []byte {
	var buf [16]byte
	pos := len(buf) - 1
	buf[pos] = byte(v & 127)
	for v >>= 7; v != 0; v >>= 7 {
		v--
		pos--
		buf[pos] = 128 | byte(v&127)
	}
	return append(b, buf[pos:]...)
}

// encodeIndex writes entries (sorted by name) as an index file of the
// given version with the cache-tree extension for tree (which git's next
// write-tree or commit then need not compute). Entries modified at or
// after racy (the time the file is written) have their size smudged to 0,
// as git does: a change made in the same clock tick as this write would
// not show in the stat data otherwise.
func encodeIndex(version uint32, entries []indexEntry, tree *treeNode, racy time.Time) []byte {
	if version < 2 || version > 4 {
		version = 2
	}
	b := make([]byte, 0, 12+len(entries)*80+64)
	b = append(b, "DIRC"...)
	b = binary.BigEndian.AppendUint32(b, version)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries))) //nolint:gosec // an index holds < 2^32 entries
	rs, rns := uint32(racy.Unix()), uint32(racy.Nanosecond())  //nolint:gosec // git keeps 32 bits
	prev := ""
	for _, e := range entries {
		start := len(b)
		st := e.stat
		if st.mtimeSec > rs || st.mtimeSec == rs && st.mtimeNsec >= rns {
			st.size = 0
		}
		for _, v := range []uint32{st.ctimeSec, st.ctimeNsec, st.mtimeSec, st.mtimeNsec,
			st.dev, st.ino, e.mode, st.uid, st.gid, st.size} {
			b = binary.BigEndian.AppendUint32(b, v)
		}
		b = append(b, e.oid[:]...)
		flags := uint16(flagNameMask)
		if len(e.name) < flagNameMask {
			flags = uint16(len(e.name))
		}
		b = binary.BigEndian.AppendUint16(b, flags)
		if version == 4 {
			common := 0
			for common < len(prev) && common < len(e.name) && prev[common] == e.name[common] {
				common++
			}
			b = appendVarint(b, uint64(len(prev)-common))
			b = append(b, e.name[common:]...)
			b = append(b, 0)
		} else {
			b = append(b, e.name...)
			pad := 8 - (len(b)-start)%8
			b = append(b, make([]byte, pad)...)
		}
		prev = e.name
	}
	if tree != nil {
		var ext []byte
		ext = tree.appendCacheTree(ext, "")
		b = append(b, "TREE"...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(ext))) //nolint:gosec // small
		b = append(b, ext...)
	}
	sum := sha1.Sum(b) //nolint:gosec // git's checksum
	return append(b, sum[:]...)
}

// appendCacheTree writes the node and its subtrees in the cache-tree
// extension's format: name NUL, entry count, space, subtree count,
// newline, id; subtrees follow their parent in order.
func (n *treeNode) appendCacheTree(b []byte, name string) []byte {
	b = append(b, name...)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(n.count), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(n.subtrees)), 10)
	b = append(b, '\n')
	b = append(b, n.id[:]...)
	for _, s := range n.subtrees {
		b = s.node.appendCacheTree(b, s.name)
	}
	return b
}

// writeIndexFile replaces ralph's own index at path with data through
// path.lock, as git does: O_EXCL on the lock keeps two writers apart (a
// lock left over is stale for a file only ralph writes).
func writeIndexFile(path string, data []byte) error {
	lock, err := lockFile(path, true)
	if err != nil {
		return err
	}
	name := lock.Name()
	_, err = lock.Write(data)
	if cerr := lock.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
	}
	return err
}

// lockFile creates path.lock exclusively. stale: a lock left over is
// removed and the lock taken again (for files only ralph writes).
func lockFile(path string, stale bool) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		if !stale {
			return nil, fmt.Errorf("%w: %s.lock exists", errUnplain, path)
		}
		_ = os.Remove(path + ".lock")
		f, err = os.OpenFile(path+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	return f, err
}
