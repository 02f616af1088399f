package loop

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// saving is one write of state.json under way in the background.
type saving struct {
	gen  int64
	done chan struct{}
	err  error
	// kick, for a deferred write (saveLater), is closed to write it now;
	// nil for any other.
	kick     chan struct{}
	kickOnce sync.Once
}

// now lets a deferred write go at once.
func (s *saving) now() {
	if s.kick != nil {
		s.kickOnce.Do(func() { close(s.kick) })
	}
}

// coalesceDelay bounds how long saveLater holds a write back for the
// next one to take it over.
const coalesceDelay = 50 * time.Millisecond

// stateWriter keeps the writes of state.json in order, off the loop's
// path where it can: each replaces the file whole and on disk
// (durable.WriteFile) in a goroutine of its own.
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
func (r *runner) saveAsync() error { return r.startSave(false) }

// saveLater is saveAsync for the state at an iteration's end, which the
// next iteration's start writes again within a few milliseconds: the
// write waits up to coalesceDelay for a newer one to take it over, so a
// run writes state.json (a temporary file, a rename, and in the
// background a file and a directory fsync) once per iteration, not
// twice. Any later save, saveAsync or saved lets it go at
// once (and skips it when overtaken); a run that stops or waits after the
// iteration saves first, so nothing stays unwritten longer than that.
func (r *runner) saveLater() error { return r.startSave(true) }

func (r *runner) startSave(deferred bool) error {
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
	if deferred {
		cur.kick = make(chan struct{})
	}
	w.last = cur
	if prev != nil {
		prev.now() // overtaken: it skips its write
	}
	store := r.deps.Store
	go func() {
		defer close(cur.done)
		if cur.kick != nil {
			t := time.NewTimer(coalesceDelay)
			select {
			case <-cur.kick:
			case <-t.C:
			}
			t.Stop()
		}
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
	r.writer.last.now()
	<-r.writer.last.done
	return r.writer.last.err
}
