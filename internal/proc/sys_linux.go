package proc

import "syscall"

// sysProcAttr puts the child in its own group and has the kernel send it
// sig when the thread that started it ends; Go's fork re-checks the
// parent after setting it, so a ralph that died during the fork is seen.
func sysProcAttr(sig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}
