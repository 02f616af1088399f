package loop

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
)

// When resources run out (a full disk, too many open files), the run
// stops with an error that says so and what to do, never with a plan or a
// state.json cut short: their writes are atomic, history's lines are
// whole or not there, and a transcript that cannot be written gives its
// space back so the iteration's result can still be recorded.

// diskFull reports an error that says the disk, or the user's quota, is
// full.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// ResourceHint says what to do about an error caused by a resource
// running out, "" for other errors.
func ResourceHint(err error) string {
	switch {
	case err == nil:
		return ""
	case diskFull(err):
		return "the disk is full: free some space, then run again " +
			"(the plan and .ralph/state.json are written whole or not at all, so nothing is half-written)"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "raise the open-file limit (ulimit -n) or stop other programs, then run again"
	}
	return ""
}

// stopFor remembers the first error that must stop the run once the
// iteration is recorded: a full disk, where the next iteration could
// record nothing either.
func (r *runner) stopFor(err error) {
	if r.stop == nil && diskFull(err) {
		r.stop = err
	}
}

// stopping is the error that ends the run after this iteration, nil to go
// on.
func (r *runner) stopping() error {
	if r.stop == nil {
		return nil
	}
	if hint := ResourceHint(r.stop); hint != "" {
		return fmt.Errorf("%w; %s", r.stop, hint)
	}
	return r.stop
}

// projectGone says so when the project directory no longer exists: every
// later error follows from it.
func (r *runner) projectGone(err error) error {
	if err == nil || r.opts.Dir == "" {
		return err
	}
	if _, serr := os.Stat(r.opts.Dir); errors.Is(serr, fs.ErrNotExist) {
		return fmt.Errorf("the project directory %s no longer exists (it was removed during the run): %w", r.opts.Dir, err)
	}
	return err
}

// transcript is the file an iteration's raw output streams to. A write
// that fails stops the writing, never the agent: the result is read from
// the stream all the same. On a full disk the file is emptied, which
// gives its space back for the plan, the state and the history line.
type transcript struct {
	f   *os.File
	err error
	// left is what this iteration may still store; runLeft, the run's
	// (the runner's, shared by its iterations). cut: the marker is
	// written.
	left    int64
	runLeft *atomic.Int64
	cut     bool
}

// Default bounds of what transcripts keep (Options.TranscriptMax and
// TranscriptMaxRun): an agent printing without end must not fill the
// disk under .ralph/.
const (
	defaultTranscriptMax    = 256 << 20
	defaultTranscriptMaxRun = 2 << 30
)

// newTranscript is the transcript written to f, within the bounds.
func (r *runner) newTranscript(f *os.File) *transcript {
	r.transcriptOnce.Do(func() {
		r.transcriptLeft.Store(cmp.Or(r.opts.TranscriptMaxRun, defaultTranscriptMaxRun))
	})
	return &transcript{f: f, left: cmp.Or(r.opts.TranscriptMax, defaultTranscriptMax), runLeft: &r.transcriptLeft}
}

func (t *transcript) Write(p []byte) (int, error) {
	full := len(p)
	if t.err != nil {
		return full, nil
	}
	if t.runLeft != nil {
		// The run's share is taken first, and what it did not have
		// given back: iterations of --parallel write at once.
		n := min(int64(len(p)), t.left)
		if after := t.runLeft.Add(-n); after < 0 {
			back := min(-after, n)
			t.runLeft.Add(back)
			n -= back
		}
		t.left -= n
		if n < int64(len(p)) {
			p = p[:n]
			if !t.cut {
				t.cut = true
				p = append(p[:n:n], "\n[ralph: the transcript stops here: transcript-max or transcript-max-run reached; "+
					"the rest of the agent's output was read for events, not stored]\n"...)
			}
		}
	}
	if len(p) == 0 {
		return full, nil
	}
	if _, err := t.f.Write(p); err != nil {
		t.err = err
		if diskFull(err) {
			_ = t.f.Truncate(0)
		}
	}
	return full, nil
}

// close closes the file and says what went wrong with it, nil when
// nothing did.
func (t *transcript) close() error {
	cerr := t.f.Close()
	switch {
	case t.err != nil && diskFull(t.err):
		return fmt.Errorf("could not write the transcript (%w); emptied it to leave room for the plan and the state", t.err)
	case t.err != nil:
		return fmt.Errorf("could not write the transcript: %w", t.err)
	case cerr != nil:
		return fmt.Errorf("write transcript: %w", cerr)
	}
	return nil
}
