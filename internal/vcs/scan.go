package vcs

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sys/unix"
)

// scan is one look at the working tree against an index, in process: what
// `git add -A` would make of the index, with the blobs of new content
// written as it would write them. Anything the look cannot vouch for
// (attributes that filter content, nested repositories, ignore patterns
// whose matching it does not share with git, special files) is
// errUnplain, and git looks instead.
type scan struct {
	root  string
	store *objectStore
	// entries is the index being brought up to date; byName finds a
	// tracked path in it.
	entries []indexEntry
	byName  map[string]int
	// seen marks the tracked entries found in the working tree.
	seen []bool
	// trackedDirs are the directories holding tracked files: walked even
	// when ignored, as git still looks at tracked files there.
	trackedDirs map[string]bool
	// racy is the index file's time: entries modified at or after it are
	// read again whatever their stat data says.
	racySec, racyNsec uint32
	added             []indexEntry
	// changed lists the paths whose content or mode changed, were added
	// or removed; refreshed says only stat data changed elsewhere.
	changed   []string
	refreshed bool
}

// scanWorkTree brings idx up to date with the working tree at root under
// the ignore patterns base (global and info/exclude, lowest priority
// first) and returns the entries, sorted, and the paths that changed.
func scanWorkTree(root string, idx *index, store *objectStore, base []gitignore.Pattern) (*scan, error) {
	s := &scan{
		root: root, store: store,
		entries:     slices.Clone(idx.entries),
		byName:      make(map[string]int, len(idx.entries)),
		seen:        make([]bool, len(idx.entries)),
		trackedDirs: map[string]bool{},
	}
	if !idx.mtime.IsZero() {
		s.racySec, s.racyNsec = uint32(idx.mtime.Unix()), uint32(idx.mtime.Nanosecond()) //nolint:gosec // git keeps 32 bits
	}
	for i, e := range s.entries {
		if ralphPath(e.name) {
			return nil, errUnplain // ralph's files tracked: git unstages them
		}
		s.byName[e.name] = i
		for d := e.name; ; {
			j := strings.LastIndexByte(d, '/')
			if j < 0 {
				break
			}
			d = d[:j]
			if s.trackedDirs[d] {
				break
			}
			s.trackedDirs[d] = true
		}
	}
	if err := s.walk("", root, false, base); err != nil {
		return nil, err
	}
	kept := make([]indexEntry, 0, len(s.entries)+len(s.added))
	for i, e := range s.entries {
		if !s.seen[i] {
			s.changed = append(s.changed, e.name)
			continue
		}
		kept = append(kept, e)
	}
	kept = append(kept, s.added...)
	s.entries = kept
	if len(s.added) > 0 {
		slices.SortFunc(s.entries, func(a, b indexEntry) int { return strings.Compare(a.name, b.name) })
	}
	slices.Sort(s.changed)
	return s, nil
}

// walk reads the directory rel (abs on disk); ignored says a parent
// directory is ignored, so only tracked files count.
func (s *scan) walk(rel, abs string, ignored bool, patterns []gitignore.Pattern) error {
	ents, err := os.ReadDir(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil // gone since: its tracked files are removed
		}
		return err
	}
	var domain []string
	if rel != "" {
		domain = strings.Split(rel, "/")
	}
	for _, ent := range ents {
		switch ent.Name() {
		case ".gitattributes":
			// Attributes may filter content or line endings: what git
			// stores is then not the file.
			return errUnplain
		case ".gitignore":
			if !ignored && ent.Type().IsRegular() {
				ps, err := readIgnoreFile(filepath.Join(abs, ".gitignore"), domain)
				if err != nil {
					return err
				}
				patterns = append(slices.Clip(patterns), ps...)
			}
		}
	}
	for _, ent := range ents {
		name := ent.Name()
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		if name == ".git" {
			if rel == "" || ignored {
				continue
			}
			return errUnplain // a repository inside: git adds it as a gitlink
		}
		if rel == "" && name == ".ralph" {
			continue
		}
		typ := ent.Type()
		if typ.IsDir() {
			ign := ignored || ignoredBy(patterns, append(slices.Clip(domain), name), true)
			if ign && !s.trackedDirs[p] {
				continue
			}
			if err := s.walk(p, filepath.Join(abs, name), ign, patterns); err != nil {
				return err
			}
			continue
		}
		i, tracked := s.byName[p]
		if !tracked && (ignored || ignoredBy(patterns, append(slices.Clip(domain), name), false)) {
			continue
		}
		if !typ.IsRegular() && typ&fs.ModeSymlink == 0 {
			return errUnplain // a fifo, socket or device: git refuses it
		}
		if err := s.file(p, filepath.Join(abs, name), i, tracked); err != nil {
			return err
		}
	}
	return nil
}

