//go:build !linux

package proc_test

import "testing"

type exitWatch struct{}

// watchExit needs pidfd_open(2), which only Linux has.
func watchExit(t *testing.T, _ int) exitWatch {
	t.Skip("needs Linux")
	return exitWatch{}
}

func waitExited(*testing.T, exitWatch, int) {}
