// Package agenthome keeps an agent CLI's own configuration (its settings,
// login and sessions: ~/.claude, ~/.codex, ...) a per-run copy while the
// agent works in a sandbox. The sandbox mounts the copy where the real
// directory is, so the agent finds its configuration where it expects
// it, and what it changes there stays in the copy, which goes when the
// run ends. The exceptions are the files its adapter declares for
// write-back (a refreshed login, a session transcript): Sync writes those
// to the user's files, never through a symbolic link and never over a
// change made outside the run, and reports every other change. So a hook
// or an MCP server the agent writes into its settings never runs the next
// time the user starts the CLI outside ralph.
//
// It must not decide which paths are whose (each agent's Spec does), nor
// start or confine a process (the sandbox mounts what Binds says), nor
// word what it found for the user (its caller does, from Report).
package agenthome

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Layout is an agent's own files, as its Spec declares them, with every
// path absolute ("~" and variables expanded by the caller).
type Layout struct {
	// Roots are its configuration directories and files. One that does
	// not exist is made, empty, when its name has no extension (the CLI
	// would make the directory on first use, and in the sandbox it finds
	// the home read-only); a file that does not exist is left out.
	Roots []string
	// Scratch are patterns of paths in Roots that are not copied
	// (caches, logs, earlier sessions): a directory starts empty, a file
	// missing, and what the agent leaves there goes unreported.
	Scratch []string
	// ReadOnly are directories in Roots bound read-only from the user's
	// (the programs a CLI installs there).
	ReadOnly []string
	// WriteBack are patterns of the files in Roots whose changes are
	// written back to the user's.
	WriteBack []string
	// Vet, when set, is asked about each file WriteBack names before it
	// is written back, the file being the agent's and not the user's:
	// root is the user's root that holds it (symbolic links resolved),
	// rel its path there (slash-separated), head its content from the
	// start. A reason not to write it back discards the change
	// (reported with the reason); "" lets it through.
	Vet func(root, rel string, head io.Reader) (why string)
}

// Options say where a copy goes and how its reports name paths.
type Options struct {
	// Dir holds the runs' copies, one directory each (mode 0700). It
	// must be outside the project and outside /tmp, which the sandbox
	// replaces; it is made when missing.
	Dir string
	// Home is the user's home: a report writes the paths under it ~/x.
	Home string
}

// Home is the per-run copy of one agent's configuration. Its methods may
// be called from several goroutines.
type Home struct {
	mu   sync.Mutex
	dir  string // the run's directory, which Close removes
	home string
	// roots are the copies, one per existing root.
	roots []*root
	// notCopied are the links out of a root, left out of the copy.
	notCopied []Change
	// reported are the paths a Report named already: each is named
	// once a run.
	reported map[string]bool
	// vet is Layout.Vet.
	vet func(root, rel string, head io.Reader) string
	// writtenBack counts the bytes Sync wrote back this run.
	writtenBack int64
	closed      bool
}

// Bind is one copy as the sandbox mounts it.
type Bind struct {
	// Real is the user's path (symbolic links resolved), where the copy
	// is mounted; Copy is the copy.
	Real, Copy string
	// ReadOnly are paths in Real bound read-only from the user's over
	// the copy.
	ReadOnly []string
}

// Kind says how a path of the copy differs from the user's.
type Kind string

// The kinds of Change.
const (
	Changed Kind = "changed"
	Added   Kind = "added"
	Removed Kind = "removed"
	// Kept: a file the agent changed that is written back, but whose
	// real file changed outside the run too, or cannot be written
	// safely (Detail says why): the user's is kept.
	Kept Kind = "kept"
	// NotCopied: a symbolic link that leads out of its root, or a file
	// the user cannot read (Detail says which): the copy goes without it.
	NotCopied Kind = "not copied"
)

// Change is one path of the copy that differs from the user's.
type Change struct {
	// Path names the user's file as the user writes it: ~/.claude/x.
	Path   string
	Kind   Kind
	Detail string
}

// Report is what one Sync did and found.
type Report struct {
	// WrittenBack are the files written back to the user's.
	WrittenBack []string
	// Discarded are the other changes (Changed, Added, Removed) and the
	// write-backs refused (Kept), each named once a run.
	Discarded []Change
}

