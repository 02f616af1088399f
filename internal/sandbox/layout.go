package sandbox

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
)

// privateTmp is the directory a bwrap child gets a fresh, empty one of.
const privateTmp = "/tmp"

// layout is the policy made concrete for one child: real paths (symbolic
// links resolved, since a mount follows them), each once, those that do
// not exist left out.
type layout struct {
	// cwd is the child's working directory; work the tree it works in
	// (the project, or its task's worktree).
	cwd, work string
	// tmp is the private /tmp (bwrap); empty for none.
	tmp string
	// path is the executable, absolute.
	path string
	// binds are the writable paths and the read-only ones inside them
	// (or inside the private /tmp: the directories of the child's
	// executable and PATH, which stay readable), shallow first, so that
	// a deeper one is mounted over a shallower one.
	binds []bind
	// scratch are directories the child gets empty and writable, its
	// writes discarded: a gate's in-tree stores (Layers).
	scratch []string
	// hidden are the paths the child cannot see.
	hidden []hidden
	// env is the environment passed in.
	env []string
}

type bind struct {
	path string
	// source is what is mounted at path, when it is not path itself:
	// a Copy.
	source   string
	writable bool
}

type hidden struct {
	path string
	dir  bool
}

// resolve lays out the policy for the child l.
func (b *Box) resolve(l proc.Launch) (layout, error) {
	p := b.policy
	project := realPath(p.Project)
	cwd := cmp.Or(l.Dir, p.Project)
	if !filepath.IsAbs(cwd) {
		return layout{}, fmt.Errorf("working directory %q is not absolute", cwd)
	}
	realCwd := realPath(cwd)
	if realCwd == "" || project == "" {
		return layout{}, fmt.Errorf("working directory %s or project %s does not exist", cwd, p.Project)
	}
	if !within(realCwd, project) {
		// Only the project is ever writable: a child elsewhere would get
		// nothing to work on, or the wrong thing.
		return layout{}, fmt.Errorf("working directory %s is outside the project %s", cwd, p.Project)
	}
	out := layout{cwd: cwd, path: l.Path}
	if b.kind == KindBwrap {
		out.tmp = b.tmp
	}
	if !filepath.IsAbs(out.path) {
		out.path = filepath.Join(cwd, out.path)
	}

	// The place the child works: the project, or its task's worktree
	// alone.
	work := project
	if wt := realPath(p.Worktrees); wt != "" && within(realCwd, wt) && realCwd != wt {
		first, _, _ := strings.Cut(strings.TrimPrefix(realCwd, wt+"/"), "/")
		work = filepath.Join(wt, first)
	}
	out.work = work
	writable := []string{work}
	if g := realPath(p.GitDir); g != "" {
		writable = append(writable, g)
	}
	for _, w := range p.Writable {
		if r := realPath(b.expand(w, project)); r != "" {
			writable = append(writable, r)
		}
	}
	var copies []bind
	for _, c := range b.copies {
		path, src := realPath(c.Path), realPath(c.Source)
		if path == "" || src == "" {
			continue
		}
		if b.kind != KindBwrap {
			// sandbox-exec has no mounts: the path itself is writable
			// (docs/trust.md).
			writable = append(writable, path)
			continue
		}
		copies = append(copies, bind{path: path, source: src, writable: true})
		for _, ro := range c.ReadOnly {
			if r := realPath(ro); r != "" && within(r, path) {
				copies = append(copies, bind{path: r})
			}
		}
	}
	for _, w := range dedupe(writable) {
		out.binds = append(out.binds, bind{path: w, writable: true})
	}
	// After the writable paths: at the same depth, the copy is mounted
	// last and wins (sandbox.allow-write = ["~/.claude"] does not undo
	// it).
	out.binds = append(out.binds, copies...)
	for _, c := range copies {
		if c.source != "" {
			writable = append(writable, c.path)
		}
	}
	for _, ro := range p.ReadOnly {
		r := realPath(b.expand(ro, project))
		if r == "" || !slices.ContainsFunc(writable, func(w string) bool { return within(r, w) }) {
			continue // already read-only: the host is
		}
		if slices.ContainsFunc(out.binds, func(x bind) bool { return x.path == r }) {
			continue
		}
		out.binds = append(out.binds, bind{path: r})
	}
	if out.tmp != "" {
		visible := visibleDirs(out.tmp, out.path, l.Env, writable)
		if e := b.egress(); e != nil {
			visible = append(visible, visibleDirs(out.tmp, e.Bridge, nil, writable)...)
		}
		for _, v := range dedupe(visible) {
			out.binds = append(out.binds, bind{path: v})
		}
	}
	sortBinds(out.binds)

	for _, h := range b.policy.Hidden {
		r := realPath(b.expand(h, project))
		if r == "" || slices.ContainsFunc(out.hidden, func(x hidden) bool { return x.path == r }) {
			continue
		}
		if within(work, r) {
			return layout{}, fmt.Errorf("%s is hidden (sandbox.deny) but holds the project %s", h, work)
		}
		if out.tmp != "" && within(r, out.tmp) &&
			!slices.ContainsFunc(out.binds, func(x bind) bool { return within(r, x.path) }) {
			continue // the private /tmp hides it already
		}
		fi, err := os.Stat(r)
		if err != nil {
			continue
		}
		out.hidden = append(out.hidden, hidden{path: r, dir: fi.IsDir()})
	}

	out.env = b.filterEnv(l.Env)
	return out, nil
}

