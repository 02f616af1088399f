//go:build !linux

package proc

import "syscall"

// sysProcAttr puts the child in its own group. Only Linux has a
// parent-death signal; elsewhere the guardian alone stops what a dead
// ralph left.
func sysProcAttr(syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
