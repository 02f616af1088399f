package state

import "testing"

func TestLive(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]bool{
		StatusRunning: true, StatusWaiting: true, StatusPaused: true,
		StatusDone: false, StatusStopped: false, StatusStuck: false, StatusFailed: false,
		StatusInterrupted: false, StatusCrashed: false, "": false,
	} {
		if got := Live(status); got != want {
			t.Errorf("Live(%q) = %v, want %v", status, got, want)
		}
	}
}
