package sandbox

import (
	"cmp"

	"github.com/ralph-loop/ralph/internal/proc"
)

// bwrapArgs are bubblewrap's arguments for a child laid out as r, up to
// and including the "--" before the command.
//
//   - --unshare-all: namespaces of its own (user where the kernel allows,
//     mount, pid, ipc, uts, cgroup, and net unless the network is on: then
//     --share-net). In its own pid namespace the child sees none of the
//     host's processes, ralph's included, and can signal none of them.
//   - --die-with-parent: the whole sandbox dies with the bwrap that proc
//     started (which dies with ralph).
//   - --cap-drop ALL: a child that is root (in a container, say) must not
//     remount the read-only host writable or unmount what hides a path.
//   - the host read-only, a /dev and /proc of its own, a private /tmp,
//     then the writable and read-only binds, shallow first (a copy is
//     mounted from its source; bwrap reads every source in the host's
//     tree, so a read-only path inside a copy is the host's), then the
//     hidden paths (an empty read-only tmpfs over a directory, /dev/null
//     over a file), which win.
func bwrapArgs(r layout, network bool) []string {
	args := []string{"--unshare-all"}
	if network {
		args = append(args, "--share-net")
	}
	args = append(args, "--die-with-parent", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", r.tmp)
	for _, m := range r.binds {
		flag := "--ro-bind"
		if m.writable {
			flag = "--bind"
		}
		args = append(args, flag, cmp.Or(m.source, m.path), m.path)
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
func (b *Box) wrapBwrap(l proc.Launch, r layout) proc.Launch {
	argv := append([]string{b.exe}, bwrapArgs(r, b.policy.Network)...)
	argv = append(append(argv, r.path), l.Argv[1:]...)
	return proc.Launch{Path: b.exe, Argv: argv, Dir: l.Dir, Env: r.env, Supervisor: true, Detach: true}
}