// sortBinds puts binds shallow first, so that a deeper one is mounted
// over a shallower one; at the same depth the order stays.
func sortBinds(binds []bind) {
	slices.SortStableFunc(binds, func(x, y bind) int {
		return cmp.Compare(strings.Count(x.path, "/"), strings.Count(y.path, "/"))
	})
}

// visibleDirs are the directories of the executable path and of the PATH
// in env that lie in the private /tmp and outside the writable paths:
// they are bound read-only, so that the programs the child is given keep
// running.
func visibleDirs(tmp, path string, env, writable []string) []string {
	dirs := append([]string{filepath.Dir(path)}, filepath.SplitList(getenv(env, "PATH"))...)
	var out []string
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			continue
		}
		r := realPath(d)
		if r == "" || !within(r, tmp) || r == tmp || slices.Contains(out, r) ||
			slices.ContainsFunc(writable, func(w string) bool { return within(r, w) }) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// filterEnv keeps the variables of env the box lets in. Behind ralph's
// proxy the variables naming a proxy are ralph's: the bridge sets them
// (bwrap), or they are set here (sandbox-exec).
func (b *Box) filterEnv(env []string) []string {
	allowed := slices.Concat(BaseEnv(), b.policy.Env, b.pass)
	e := b.egress()
	var ralphs []string // the variables ralph sets itself
	if e != nil {
		ralphs = ProxyVars()
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "TMPDIR" && b.kind == KindBwrap {
			continue // set below: the private /tmp
		}
		if slices.Contains(ralphs, k) {
			continue
		}
		if slices.ContainsFunc(allowed, func(p string) bool { return matchName(p, k) }) ||
			(k == "TMPDIR" && b.kind == KindSandboxExec) {
			out = append(out, kv)
		}
	}
	if b.kind == KindBwrap {
		out = append(out, "TMPDIR="+b.tmp)
	}
	if e != nil && b.kind == KindSandboxExec {
		out = append(out, ProxyEnv("http://"+e.Addr, e.NoProxy)...)
	}
	return out
}

// ProxyEnv are the variables that send a child's HTTP and HTTPS through
// the proxy at url, but for the hosts in noProxy. Node's own fetch reads
// them only when NODE_USE_ENV_PROXY says so (Node 24; older versions
// ignore it, and the CLIs built on them read the variables themselves).
func ProxyEnv(url string, noProxy []string) []string {
	np := strings.Join(noProxy, ",")
	return []string{
		"HTTP_PROXY=" + url, "HTTPS_PROXY=" + url, "http_proxy=" + url, "https_proxy=" + url,
		"NO_PROXY=" + np, "no_proxy=" + np, "NODE_USE_ENV_PROXY=1",
	}
}

// expand makes a policy path absolute: "~/x" under HOME, "$VAR/x" under
// the variable's value, a relative one under the project. It returns ""
// when what it needs is not set.
func (b *Box) expand(p, project string) string {
	switch {
	case p == "":
		return ""
	case p == "~" || strings.HasPrefix(p, "~/"):
		home := getenv(b.env, "HOME")
		if !filepath.IsAbs(home) {
			return ""
		}
		return filepath.Join(home, strings.TrimPrefix(p[1:], "/"))
	case strings.HasPrefix(p, "$"):
		name, rest, _ := strings.Cut(p[1:], "/")
		v := getenv(b.env, name)
		if !filepath.IsAbs(v) {
			return ""
		}
		return filepath.Join(v, rest)
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	}
	return filepath.Join(project, p)
}

// realPath is p with its symbolic links resolved; "" when p is empty or
// does not exist.
func realPath(p string) string {
	if p == "" {
		return ""
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	if abs, err := filepath.Abs(r); err == nil {
		return abs
	}
	return r
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func dedupe(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// getenv returns the last value of name in env.
func getenv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}
