//go:build !linux

package proc

import (
	"os"
	"syscall"
)

// sysProcAttr puts the child in its own group (in a session of its own
// when detach is set). Only Linux has a parent-death signal; elsewhere the
// guardian alone stops what a dead ralph left.
func sysProcAttr(_ syscall.Signal, detach bool) *syscall.SysProcAttr {
	if detach {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

// growPipe keeps the default pipe buffer: only Linux lets it grow.
func growPipe(*os.File) {}
