// Package projectfs is the one door through which ralph reads and writes
// files the agent can write: the plan, the progress log, prompt files and
// .ralph/. Every name is resolved beneath a root directory (the project)
// and never leaves it: a symbolic link that stays inside is followed, one
// that leads out (or is absolute) is refused with an error wrapping
// ErrOutside, as is a name with ".." that climbs out. On Linux the kernel
// checks it (openat2(2) with RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS, so a
// link swapped in mid-walk cannot win a race); elsewhere, and on kernels
// before 5.6, os.Root walks the name one component at a time with
// O_NOFOLLOW. Replacements are atomic and durable (durable.ReplaceAt in
// the directory opened beneath the root).
//
// It must not decide which files are whose, nor what a refusal means for
// a run: its callers (task, state, prompt, loop, cli) do.
package projectfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/ralph-loop/ralph/internal/durable"
)

// dirFlag opens only a directory.
const dirFlag = syscall.O_DIRECTORY

// ErrOutside is wrapped by the errors of a name that leads out of its root.
var ErrOutside = errors.New("leads out of the project")

// OutsideError is a name that leads out of its root.
type OutsideError struct {
	Name   string // the name as the caller gave it
	Root   string // the root it must stay beneath
	Target string // where it leads, when known
}

func (e *OutsideError) Error() string {
	if e.Target != "" {
		return fmt.Sprintf("%s leads to %s, outside %s (a symbolic link): ralph does not follow it; "+
			"put the file itself back", e.Name, e.Target, e.Root)
	}
	return fmt.Sprintf("%s leads out of %s (a symbolic link out or an absolute one, or ..): ralph does not follow it; "+
		"put the file itself back", e.Name, e.Root)
}

// Unwrap makes errors.Is(err, ErrOutside) true.
func (e *OutsideError) Unwrap() error { return ErrOutside }

// Root is a directory that names are resolved beneath. Its own path is
// trusted (the user chose it): only what is inside it is not. The zero
// Root is not usable.
type Root struct {
	dir string
	// noOpenat2 makes Linux take the os.Root walk, as kernels without
	// openat2 do; tests set it.
	noOpenat2 bool
}

// New returns the root at dir, made absolute.
func New(dir string) Root {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return Root{dir: filepath.Clean(dir)}
}

// Dir returns the root's directory.
func (r Root) Dir() string { return r.dir }

// Contains reports whether name, as a path, is inside the root (or is the
// root itself), without looking at the file system.
func (r Root) Contains(name string) bool {
	_, err := r.rel(name)
	return err == nil
}

// rel is name relative to the root: an absolute name must be inside it, a
// relative one is taken from it. Neither may climb out with "..".
func (r Root) rel(name string) (string, error) {
	rel := name
	if filepath.IsAbs(name) {
		var err error
		if rel, err = filepath.Rel(r.dir, name); err != nil {
			return "", &OutsideError{Name: name, Root: r.dir}
		}
	}
	rel = filepath.Clean(rel)
	if rel != "." && !filepath.IsLocal(rel) {
		return "", &OutsideError{Name: name, Root: r.dir}
	}
	return rel, nil
}

// Open opens name for reading.
func (r Root) Open(name string) (*os.File, error) {
	return r.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile is os.OpenFile beneath the root.
func (r Root) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	rel, err := r.rel(name)
	if err != nil {
		return nil, err
	}
	f, err := r.open(rel, flag, perm)
	if err != nil {
		return nil, r.explain(name, err)
	}
	return f, nil
}

// ReadFile reads name whole.
func (r Root) ReadFile(name string) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFile replaces name with data atomically and durably, keeping an
// existing file's permissions (a new one gets perm, less the umask). When
// name is a symbolic link the file it leads to is replaced and the link
// stays, provided that file is beneath the root; one outside is an error
// wrapping ErrOutside, and nothing is written.
func (r Root) WriteFile(name string, data []byte, perm fs.FileMode) error {
	rel, err := r.rel(name)
	if err != nil {
		return err
	}
	target, err := r.resolve(name, rel)
	if err != nil {
		return err
	}
	dir, err := r.open(filepath.Dir(target), os.O_RDONLY|dirFlag, 0)
	if err != nil {
		return r.explain(name, err)
	}
	defer dir.Close()
	return durable.ReplaceAt(dir, filepath.Base(target), data, perm)
}

// Replace replaces the entry name with a regular file holding data,
// atomically and durably, as WriteFile does, but for a symbolic link at
// name, which is replaced, not followed. The directories on the way stay
// beneath the root.
func (r Root) Replace(name string, data []byte, perm fs.FileMode) error {
	rel, err := r.rel(name)
	if err != nil {
		return err
	}
	dir, err := r.open(filepath.Dir(rel), os.O_RDONLY|dirFlag, 0)
	if err != nil {
		return r.explain(name, err)
	}
	defer dir.Close()
	return durable.ReplaceAt(dir, filepath.Base(rel), data, perm)
}

// Append adds data at the end of name (created with perm when missing) as
// durable.Append does.
func (r Root) Append(name string, data []byte, perm fs.FileMode) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	created, err := durable.AppendTo(f, data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && created {
		err = r.syncDir(filepath.Dir(name))
	}
	return err
}