// Open makes the copy of l for one run: a directory of its own in o.Dir
// with a copy of each root (modes and times kept; symbolic links copied
// as links when they stay inside their root, and left out otherwise),
// Scratch made empty and ReadOnly left for the sandbox to bind. It also
// removes the copies of runs that died without closing theirs.
func Open(l Layout, o Options) (*Home, error) {
	if !filepath.IsAbs(o.Dir) {
		return nil, fmt.Errorf("agent home: the directory for copies %q is not absolute", o.Dir)
	}
	roots, err := findRoots(l)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent home: %w", err)
	}
	sweep(o.Dir)
	dir, err := os.MkdirTemp(o.Dir, strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("agent home: %w", err)
	}
	h := &Home{dir: dir, home: o.Home, roots: roots, vet: l.Vet, reported: map[string]bool{}}
	for i, r := range roots {
		r.copy = filepath.Join(dir, strconv.Itoa(i)+"-"+filepath.Base(r.path))
		if err := h.copyRoot(r); err != nil {
			_ = removeTree(dir)
			return nil, fmt.Errorf("agent home: copying %s: %w", h.display(r, ""), err)
		}
	}
	return h, nil
}

// findRoots are the roots of l that exist (made when they are missing
// directories), symbolic links resolved, each once, none inside another.
func findRoots(l Layout) ([]*root, error) {
	var out []*root
	for _, p := range l.Roots {
		if !filepath.IsAbs(p) {
			continue // a variable that is not set
		}
		p = filepath.Clean(p)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) && looksLikeDir(p) {
			if err := os.MkdirAll(p, 0o700); err != nil {
				return nil, fmt.Errorf("agent home: %w", err)
			}
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue // missing, or a link to nothing
		}
		fi, err := os.Lstat(real)
		if err != nil || !fi.IsDir() && !fi.Mode().IsRegular() {
			continue
		}
		if slices.ContainsFunc(out, func(r *root) bool { return within(real, r.real) }) {
			continue
		}
		out = slices.DeleteFunc(out, func(r *root) bool { return within(r.real, real) })
		r := &root{path: p, real: real, base: map[string]entry{}, last: map[string]stamp{}}
		r.scratch = relPatterns(r, l.Scratch)
		r.writeBack = relPatterns(r, l.WriteBack)
		r.readOnly = relPatterns(r, l.ReadOnly)
		out = append(out, r)
	}
	return out, nil
}

// looksLikeDir says whether a missing root is a directory: a name with
// an extension (~/.claude.json) is a file its program creates.
func looksLikeDir(p string) bool {
	return filepath.Ext(strings.TrimPrefix(filepath.Base(p), ".")) == ""
}

// Binds are the copies, as the sandbox mounts them.
func (h *Home) Binds() []Bind {
	var out []Bind
	for _, r := range h.roots {
		b := Bind{Real: r.real, Copy: r.copy}
		for _, rel := range r.mounts {
			b.ReadOnly = append(b.ReadOnly, filepath.Join(r.real, rel))
		}
		out = append(out, b)
	}
	return out
}

// NotCopied are what the copy goes without: the symbolic links that
// lead out of their root, the files the user cannot read.
func (h *Home) NotCopied() []Change { return slices.Clone(h.notCopied) }

// Close removes the copy. It does not Sync: what was not written back is
// gone.
func (h *Home) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	if err := removeTree(h.dir); err != nil {
		return fmt.Errorf("agent home: %w", err)
	}
	return nil
}

// display names rel of r as the user writes it: under the root as it is
// declared, ~/x when that is in the home.
func (h *Home) display(r *root, rel string) string {
	p := filepath.Join(r.path, filepath.FromSlash(rel))
	if h.home != "" {
		if in, err := filepath.Rel(h.home, p); err == nil && filepath.IsLocal(in) {
			return "~/" + filepath.ToSlash(in)
		}
	}
	return p
}

// sweep removes the copies of runs whose process is gone (killed before
// Close): a copy holds the agent's login.
func sweep(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		pidText, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = removeTree(filepath.Join(dir, e.Name()))
		}
	}
}

// removeTree removes dir and everything in it, directories whose modes
// (kept from the user's) forbid it included.
func removeTree(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
