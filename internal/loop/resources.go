package loop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
}

func (t *transcript) Write(p []byte) (int, error) {
	if t.err != nil {
		return len(p), nil
	}
	if _, err := t.f.Write(p); err != nil {
		t.err = err
		if diskFull(err) {
			_ = t.f.Truncate(0)
		}
	}
	return len(p), nil
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
