package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/ralph-loop/ralph/internal/proc"
)

// LayersCommand is the hidden command of ralph's that lays a quality
// gate's throwaway layers (Layers) before bubblewrap starts: ralph starts
// it as root of a user and mount namespace of its own
// (proc.Launch.Namespaced), it mounts there, and it executes bubblewrap,
// which binds the layered view. Nothing it mounts is seen outside that
// namespace, and it all goes when the gate ends.
const LayersCommand = "__sandbox-layers"

// Layers are what a quality gate gets fresh on each run, so that nothing
// the agent wrote is replayed to it as a verdict: a cached test result
// (Go's build cache), a list of the tests that failed last (pytest's
// --lf), a build task's recorded output (Nx, Turborepo).
type Layers struct {
	// Exe is ralph's executable, which has LayersCommand.
	Exe string
	// Caches are the toolchains' cache directories (FindCaches): the gate
	// reads what the user's own builds put there, and writes to a layer
	// of its own over it, discarded afterwards. One the agent may write
	// (sandbox.allow-write, the project) is no gate's base: the gate gets
	// it empty.
	Caches []string
	// Stores are paths, relative to the tree the gate works in, of the
	// ignored stores that replay verdicts or pick the tests to run
	// (DefaultStores): the agent writes them, so the gate gets each empty,
	// its writes discarded.
	Stores []string
	// base is one gate run's directory (Watch), where its throwaway
	// layers are made (throwaway): the run writes anywhere the host would
	// let it, into layers ralph lists once it has ended; "" leaves what
	// the gate may not keep read-only.
	base string
}

// DefaultStores are the in-tree stores that replay results or select
// tests: pytest's cache (--lf, --ff, --sw), testmon's database, Jest's
// cache, Nx's and Turborepo's local caches.
func DefaultStores() []string {
	return []string{".pytest_cache", ".testmondata", "node_modules/.cache/jest", ".nx/cache", ".turbo"}
}

// ForGates returns the box the quality gates run in: the box, with l's
// throwaway layers where bubblewrap can have them. sandbox-exec cannot
// mount: its gates get empty caches through the toolchains' variables
// instead (ColdEnv).
func (b *Box) ForGates(l Layers) *Box {
	c := *b
	c.layers = &l
	return &c
}

// layered is how the layers of a gate laid out as r are made: the
// arguments of LayersCommand up to the bwrap command line, and the cache
// directories bwrap must bind writable (over the read-only host).
type layered struct {
	args   []string
	caches []string
}

// layer works out the gate's layers for the layout r: each cache that
// exists, once (one inside another is the outer one's), over the
// user's content unless the agent may write it, and each store of the
// tree the gate works in, which bwrap covers with a tmpfs when it is a
// real directory (LayersCommand refuses a link or a file there: the gate
// would read it as the agent left it).
func (b *Box) layer(r *layout) layered {
	var out layered
	var caches []string
	for _, c := range b.layers.Caches {
		if p := realPath(b.expand(c, b.policy.Project)); p != "" && isDir(p) {
			caches = append(caches, p)
		}
	}
	slices.SortFunc(caches, func(x, y string) int { return len(x) - len(y) })
	for _, c := range caches {
		if slices.ContainsFunc(out.caches, func(o string) bool { return within(c, o) }) ||
			slices.ContainsFunc(r.hidden, func(h hidden) bool { return within(c, h.path) }) {
			continue
		}
		flag := "--over"
		if slices.ContainsFunc(r.binds, func(m bind) bool { return (m.writable || m.source != "") && within(c, m.path) }) {
			flag = "--empty"
		}
		out.args = append(out.args, flag, c)
		out.caches = append(out.caches, c)
	}
	if b.layers.base != "" {
		// After the caches: a cache in the home is not one the gate may
		// write as it is (--empty).
		out.args = append(out.args, b.throwaway(r, out.caches)...)
	}
	for _, s := range b.layers.Stores {
		p := r.work + "/" + s
		out.args = append(out.args, "--store", p)
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() && realPath(p) == p {
			r.scratch = append(r.scratch, p)
		}
	}
	out.args = append(out.args, "--")
	return out
}

// wrapLayered starts l (laid out as r) as a gate with its layers: ralph's
// LayersCommand, namespaced, which lays them and executes bwrap.
func (b *Box) wrapLayered(l proc.Launch, r layout) proc.Launch {
	ly := b.layer(&r) // first: it lays out r's stores and home
	return b.launchLayered(l, r, ly)
}

// launchLayered starts l (laid out as r) through LayersCommand with the
// layers ly.
func (b *Box) launchLayered(l proc.Launch, r layout, ly layered) proc.Launch {
	for _, c := range ly.caches {
		r.binds = append(r.binds, bind{path: c, writable: true})
	}
	sortBinds(r.binds)
	inner := b.wrapBwrap(l, r)
	// bwrap runs as the namespace's root: the gate runs as ralph's user
	// and group, as it would without the layers.
	ids := []string{"--uid", strconv.Itoa(os.Getuid()), "--gid", strconv.Itoa(os.Getgid())}
	argv := slices.Concat([]string{b.layers.Exe, LayersCommand}, ly.args, inner.Argv[:1], ids, inner.Argv[1:])
	return proc.Launch{Path: b.layers.Exe, Argv: argv, Dir: l.Dir, Env: inner.Env, Supervisor: true, Detach: true, Namespaced: true}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// AgentWritten are the caches of l the agent may write (under
// sandbox.allow-write, or in the project): gates get them empty, never as
// the agent left them, and a go test outside ralph would replay what it
// left there.
func (b *Box) AgentWritten(l Layers) ([]string, error) {
	r, err := b.resolve(proc.Launch{Path: "/bin/true", Argv: []string{"true"}, Dir: b.policy.Project, Env: b.env})
	if err != nil {
		return nil, err
	}
	c := *b
	c.layers = &l
	var out []string
	ly := c.layer(&r)
	for i := 0; i+1 < len(ly.args); i += 2 {
		if ly.args[i] == "--empty" {
			out = append(out, ly.args[i+1])
		}
	}
	return out, nil
}

// keptDir is where the agent's layer over the cache dir is kept in keep:
// a directory named for the cache's path, the same at every start.
func keptDir(keep, dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(keep, hex.EncodeToString(sum[:8]))
}

// throwawayHome is the home a gate laid out as r gets a throwaway layer
// over (Watch), resolved; "" for none: no layer asked for, no home, or
// one the gate may write already (it is in the project, or under
// sandbox.allow-write) or may not see at all.
func (b *Box) throwawayHome(r *layout) string {
	if b.layers.base == "" {
		return ""
	}
	home := realPath(b.expand("~", b.policy.Project))
	if home == "" || home == "/" || !isDir(home) ||
		slices.ContainsFunc(r.binds, func(m bind) bool { return m.writable && within(home, m.path) }) ||
		slices.ContainsFunc(r.hidden, func(h hidden) bool { return within(home, h.path) }) {
		return ""
	}
	return home
}
