package proc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Outside finds the programs ralph starts outside any sandbox (bwrap
// itself, sh, git, gh, sl, a notify command, a pager) and gives them the
// PATH they run with. Each of them runs with the user's access: one the
// agent wrote, a .venv/bin/bwrap or sh first on a virtualenv's PATH,
// would run the agent's code unconfined. So the PATH it searches is
// ralph's without its empty and relative entries and without every entry
// inside a place the agent can write (the project, its worktrees, the
// sandbox's allow-write paths), the two compared after their symbolic
// links are resolved. A run makes one, before any agent starts, and
// every such lookup of the run goes through it: PATH is read once, and
// each name is found once.
//
// The programs the agent works with (the agent itself, the gates, the
// reviewer) are not looked up here: they run in the sandbox, where what
// the agent wrote is as confined as the agent.
type Outside struct {
	// path are the entries kept, in PATH's order.
	path []string
	// held are the real paths of the places the agent can write; dropped
	// the entries left out for lying in one of them.
	held, dropped []string

	mu    sync.Mutex
	found map[string]found
}

type found struct {
	path string
	err  error
}

// NewOutside is the lookup for ralph's environment env (ralph's own when
// nil), writable being the places the agent can write (absolute paths;
// those that do not exist yet count as they will be).
func NewOutside(env []string, writable []string) *Outside {
	if env == nil {
		env = os.Environ()
	}
	o := &Outside{found: map[string]found{}}
	for _, w := range writable {
		if filepath.IsAbs(w) {
			o.held = append(o.held, realPath(w))
		}
	}
	for _, d := range filepath.SplitList(getenv(env, "PATH")) {
		if !filepath.IsAbs(d) {
			continue // empty or relative: the child's working directory
		}
		if _, ok := o.Held(d); ok {
			o.dropped = append(o.dropped, d)
			continue
		}
		if !slices.Contains(o.path, d) {
			o.path = append(o.path, d)
		}
	}
	return o
}

// LookPath finds name, a program's name without a slash, on the PATH
// ralph's own programs are looked up on. A name found only in entries
// the agent can write is a *HeldError, which names where it is; both it
// and a name found nowhere match ErrNotFound. An absolute name is taken
// as it is, unless the agent can write it.
func (o *Outside) LookPath(name string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f, ok := o.found[name]; ok {
		return f.path, f.err
	}
	f := o.look(name)
	o.found[name] = f
	return f.path, f.err
}

func (o *Outside) look(name string) found {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			return found{err: fmt.Errorf("%s: a program ralph runs outside the sandbox must be found on PATH or named by an absolute path", name)}
		}
		if place, ok := o.Held(name); ok {
			return found{err: &HeldError{Name: name, Path: name, Place: place}}
		}
		if !isExecutable(name) {
			return found{err: &notFoundError{name: name}}
		}
		return found{path: name}
	}
	var held *HeldError
	for _, d := range slices.Concat(o.path, o.dropped) {
		p := filepath.Join(d, name)
		if !isExecutable(p) {
			continue
		}
		// The file itself may be a link into such a place.
		if place, ok := o.Held(p); ok {
			if held == nil {
				held = &HeldError{Name: name, Path: p, Place: place}
			}
			continue
		}
		return found{path: p}
	}
	if held != nil {
		return found{err: held}
	}
	return found{err: &notFoundError{name: name}}
}

// Held reports whether p (absolute) lies in a place the agent can write,
// its symbolic links resolved, and which.
func (o *Outside) Held(p string) (place string, ok bool) {
	r := realPath(p)
	for _, h := range o.held {
		if r == h || h == "/" || strings.HasPrefix(r, h+"/") {
			return h, true
		}
	}
	return "", false
}

// PATH is the PATH ralph's own programs run with: the entries kept.
func (o *Outside) PATH() string { return strings.Join(o.path, string(filepath.ListSeparator)) }

// Environ is env with PATH set to the one ralph's own programs run with,
// so that what they start in turn (git's ssh and credential helpers, a
// notify command's programs) is found there too.
func (o *Outside) Environ(env []string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	return append(out, "PATH="+o.PATH())
}

// HeldError is a program ralph would run outside the sandbox that is
// only in a place the agent can write.
type HeldError struct {
	// Name is the program asked for, Path where it was found, Place the
	// agent-writable place that holds it.
	Name, Path, Place string
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s is only at %s, in %s, which the agent can write: ralph runs no program from there outside the sandbox "+
		"(install %s in a directory of PATH outside the project)", e.Name, e.Path, e.Place, filepath.Base(e.Name))
}

// Unwrap makes it match ErrNotFound: as far as ralph is concerned, the
// program is not installed.
func (e *HeldError) Unwrap() error { return ErrNotFound }

// notFoundError is a program on no directory of the PATH searched.
type notFoundError struct{ name string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("%s: not found on PATH (but for the directories the agent can write)", e.name)
}

func (e *notFoundError) Unwrap() error { return ErrNotFound }

type outsideKey struct{}

// WithOutside returns ctx carrying o: the run's lookup, for the parts of
// it that find a program of ralph's (OutsideFrom).
func WithOutside(ctx context.Context, o *Outside) context.Context {
	return context.WithValue(ctx, outsideKey{}, o)
}

// OutsideOf is the lookup ctx carries, the run's; nil for none.
func OutsideOf(ctx context.Context) *Outside {
	o, _ := ctx.Value(outsideKey{}).(*Outside)
	return o
}

// OutsideFrom is the lookup ctx carries, the run's; without one (a
// command that is not a run, a test), a lookup made for env that holds
// writable as the agent's.
func OutsideFrom(ctx context.Context, env []string, writable ...string) *Outside {
	if o := OutsideOf(ctx); o != nil {
		return o
	}
	return NewOutside(env, writable)
}

// realPath is p with its symbolic links resolved; a part that does not
// exist yet is joined as it is to its parent's real path, since the
// agent may make it where that parent is, and a link that points nowhere
// yet is followed to where it points.
func realPath(p string) string { return realPathDepth(filepath.Clean(p), 0) }

// maxLinks bounds the links realPath follows by hand (a loop of them).
const maxLinks = 40

func realPathDepth(p string, depth int) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	r := filepath.Join(realPathDepth(parent, depth), filepath.Base(p))
	if target, err := os.Readlink(r); err == nil && depth < maxLinks {
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(r), target)
		}
		return realPathDepth(filepath.Clean(target), depth+1)
	}
	return r
}

// getenv is the last value of name in env.
func getenv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}
