package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
)

// Refusal is something the sandbox refused a child, as ralph saw it
// itself (never as the child's output tells it): a host its proxy
// denied. A quality gate that fails after one failed because of the
// sandbox, perhaps, but not because of the work it judged.
type Refusal struct {
	// Host is the "host:port" the proxy denied.
	Host string
	// Key is the configuration key that would allow it
	// (sandbox.allow-hosts).
	Key string
	// Reason is the proxy's own words, naming Host.
	Reason string
}

// String says what was refused and the key that would allow it.
func (r Refusal) String() string {
	if strings.Contains(r.Reason, r.Key) {
		return r.Reason
	}
	return r.Reason + " (" + r.Key + ")"
}

// Seen is what ralph saw of one gate run's sandbox (Watch).
type Seen struct {
	// Refused are the hosts its proxy denied the run.
	Refused []Refusal
	// Discarded are the paths the run wrote (or removed) in the home
	// outside the places a gate keeps (the project, the caches' layers,
	// sandbox.allow-write), "~/" and the path in the home: a throwaway
	// layer took them, gone with it. More counts those past maxDiscarded.
	Discarded []string
	More      int
	// HomeReadOnly says why the run found the home read-only, when its
	// layer could not be laid.
	HomeReadOnly string
}

// maxDiscarded bounds Seen.Discarded.
const maxDiscarded = 5

// GateEgress opens a listener of the proxy's own for one gate run, so
// that what it denies there is known to be that run's (with --parallel,
// the agents and other worktrees' gates go through the same proxy at the
// same time): the Egress the run's box uses, what was denied there so
// far, and stop, which ends the listener.
type GateEgress func() (e Egress, denied func() []Refusal, stop func(), err error)

// WithGateEgress returns the box with each gate run (Watch) going out
// through a listener of its own, opened by open.
func (b *Box) WithGateEgress(open GateEgress) *Box {
	c := *b
	c.gateEgress = open
	return &c
}

// Watch returns the box one gate run works in, and what ralph saw of it,
// to be asked once the run has ended (it then lets go of what Watch
// opened; call it exactly once). With its throwaway layers (bubblewrap),
// the run also gets one over the home, on disk in a directory of the
// run's outside it, listed and removed afterwards: a write there that the
// read-only home would refuse succeeds, and is seen. With a proxy, the
// run gets a listener of its own (WithGateEgress).
func (b *Box) Watch() (proc.Wrapper, func() Seen, error) {
	c := *b
	var base, home string
	if b.layers != nil && b.kind == KindBwrap {
		home = realPath(b.expand("~", b.policy.Project))
		if parent := layerParent(home); parent != "" {
			dir, err := os.MkdirTemp(parent, "ralph-gate-")
			if err != nil {
				return nil, nil, err
			}
			l := *b.layers
			l.home, base = dir, dir
			c.layers = &l
		}
	}
	var denied func() []Refusal
	stop := func() {}
	if b.gateEgress != nil && b.policy.Network == NetworkProxy {
		e, d, s, err := b.gateEgress()
		if err != nil {
			if base != "" {
				removeTree(base)
			}
			return nil, nil, err
		}
		c.policy.Egress = &e
		denied, stop = d, s
	}
	c.gateEgress = nil
	return &c, func() Seen {
		var s Seen
		if denied != nil {
			s.Refused = denied()
		}
		stop()
		if base != "" {
			s.Discarded, s.More, s.HomeReadOnly = discarded(base)
			removeTree(base)
		}
		return s
	}, nil
}

// layerParent is where a gate run's layer over home is made: the first
// of the temporary directories that is outside home (an overlay's upper
// layer cannot be inside its lower one); "" for none.
func layerParent(home string) string {
	if home == "" {
		return ""
	}
	for _, d := range []string{os.TempDir(), "/var/tmp", "/tmp"} {
		if r := realPath(d); r != "" && isDir(r) && !within(r, home) {
			return r
		}
	}
	return ""
}

// discarded lists what a gate run left in its home's layer in base (a
// file, a link, a removal, an empty directory it made), as "~/" and the
// path, and why the layer could not be laid, if it could not.
func discarded(base string) (paths []string, more int, failed string) {
	if b, err := os.ReadFile(filepath.Join(base, "failed")); err == nil {
		return nil, 0, string(b)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, err.Error()
	}
	upper := filepath.Join(base, "upper")
	_ = filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == upper {
			return nil //nolint:nilerr // a part it cannot read is left out of the list, not an error of the gate's
		}
		if d.IsDir() {
			if entries, err := os.ReadDir(p); err != nil || len(entries) > 0 {
				return nil
			}
		}
		if len(paths) >= maxDiscarded {
			more++
			return nil
		}
		rel, _ := filepath.Rel(upper, p)
		paths = append(paths, "~/"+filepath.ToSlash(rel))
		return nil
	})
	return paths, more, ""
}
