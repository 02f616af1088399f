//go:build !linux

package proc

import (
	"os"
	"syscall"
)

// sysProcAttr puts the child in its own group (in a session of its own
// when l.Detach is set). Only Linux has a parent-death signal; elsewhere
// the guardian alone stops what a dead ralph left, and namespaces
// (l.Namespaced), which no sandbox of another platform asks for.
func sysProcAttr(_ syscall.Signal, l Launch) *syscall.SysProcAttr {
	if l.Detach {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

// growPipe keeps the default pipe buffer: only Linux lets it grow.
func growPipe(*os.File) {}
