package sandbox

import (
	"cmp"
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
)

// bwrapArgs are bubblewrap's arguments for a child laid out as r, up to
// and including the "--" before the command.
//
//   - --unshare-all: namespaces of its own (user where the kernel allows,
//     mount, pid, ipc, uts, cgroup, and net unless the network is open:
//     then --share-net). In its own pid namespace the child sees none of
//     the host's processes, ralph's included, and can signal none of
//     them; in its own network namespace it reaches nothing of the host's,
//     not its loopback, not its abstract unix sockets (X11, D-Bus), only
//     ralph's proxy when the policy has one (Egress), bound in.
//   - --die-with-parent: the whole sandbox dies with the bwrap that proc
//     started (which dies with ralph).
//   - --cap-drop ALL: a child that is root (in a container, say) must not
//     remount the read-only host writable or unmount what hides a path.
//   - the host read-only, a /dev and /proc of its own, a private /tmp,
//     then the writable and read-only binds, shallow first (a copy is
//     mounted from its source; bwrap reads every source in the host's
//     tree, so a read-only path inside a copy is the host's), a gate's
//     in-tree stores empty (Layers), then the hidden paths (an empty read-only tmpfs over a directory, /dev/null
//     over a file), which win.
func bwrapArgs(r layout, network string, egress *Egress) []string {
	args := []string{"--unshare-all"}
	if network == NetworkOpen {
		args = append(args, "--share-net")
	}
	args = append(args, "--die-with-parent", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", r.tmp)
	if network == NetworkProxy && egress != nil {
		args = append(args, "--bind", egress.Socket, bridgeSocket)
	}
	for _, m := range r.binds {
		flag := "--ro-bind"
		if m.writable {
			flag = "--bind"
		}
		args = append(args, flag, cmp.Or(m.source, m.path), m.path)
	}
	for _, s := range r.scratch {
		args = append(args, "--tmpfs", s)
	}
	for _, h := range r.hidden {
		if h.dir {
			args = append(args, "--tmpfs", h.path, "--remount-ro", h.path)
		} else {
			args = append(args, "--ro-bind", "/dev/null", h.path)
		}
	}
	return append(args, "--chdir", r.cwd, "--")
}

// wrapBwrap starts l inside bubblewrap. bwrap stays the command's parent,
// in its group, until it exits: a supervisor, which a stop's SIGTERM
// spares (or it would die at once and the namespace with it, before the
// command's grace). The command runs in a session of its own, away from
// ralph's terminal.
//
// With ralph's proxy (Egress) the command runs under the bridge, which
// listens on the sandbox's loopback and gives the command the variables
// that name it. ralph knows the bridge by its first argument, whatever
// its file is named (bwrap has no --argv0 before 0.9).
func (b *Box) wrapBwrap(l proc.Launch, r layout) proc.Launch {
	e := b.egress()
	argv := append([]string{b.exe}, bwrapArgs(r, b.policy.Network, e)...)
	if e != nil {
		argv = append(argv, e.Bridge, BridgeCommand, "--socket", bridgeSocket,
			"--no-proxy", strings.Join(e.NoProxy, ","), "--")
	}
	argv = append(append(argv, r.path), l.Argv[1:]...)
	return proc.Launch{Path: b.exe, Argv: argv, Dir: l.Dir, Env: r.env, Supervisor: true, Detach: true}
}

// egress is the policy's proxy when a child goes out through it, or nil.
func (b *Box) egress() *Egress {
	if b.policy.Network != NetworkProxy {
		return nil
	}
	return b.policy.Egress
}
