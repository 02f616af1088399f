//go:build !linux

package proc

// Without /proc, whether a process is gone, or which processes work in a
// directory, cannot be told: callers take the safe side.

// StartTime is unknown off Linux.
func StartTime(int) (uint64, bool) { return 0, false }

// Gone cannot be told off Linux.
func Gone(int, uint64) (gone, known bool) { return false, false }

// RunningIn cannot be told off Linux.
func RunningIn(string, string) ([]int, bool) { return nil, false }
