package loop

import (
	"fmt"
	"os"
	"testing"
)

// TestRunLeavesNoDescriptorOpen: a run of many iterations (prompt and
// transcript files, state writes in the background) ends with no more
// descriptors open than it started with. Not parallel, so that no other
// test opens any meanwhile.
func TestRunLeavesNoDescriptorOpen(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc/self/fd")
	}
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("T-%03d", i+1)
	}
	run := func() {
		f := newFixture(t, ids, done())
		f.opts.MaxIterations = len(ids)
		f.repo = &memRepo{}
		f.agent.before = func(int) { f.repo.tree++ }
		if err := f.run(t); err != nil {
			t.Fatal(err)
		}
	}
	run() // opens what stays open (the runtime's own)
	before := openFDs(t)
	run()
	if after := openFDs(t); after > before {
		t.Errorf("open descriptors: %d before a run of %d iterations, %d after", before, len(ids), after)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}
