package proc_test

import (
	"errors"
	"syscall"
	"testing"
)

// sysPidfdOpen is pidfd_open(2), the same number on every architecture;
// the syscall package predates it.
const sysPidfdOpen = 434

// exitWatch is a pidfd: it becomes readable when its process exits, so a
// test waits for the exit itself rather than polling. Opened while the
// process is alive (or a zombie), it cannot mistake a reused pid for it.
// fd -1 is a process already gone.
type exitWatch struct{ fd int }

// watchExit opens an exitWatch on pid.
func watchExit(t *testing.T, pid int) exitWatch {
	t.Helper()
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ESRCH {
		return exitWatch{fd: -1} // already exited and reaped
	}
	if errno != 0 {
		t.Fatalf("pidfd_open(%d): %v", pid, errno)
	}
	t.Cleanup(func() { syscall.Close(int(fd)) })
	return exitWatch{fd: int(fd)}
}

// waitExited waits for w's process to exit; it fails the test when the
// process is still alive after a bound far beyond any grace the tests use.
func waitExited(t *testing.T, w exitWatch, pid int) {
	t.Helper()
	if w.fd < 0 {
		return
	}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(ep)
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, w.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(w.fd)}); err != nil {
		t.Fatal(err)
	}
	events := make([]syscall.EpollEvent, 1)
	for {
		n, err := syscall.EpollWait(ep, events, 30_000)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("process %d is still alive", pid)
		}
		return
	}
}
