package sandbox

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
	// ReadOnly are the places the run found read-only because their
	// throwaway layer could not be laid, each with why.
	ReadOnly []string
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
// the run also gets one over each place it sees but may not keep (the
// home, the host's directories, the git directory: Box.throwaway), in a
// tmpfs of its namespace's that LayersCommand hands ralph (an open
// descriptor, through a socket in a directory of the run's): ralph lists
// what the run wrote there once it has ended, and the memory goes when
// ralph lets go of it, whatever ended the run. A write there that a
// read-only mount would refuse succeeds, and is seen. With a proxy, the
// run gets a listener of its own (WithGateEgress).
func (b *Box) Watch() (proc.Wrapper, func() Seen, error) {
	c := *b
	var base, home string
	var report *net.UnixListener
	if b.layers != nil && b.kind == KindBwrap {
		home = realPath(b.expand("~", b.policy.Project))
		if parent := layerParent(home); parent != "" {
			sweepGateDirs(parent)
			dir, err := os.MkdirTemp(parent, gateDirPrefix)
			if err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
				removeTree(dir)
				return nil, nil, err
			}
			report, err = net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, reportSocket), Net: "unix"})
			if err != nil {
				removeTree(dir)
				return nil, nil, err
			}
			l := *b.layers
			l.base, base = dir, dir
			c.layers = &l
		}
	}
	var denied func() []Refusal
	stop := func() {}
	if b.gateEgress != nil && b.policy.Network == NetworkProxy {
		e, d, s, err := b.gateEgress()
		if err != nil {
			if base != "" {
				report.Close()
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
			if root, ok := received(report); ok {
				s.Discarded, s.More, s.ReadOnly = discarded(fmt.Sprintf("/proc/self/fd/%d", root), home)
				closeFD(root)
			}
			report.Close()
			removeTree(base)
		}
		return s
	}, nil
}

// A gate run's directory is parent/gateDirPrefix*; ownerFile in it holds
// the process id of the ralph that made it.
const (
	gateDirPrefix = "ralph-gate-"
	ownerFile     = "owner"
)

// sweepGateDirs removes the gate runs' directories in parent that a ralph
// which is gone left (killed before it could remove them): one whose
// owner is not a live process, or, with no owner written, made over an
// hour ago. Another ralph's live run keeps its own.
func sweepGateDirs(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, gateDirPrefix+"*"))
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue // not one a gate run made
		}
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			if time.Since(fi.ModTime()) > time.Hour {
				removeTree(d)
			}
			continue
		}
		if pid, err := strconv.Atoi(string(b)); err == nil && pid > 0 && !alive(pid) {
			removeTree(d)
		}
	}
}

// reportSocket is the socket in a gate run's directory where
// LayersCommand hands ralph its throwaway layers' tmpfs.
const reportSocket = "report"

// layerParent is where a gate run's directory is made: /tmp, which the
// gate's own private /tmp hides and which gets no layer, unless it is in
// home; else the first of the other temporary directories outside home;
// "" for none.
func layerParent(home string) string {
	for _, d := range []string{privateTmp, os.TempDir(), "/var/tmp"} {
		if r := realPath(d); r != "" && isDir(r) && (home == "" || !within(r, home)) {
			return r
		}
	}
	return ""
}
