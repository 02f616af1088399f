package loop

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/state"
)

// TestTranscriptOnAFullDisk: a transcript that cannot be written (here
// /dev/full, which answers every write with ENOSPC) never fails the
// agent's output: the iteration's result is recorded, the task marked
// done, and then the run stops with an error that says the disk is full.
func TestTranscriptOnAFullDisk(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full to write to: %v", err)
	}
	f := newFixture(t, []string{"A", "B"}, done())
	f.store.transcript = "/dev/full"
	f.agent.output = []byte("{\"type\":\"result\"}\n")
	err := f.run(t)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "the disk is full") {
		t.Fatalf("run error %v, want one that says the disk is full", err)
	}
	if diff := cmp.Diff([]string{"A:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if st := f.store.st; st.Status != state.StatusFailed || !strings.Contains(st.Message, "could not write the transcript") {
		t.Errorf("state %q: %q", st.Status, st.Message)
	}
	if len(f.warns) == 0 || !strings.Contains(f.warns[0], "the run stops after this iteration") {
		t.Errorf("warnings %q", f.warns)
	}
}
