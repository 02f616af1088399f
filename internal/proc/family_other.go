//go:build !linux

package proc

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// Off Linux there is no child subreaper and no /proc to read a process's
// environment from: descendants that leave their child's group are not
// found, and the guardian stops the registered groups only.

func becomeSubreaper() error { return nil }

func selfExecutable() (string, error) { return os.Executable() }

func (*Family) sweepChild(string, int) []Leftover { return nil }

func (*Family) sweepAll() []Leftover { return nil }

type procInfo struct{ pid, pgrp int }

func findMarked(string) []procInfo { return nil }

func cmdline(int) string { return "" }

// stopFamily stops the groups: SIGTERM, up to grace for them to go, then
// SIGKILL.
func stopFamily(_ string, groups []int, grace time.Duration) []Leftover {
	if grace > 0 {
		for _, g := range groups {
			_ = syscall.Kill(-g, syscall.SIGTERM)
		}
		for end := time.Now().Add(grace); time.Now().Before(end) && anyAlive(groups); {
			time.Sleep(20 * time.Millisecond) // a group has nothing to wait on
		}
	}
	for _, g := range groups {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
	return nil
}

func anyAlive(groups []int) bool {
	for _, g := range groups {
		if err := syscall.Kill(-g, 0); err == nil || !errors.Is(err, syscall.ESRCH) {
			return true
		}
	}
	return false
}

// termMembers sends SIGTERM to the whole group: off Linux no wrapper is a
// supervisor (sandbox-exec runs the command in its own place).
func termMembers(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGTERM) }
