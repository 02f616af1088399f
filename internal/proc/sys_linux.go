package proc

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the child in its own group (in a session of its own
// when l.Detach is set) and has the kernel send it sig when the thread
// that started it ends; Go's fork re-checks the parent after setting it,
// so a ralph that died during the fork is seen. With l.Namespaced it
// starts in a user and mount namespace of its own, as their root.
func sysProcAttr(sig syscall.Signal, l Launch) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
	if l.Detach {
		// setsid makes a group too; setpgid after it would fail.
		a = &syscall.SysProcAttr{Setsid: true, Pdeathsig: sig}
	}
	if l.Namespaced {
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	return a
}

// streamPipeSize is the pipe buffer asked for a stream the caller reads
// (an agent's output): at the default 64 KiB an agent printing megabytes
// of tool results wakes the reader, and is woken, sixteen times as often.
// It is the unprivileged limit (/proc/sys/fs/pipe-max-size) by default.
const streamPipeSize = 1 << 20

// growPipe asks the kernel for a bigger buffer on the pipe r reads. It is
// only a speed-up: a system that refuses (a lower pipe-max-size, or the
// user's pipe quota spent) keeps the default.
func growPipe(r *os.File) {
	if sc, err := r.SyscallConn(); err == nil {
		_ = sc.Control(func(fd uintptr) {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, streamPipeSize)
		})
	}
}
