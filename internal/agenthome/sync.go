package agenthome

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ralph-loop/ralph/internal/durable"
)

// errInTheWay is a write-back whose way, in the user's directory, goes
// through a symbolic link or a file.
var errInTheWay = errors.New("a symbolic link or a file is in the way")

// Bounds on what the agent can have written back: a file it makes may be
// sparse, a few blocks in the copy and all its size in the user's
// directory once written there, and any number of them may match a
// pattern like projects/**/*.jsonl. A login or a session's transcript is
// far below either.
const (
	maxWriteBack     = 256 << 20 // one file
	maxWrittenBack   = 2 << 30   // all a run writes back
	maxVetted        = 1 << 20   // what Layout.Vet may read of one
	unreadableInCopy = "unreadable in the copy (the agent took its permissions): not written back"
)

// Sync compares the copy with what it held when it was made (or last
// written back). A file that WriteBack names, changed or new, is written
// to the user's, atomically, beneath the root and through no link, when
// the user's did not change since the copy was made; every other change
// is in the Report, each path once a run. Call it when no agent works in
// the copy: after each of its runs, and before Close.
func (h *Home) Sync() (Report, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var rep Report
	if h.closed {
		return rep, nil
	}
	var errs []error
	for _, r := range h.roots {
		s := syncer{h: h, r: r, rep: &rep, seen: map[string]bool{}}
		if err := s.run(); err != nil {
			errs = append(errs, fmt.Errorf("agent home: %s: %w", h.display(r, ""), err))
		}
	}
	return rep, errors.Join(errs...)
}

// syncer is one Sync of one root.
type syncer struct {
	h    *Home
	r    *root
	rep  *Report
	seen map[string]bool
}

func (s *syncer) run() error {
	parent, err := os.Open(filepath.Dir(s.r.copy)) // the run's directory: ralph's own
	if err != nil {
		return err
	}
	defer parent.Close()
	if err := s.walk(parent, filepath.Base(s.r.copy), "", false); err != nil {
		return err
	}
	var gone []string
	for rel := range s.r.base {
		if !s.seen[rel] && !s.r.inScratch(rel) {
			gone = append(gone, rel)
		}
	}
	slices.Sort(gone)
	for _, rel := range gone {
		s.discard(rel, Removed, "")
	}
	return nil
}

// walk looks at name, in the directory dir of the copy, and what is in
// it; rel is its path in the root. Nothing the agent left is followed:
// every name is opened in its directory with O_NOFOLLOW.
func (s *syncer) walk(dir *os.File, name, rel string, scratch bool) error {
	if rel != "" && s.r.isReadOnly(rel) {
		return nil // the user's, mounted read-only: not in the copy
	}
	scratch = scratch || s.r.isScratch(rel)
	st, err := lstatAt(dir, name)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	switch fileType(&st) {
	case unix.S_IFDIR:
		if scratch && !s.r.mayHoldWriteBack(rel) {
			return nil // neither copied nor written back: nothing to look at
		}
		d, err := openAt(dir, name, unix.O_RDONLY|unix.O_DIRECTORY)
		if denied(err) {
			s.unreadable(rel)
			return nil
		}
		if err != nil {
			return err
		}
		defer d.Close()
		names, err := d.Readdirnames(-1)
		if denied(err) {
			s.unreadable(rel)
			return nil
		}
		if err != nil {
			return err
		}
		slices.Sort(names)
		for _, n := range names {
			if err := s.walk(d, n, path.Join(rel, n), scratch); err != nil {
				return err
			}
		}
	case unix.S_IFREG:
		s.seen[rel] = true
		return s.file(dir, name, rel, scratch, stampOf(&st))
	case unix.S_IFLNK:
		s.seen[rel] = true
		if scratch {
			return nil
		}
		target, err := readlinkAt(dir, name)
		if err != nil {
			return err
		}
		b, had := s.r.base[rel]
		switch {
		case !had:
			s.discard(rel, Added, "a symbolic link to "+target)
		case !b.link || b.target != target:
			s.discard(rel, Changed, "a symbolic link to "+target)
		}
	}
	return nil
}

