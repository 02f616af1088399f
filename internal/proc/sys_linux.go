package proc

import "syscall"

// sysProcAttr puts the child in its own group (in a session of its own
// when detach is set) and has the kernel send it sig when the thread that
// started it ends; Go's fork re-checks the parent after setting it, so a
// ralph that died during the fork is seen.
func sysProcAttr(sig syscall.Signal, detach bool) *syscall.SysProcAttr {
	if detach {
		// setsid makes a group too; setpgid after it would fail.
		return &syscall.SysProcAttr{Setsid: true, Pdeathsig: sig}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}