// syncDir fsyncs the directory name beneath the root.
func (r Root) syncDir(name string) error {
	d, err := r.OpenFile(name, os.O_RDONLY|dirFlag, 0)
	if err != nil {
		return err
	}
	return durable.SyncClose(d)
}

// ReadDir lists the directory name, sorted by name.
func (r Root) ReadDir(name string) ([]fs.DirEntry, error) {
	d, err := r.OpenFile(name, os.O_RDONLY|dirFlag, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// Stat is os.Stat beneath the root; Lstat does not follow a link at name
// itself.
func (r Root) Stat(name string) (fs.FileInfo, error) {
	return r.withRoot(name, func(root *os.Root, rel string) (fs.FileInfo, error) { return root.Stat(rel) })
}

// Lstat is os.Lstat beneath the root.
func (r Root) Lstat(name string) (fs.FileInfo, error) {
	return r.withRoot(name, func(root *os.Root, rel string) (fs.FileInfo, error) { return root.Lstat(rel) })
}

// MkdirAll is os.MkdirAll beneath the root.
func (r Root) MkdirAll(name string, perm fs.FileMode) error {
	_, err := r.withRoot(name, func(root *os.Root, rel string) (fs.FileInfo, error) { return nil, root.MkdirAll(rel, perm) })
	return err
}

// Remove is os.Remove beneath the root: a link at name is removed, not
// what it leads to.
func (r Root) Remove(name string) error {
	_, err := r.withRoot(name, func(root *os.Root, rel string) (fs.FileInfo, error) { return nil, root.Remove(rel) })
	return err
}

// RemoveAll is os.RemoveAll beneath the root.
func (r Root) RemoveAll(name string) error {
	_, err := r.withRoot(name, func(root *os.Root, rel string) (fs.FileInfo, error) { return nil, root.RemoveAll(rel) })
	return err
}

// Rename is os.Rename of two names beneath the root.
func (r Root) Rename(from, to string) error {
	relTo, err := r.rel(to)
	if err != nil {
		return err
	}
	_, err = r.withRoot(from, func(root *os.Root, rel string) (fs.FileInfo, error) { return nil, root.Rename(rel, relTo) })
	return err
}

// withRoot runs op on name relative to the root opened as an os.Root, the
// operations that are not an open.
func (r Root) withRoot(name string, op func(root *os.Root, rel string) (fs.FileInfo, error)) (fs.FileInfo, error) {
	rel, err := r.rel(name)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := op(root, rel)
	if err != nil {
		return nil, r.explain(name, err)
	}
	return fi, nil
}

// resolve returns where a write to name (rel, relative to the root)
// lands: rel itself, or, when symbolic links lead on from it, the file they
// lead to, relative to the root; an error wrapping ErrOutside when that is
// outside. The write itself still opens its directory beneath the root,
// so a link swapped in after this look cannot take it out either: it can
// only make the write miss, inside.
func (r Root) resolve(name, rel string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(r.dir)
	if err != nil {
		return "", err
	}
	full := filepath.Join(r.dir, rel)
	real, err := filepath.EvalSymlinks(full)
	if errors.Is(err, fs.ErrNotExist) {
		// A new file (or a link to nothing, which the rename replaces).
		if real, err = filepath.EvalSymlinks(filepath.Dir(full)); err == nil {
			real = filepath.Join(real, filepath.Base(full))
		}
	}
	if err != nil {
		return "", r.explain(name, err)
	}
	back, err := filepath.Rel(realRoot, real)
	if err != nil || back == "." || !filepath.IsLocal(back) {
		return "", &OutsideError{Name: name, Root: r.dir, Target: real}
	}
	return back, nil
}

// explain turns the error of a walk that would have left the root into
// an *OutsideError naming where the name leads, when that can be told.
func (r Root) explain(name string, err error) error {
	if !escaped(err) {
		return err
	}
	e := &OutsideError{Name: name, Root: r.dir}
	if rel, rerr := r.rel(name); rerr == nil {
		if real, lerr := filepath.EvalSymlinks(filepath.Join(r.dir, rel)); lerr == nil {
			e.Target = real
		}
	}
	return e
}

// escaped reports an error of a walk refused for leaving its root:
// openat2's EXDEV, or os.Root's own error (not exported, so known by its
// text; a test pins it).
func escaped(err error) bool {
	if errors.Is(err, syscall.EXDEV) {
		return true
	}
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err.Error() == "path escapes from parent"
}

// openInRoot opens rel beneath dir with os.Root, which walks it one
// component at a time with O_NOFOLLOW and follows links itself only while
// they stay beneath.
func openInRoot(dir, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.OpenFile(rel, flag, perm)
}

// ReadNamed reads a file the user named (the plan, a prompt file): beneath
// project when it is in it, where the agent can write, and otherwise
// where it is, outside the agent's reach.
func ReadNamed(project, path string) ([]byte, error) {
	root := New(project)
	if !root.Contains(path) {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, err
		}
		root, path = New(filepath.Dir(real)), real
	}
	return root.ReadFile(path)
}
