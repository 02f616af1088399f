package loop

import (
	"maps"
	"sync/atomic"
)

// saving is one write of state.json under way in the background.
type saving struct {
	gen  int64
	done chan struct{}
	err  error
}

// stateWriter keeps the writes of state.json in order, off the loop's
// path where it can: each fsyncs a file and a directory, which costs more
// than the rest of an iteration's bookkeeping.
type stateWriter struct {
	last *saving
	// gen numbers the writes; a write that a newer one has overtaken
	// before it started is skipped, the newer one holds all it would.
	gen atomic.Int64
}

// saveAsync starts writing the state as it is now, after the writes
// started before it, and returns at once; save and the next saveAsync
// report its error. It is for the state at an iteration's start and end,
// which another save follows within milliseconds: a crash in between
// leaves state.json one step behind history, which is the record of what
// happened, and never ahead of it.
func (r *runner) saveAsync() error {
	w := &r.writer
	if p := w.last; p != nil {
		select {
		case <-p.done:
			if p.err != nil {
				return p.err
			}
		default:
		}
	}
	r.st.UpdatedAt = r.deps.Now()
	st := r.st
	st.Tasks = maps.Clone(r.st.Tasks) // the loop goes on changing its own
	st.Quota = maps.Clone(r.st.Quota)
	prev := w.last
	cur := &saving{gen: w.gen.Add(1), done: make(chan struct{})}
	w.last = cur
	store := r.deps.Store
	go func() {
		defer close(cur.done)
		if prev != nil {
			<-prev.done
			if prev.err != nil {
				cur.err = prev.err
				return
			}
		}
		if w.gen.Load() != cur.gen {
			return
		}
		cur.err = store.SaveState(st)
	}()
	return nil
}

// save writes the state and waits until it, and every write before it,
// is on disk.
func (r *runner) save() error {
	if err := r.saveAsync(); err != nil {
		return err
	}
	<-r.writer.last.done
	return r.writer.last.err
}

// saved waits until the writes started so far are on disk, and reports
// their error; it starts none.
func (r *runner) saved() error {
	if r.writer.last == nil {
		return nil
	}
	<-r.writer.last.done
	return r.writer.last.err
}
