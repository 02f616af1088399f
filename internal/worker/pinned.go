package worker

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/ralph-loop/ralph/internal/termtext"
)

// A worker obeys the ralph.toml it approved at its start (or that
// --trust vouched for) in every task's worktree; a commit another
// worker's agent made may change it on the run branch. So the files in
// Pinned must read, at every commit the worker checks out or pulls, as
// they did at the run's base commit (the first the worker fetched): a
// difference stops the worker, --trust or not, naming the commit.

// pinned is what the Pinned files held at the base commit.
type pinned struct {
	base  string
	files map[string][]byte // nil: the file was not there
}

// checkPinned compares the Pinned files at commit with the base, which
// the first call records.
func (w *Worker) checkPinned(ctx context.Context, commit string) error {
	if len(w.Pinned) == 0 {
		return nil
	}
	read := func(p string) []byte {
		b, err := w.Ledger.Git.Show(ctx, commit, p)
		if err != nil {
			return nil // not there (or not readable: then not as at the base either)
		}
		return b
	}
	if w.pins == nil {
		w.pins = &pinned{base: commit, files: map[string][]byte{}}
		for _, p := range w.Pinned {
			w.pins.files[p] = read(p)
		}
		return nil
	}
	for _, p := range w.Pinned {
		if now, was := read(p), w.pins.files[p]; !bytes.Equal(now, was) || (now == nil) != (was == nil) {
			by := "a commit on the run branch changed it"
			if c, err := w.Ledger.Git.FirstChange(ctx, w.pins.base, commit, p); err == nil && c != "" {
				by = "commit " + short(c) + " changed it"
				if msg, err := w.Ledger.Git.CommitMessage(ctx, c); err == nil {
					subject, _, _ := strings.Cut(msg, "\n")
					by += " (" + termtext.Text(subject) + ")"
				}
			}
			return fmt.Errorf("%s at commit %s of %s is not the one at the run's base commit %s: %s, another worker's agent "+
				"may have, and this worker obeys only the configuration it started with; "+
				"review the change, then start the workers again", p, short(commit), w.Ledger.Branch, short(w.pins.base), by)
		}
	}
	return nil
}