// file compares one file with its entry (tracked) or adds it.
func (s *scan) file(p, abs string, i int, tracked bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(abs, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // removed since the directory was read
		}
		return err
	}
	var mode uint32
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		mode = 0o100644
		if st.Mode&0o100 != 0 {
			mode = 0o100755
		}
	case unix.S_IFLNK:
		mode = 0o120000
	default:
		return errUnplain // changed type since the directory was read
	}
	sd := statOf(&st)
	if tracked {
		s.seen[i] = true
		e := &s.entries[i]
		if e.mode == mode && sameStat(e.stat, sd) && !s.racy(e.stat) {
			return nil
		}
	}
	if st.Size > maxBlob {
		return errUnplain // git streams big files; ralph would hold them whole
	}
	// Stat first, content second: a change after the stat shows in the
	// next look's stat.
	var data []byte
	var err error
	if mode == 0o120000 {
		var target string
		target, err = os.Readlink(abs)
		data = []byte(target)
	} else {
		data, err = os.ReadFile(abs)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if tracked {
				s.seen[i] = false
			}
			return nil
		}
		return err
	}
	id := hashObject("blob", data)
	if tracked {
		e := &s.entries[i]
		if e.oid == id && e.mode == mode {
			if e.stat != sd {
				e.stat = sd
				s.refreshed = true
			}
			return nil
		}
	}
	if !s.store.has(id) {
		if _, err := s.store.write("blob", data); err != nil {
			return err
		}
	}
	s.changed = append(s.changed, p)
	e := indexEntry{name: p, mode: mode, oid: id, stat: sd}
	if tracked {
		s.entries[i] = e
	} else {
		s.added = append(s.added, e)
	}
	return nil
}

// maxBlob is the largest file the look reads in process.
const maxBlob = 32 << 20

// racy reports an entry modified at or after the index was written: its
// stat data cannot tell a change made in the same clock tick.
func (s *scan) racy(sd statData) bool {
	return sd.mtimeSec > s.racySec || sd.mtimeSec == s.racySec && sd.mtimeNsec >= s.racyNsec
}

// sameStat compares what git compares of stat data by default (the
// device is not: it may change across mounts).
func sameStat(a, b statData) bool {
	a.dev, b.dev = 0, 0
	return a == b
}

// readIgnoreFile parses an ignore file whose patterns apply under domain.
// Patterns whose matching go-git's and git's could disagree on (escapes,
// bracket expressions, "**" inside a name) are errUnplain: a file git
// ignores must never be committed because ralph read a pattern otherwise.
func readIgnoreFile(path string, domain []string) ([]gitignore.Pattern, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " ")
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.ContainsAny(line, `\[`) || strings.Contains(line, "\r") {
			return nil, errUnplain
		}
		for seg := range strings.SplitSeq(strings.TrimPrefix(line, "!"), "/") {
			if strings.Contains(seg, "**") && seg != "**" {
				return nil, errUnplain
			}
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps, sc.Err()
}

// ignoredBy matches a path (its names from the top) against patterns,
// the last matching one deciding, as git does.
func ignoredBy(patterns []gitignore.Pattern, path []string, isDir bool) bool {
	for i := len(patterns) - 1; i >= 0; i-- {
		switch patterns[i].Match(path, isDir) {
		case gitignore.Exclude:
			return true
		case gitignore.Include:
			return false
		case gitignore.NoMatch:
		}
	}
	return false
}