// file looks at the regular file name of the copy, whose stamp is st.
func (s *syncer) file(dir *os.File, name, rel string, scratch bool, st stamp) error {
	b, had := s.r.base[rel]
	if had && !b.link && b.copy == st {
		return nil
	}
	if last, ok := s.r.last[rel]; ok && last == st {
		return nil
	}
	wb := s.r.isWriteBack(rel)
	if scratch && !wb {
		return nil
	}
	kind := Added
	if had {
		kind = Changed
	}
	if !wb && (!had || b.copy.size != st.size || s.h.reported[s.h.display(s.r, rel)]) {
		// Discarded whatever it holds: no need to read it to say so.
		s.r.last[rel] = st
		s.discard(rel, kind, "")
		return nil
	}
	if wb && (st.size > maxWriteBack || s.h.writtenBack+st.size > maxWrittenBack) {
		s.r.last[rel] = st
		s.discard(rel, Kept, fmt.Sprintf("it is %d MiB, more than ralph writes back (%d MiB a file, %d MiB a run)",
			st.size>>20, maxWriteBack>>20, maxWrittenBack>>20))
		return nil
	}
	f, fst, err := openRegular(dir, name)
	if denied(err) {
		s.r.last[rel] = st
		s.discard(rel, kind, unreadableInCopy)
		return nil
	}
	if err != nil || f == nil {
		return err
	}
	defer f.Close()
	if stampOf(&fst) != st {
		return nil // swapped since the look: the agent is gone, so not for long
	}
	sum, err := hashFile(f)
	if err != nil {
		return err
	}
	perm := modeOf(&fst) & 0o777
	if had && !b.link && b.sum == sum && (wb || b.perm == perm) {
		b.copy = stampOf(&fst) // touched, not changed
		s.r.base[rel] = b
		return nil
	}
	if !wb {
		s.r.last[rel] = st
		s.discard(rel, kind, "")
		return nil
	}
	if s.h.vet != nil {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if why := s.h.vet(s.r.real, rel, io.LimitReader(f, maxVetted)); why != "" {
			s.r.last[rel] = st
			s.discard(rel, kind, why)
			return nil
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	wrote, why, err := s.r.writeTo(rel, f, sum, &fst)
	switch {
	case err != nil:
		return err
	case why != "":
		s.r.last[rel] = st
		s.discard(rel, Kept, why)
	case wrote:
		delete(s.r.last, rel)
		s.h.writtenBack += st.size
		s.rep.WrittenBack = append(s.rep.WrittenBack, s.h.display(s.r, rel))
	}
	return nil
}

// unreadable reports the directory rel of the copy, which the agent made
// unreadable: what it holds is neither written back nor, for the files
// ralph copied there, reported removed.
func (s *syncer) unreadable(rel string) {
	s.discard(rel, Changed, unreadableInCopy)
	for p := range s.r.base {
		if within(p, rel) || rel == "" {
			s.seen[p] = true
		}
	}
}

// denied reports whether err is a permission refused.
func denied(err error) bool {
	return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// discard adds rel to the report, unless it is there already this run.
func (s *syncer) discard(rel string, kind Kind, detail string) {
	p := s.h.display(s.r, rel)
	if s.h.reported[p] {
		return
	}
	s.h.reported[p] = true
	s.rep.Discarded = append(s.rep.Discarded, Change{Path: p, Kind: kind, Detail: detail})
}

// writeTo writes what f holds (sum, its copy's stamp cst) to the
// user's file at rel, unless the user's holds it already, or changed
// since the copy was made, or cannot be written safely: then it says
// why, and writes nothing.
func (r *root) writeTo(rel string, f *os.File, sum [32]byte, cst *unix.Stat_t) (wrote bool, why string, err error) {
	dir, name, err := r.openRealParent(rel)
	if errors.Is(err, errInTheWay) {
		return false, "a symbolic link or a file is in its way in your directory", nil
	}
	if err != nil {
		return false, "", err
	}
	defer dir.Close()
	b, had := r.base[rel]
	cur, err := lstatAt(dir, name)
	switch {
	case errors.Is(err, unix.ENOENT):
		if had {
			return false, "yours was removed since the run started", nil
		}
	case err != nil:
		return false, "", err
	case fileType(&cur) != unix.S_IFREG:
		return false, "yours is not a regular file (a symbolic link?)", nil
	case !had || stampOf(&cur) != b.real:
		real, err := openAt(dir, name, unix.O_RDONLY|unix.O_NONBLOCK)
		if err != nil {
			return false, "", err
		}
		rsum, err := hashFile(real)
		real.Close()
		if err != nil {
			return false, "", err
		}
		switch {
		case rsum == sum:
			// Yours holds what the agent wrote already.
			r.base[rel] = entry{perm: modeOf(cst) & 0o777, copy: stampOf(cst), real: stampOf(&cur), sum: sum}
			return false, "", nil
		case !had:
			return false, "yours was made since the run started", nil
		case rsum != b.sum:
			return false, "yours changed since the run started", nil
		}
	}
	if err := durable.ReplaceFrom(dir, name, f, 0o600); err != nil {
		return false, "", err
	}
	written, err := lstatAt(dir, name)
	if err != nil {
		return false, "", err
	}
	r.base[rel] = entry{perm: modeOf(cst) & 0o777, copy: stampOf(cst), real: stampOf(&written), sum: sum}
	return true, "", nil
}

// openRealParent opens the user's directory that holds rel, and returns
// it with rel's name in it. The root is opened where it was when the copy
// was made; each directory below it is opened in the one before without
// following a link (and made, 0700, when it is missing), so a write in
// it lands beneath the root and nowhere else.
func (r *root) openRealParent(rel string) (*os.File, string, error) {
	return openParent(r.real, rel, true)
}

// openCopyParent is openRealParent in the copy, where nothing is made.
func (r *root) openCopyParent(rel string) (*os.File, string, error) {
	return openParent(r.copy, rel, false)
}

// openParent opens the directory of rel, in the root at top, walking
// down from top's own directory one name at a time without following a
// link; create makes the missing ones.
func openParent(top, rel string, create bool) (*os.File, string, error) {
	dir, err := os.Open(filepath.Dir(top)) // the root's directory: the user's own, or the run's
	if err != nil {
		return nil, "", err
	}
	if rel == "" {
		return dir, filepath.Base(top), nil // a root that is a file
	}
	names := []string{filepath.Base(top)}
	if parent := path.Dir(rel); parent != "." {
		names = append(names, strings.Split(parent, "/")...)
	}
	for _, n := range names {
		next, err := openDirAt(dir, n, create)
		dir.Close()
		if err != nil {
			return nil, "", err
		}
		dir = next
	}
	return dir, path.Base(rel), nil
}

// openDirAt opens the directory name in dir without following a link;
// create makes it (0700) when it is missing.
func openDirAt(dir *os.File, name string, create bool) (*os.File, error) {
	d, err := openAt(dir, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if create && errors.Is(err, unix.ENOENT) {
		if err := unix.Mkdirat(int(dir.Fd()), name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, &os.PathError{Op: "mkdir", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		d, err = openAt(dir, name, unix.O_RDONLY|unix.O_DIRECTORY)
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir.Name(), name), errInTheWay)
	}
	return d, err
}
