package agenthome

import (
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// root is one configuration directory or file and its copy.
type root struct {
	// path is the root as declared, which reports name; real is where it
	// is (symbolic links resolved), which is copied and written back to,
	// and where the copy is mounted.
	path, real string
	copy       string
	// scratch, writeBack and readOnly are the Layout's patterns that lie
	// in the root, relative to it ("" is the root itself).
	scratch, writeBack, readOnly []string
	// mounts are the readOnly paths that exist: the sandbox binds the
	// user's over the copy's (empty) directory.
	mounts []string
	// base is what the copy holds, by path relative to the root: as it
	// was made, or as a write-back left it. Directories are not in it:
	// their files are.
	base map[string]entry
	// last is the stamp of a file of the copy whose change was reported
	// (or kept from write-back) when it was looked at last: it is not
	// read again until it changes again.
	last map[string]stamp
}

// entry is a file or link of the copy as ralph knows it.
type entry struct {
	link   bool
	target string
	// perm is the file's permission bits.
	perm uint32
	// copy is the copy's file, real the user's file it came from (or
	// that a write-back made), sum their content's SHA-256.
	copy, real stamp
	sum        [32]byte
}

// stamp tells whether a file changed without reading it: a write moves
// its ctime, which no one can set back.
type stamp struct {
	ino          uint64
	size         int64
	mode         uint32
	mtime, ctime int64
}

// modeOf is st's mode, type and permissions; fileType its type alone.
func modeOf(st *unix.Stat_t) uint32 {
	return uint32(st.Mode) //nolint:unconvert // a uint16 on macOS
}

func fileType(st *unix.Stat_t) uint32 { return modeOf(st) & unix.S_IFMT }

func stampOf(st *unix.Stat_t) stamp {
	return stamp{ino: st.Ino, size: st.Size, mode: modeOf(st), mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// relPatterns are the patterns that lie in r, relative to it, as Match
// reads them; a pattern may name the root as declared or as it is.
func relPatterns(r *root, patterns []string) []string {
	var out []string
	for _, p := range patterns {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		for _, base := range []string{r.path, r.real} {
			if p == base {
				out = append(out, "")
				break
			}
			if rest, ok := strings.CutPrefix(p, base+"/"); ok {
				out = append(out, filepath.ToSlash(rest))
				break
			}
		}
	}
	return out
}

func (r *root) isWriteBack(rel string) bool { return matchAny(r.writeBack, rel) }

func (r *root) isReadOnly(rel string) bool { return matchAny(r.readOnly, rel) }

// isScratch reports whether rel is scratch itself; inScratch whether it
// or a directory it is in is.
func (r *root) isScratch(rel string) bool { return matchAny(r.scratch, rel) }

func (r *root) inScratch(rel string) bool {
	for p := rel; ; p = path.Dir(p) {
		if p == "." {
			p = ""
		}
		if r.isScratch(p) || r.isReadOnly(p) {
			return true
		}
		if p == "" {
			return false
		}
	}
}

// mayHoldWriteBack reports whether a file below the directory rel could
// be written back: the elements of some write-back pattern match rel's
// so far.
func (r *root) mayHoldWriteBack(rel string) bool {
	for _, p := range r.writeBack {
		if matchPrefix(split(p), split(rel)) {
			return true
		}
	}
	return false
}

// leadsToReadOnly reports whether a read-only path lies below rel, which
// a walk of scratch must then go into.
func (r *root) leadsToReadOnly(rel string) bool {
	for _, ro := range r.readOnly {
		if rel == "" && ro != "" || strings.HasPrefix(ro, rel+"/") {
			return true
		}
	}
	return false
}

// staysInside reports whether a symbolic link at rel in r, to target,
// resolves inside r: the copy's links must lead only into the copy. An
// absolute target must name r (as declared or as it is); a relative one
// may climb with ".." only before its first name, since ".." after a
// name that is itself a link climbs out of where that link leads, not
// out of the name.
func staysInside(r *root, rel, target string) bool {
	if filepath.IsAbs(target) {
		return target == filepath.Clean(target) && (within(target, r.real) || within(target, r.path))
	}
	named := false
	for part := range strings.SplitSeq(target, "/") {
		switch part {
		case "", ".":
		case "..":
			if named {
				return false
			}
		default:
			named = true
		}
	}
	return filepath.IsLocal(path.Join(path.Dir(rel), target))
}
