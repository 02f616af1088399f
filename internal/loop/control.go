package loop

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// The events of a run a user steers (see Control).
const (
	EventPaused      EventKind = "paused"
	EventResumed     EventKind = "resumed"
	EventTaskSkipped EventKind = "task_skipped"
)

// Control lets a user steer a running loop: pause it after the current
// iteration, and set tasks aside for the rest of the run. The loop consults
// it only between iterations; it never stops an agent in the middle of a
// task for either (Ctrl-C does that).
type Control interface {
	// Skips returns the ids of the tasks the user asked to skip since the
	// last call.
	Skips() []string
	// Paused returns nil when the run may go on, or a channel that is
	// closed when the user resumes it.
	Paused() <-chan struct{}
}

// Steering is the Control the command line shares between the loop and
// the TUI's keys. It is safe for concurrent use.
type Steering struct {
	mu     sync.Mutex
	resume chan struct{} // non-nil while paused
	skips  []string
	// answers wait for the loop's next look; ready wakes a loop that
	// waits for one (question.go).
	answers []Answer
	ready   chan struct{}
}

// NewSteering returns a Steering that lets the run go on.
func NewSteering() *Steering { return &Steering{} }

// TogglePause pauses the run after the current iteration, or resumes it,
// and reports whether it is now paused.
func (s *Steering) TogglePause() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resume != nil {
		close(s.resume)
		s.resume = nil
		return false
	}
	s.resume = make(chan struct{})
	return true
}

// Skip asks the loop to set task id aside once its current iteration ends.
func (s *Steering) Skip(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != "" && !slices.Contains(s.skips, id) {
		s.skips = append(s.skips, id)
	}
}

// SetPaused pauses or resumes the run, whatever it was (two at once
// cannot leave it the other way: the check and the change are one).
func (s *Steering) SetPaused(paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case paused && s.resume == nil:
		s.resume = make(chan struct{})
	case !paused && s.resume != nil:
		close(s.resume)
		s.resume = nil
	}
}

// Answer hands the loop a human's answer to the question of a task ("":
// the oldest question waiting).
func (s *Steering) Answer(a Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, a)
	select {
	case s.readyChan() <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// TakeAnswers implements Answers.
func (s *Steering) TakeAnswers() []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.answers
	s.answers = nil
	return a
}

// AnswerReady implements Answers.
func (s *Steering) AnswerReady() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readyChan()
}

// readyChan is made on first use: the zero Steering works. Called with
// mu held.
func (s *Steering) readyChan() chan struct{} {
	if s.ready == nil {
		s.ready = make(chan struct{}, 1)
	}
	return s.ready
}

// Skips implements Control.
func (s *Steering) Skips() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.skips
	s.skips = nil
	return ids
}

// Paused implements Control.
func (s *Steering) Paused() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resume == nil {
		return nil
	}
	return s.resume
}

// checkpoint applies what the user asked for since the last iteration:
// skipped tasks are set aside, and a pause holds the loop here until the
// user resumes it or the run is interrupted.
func (r *runner) checkpoint(ctx context.Context) error {
	c := r.deps.Control
	r.pruneQuestions()
	if c == nil {
		return nil
	}
	if err := r.takeAnswers(); err != nil {
		return err
	}
	r.takeSkips(c)
	wait := c.Paused()
	if wait == nil {
		return nil
	}
	r.emit(Event{Kind: EventPaused, Iteration: r.st.Iteration, Plan: r.progress(),
		Message: "paused after iteration " + fmt.Sprint(r.st.Iteration)})
	r.st.Status = state.StatusPaused
	if err := r.save(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		if r.st.Iteration == 0 {
			return ErrInterrupted
		}
		return r.interruptedBetween(task.Task{ID: r.st.CurrentTask})
	case <-wait:
	}
	r.treeSeen = false
	r.st.Status = state.StatusRunning
	if err := r.save(); err != nil {
		return err
	}
	r.emit(Event{Kind: EventResumed, Iteration: r.st.Iteration})
	r.takeSkips(c)
	return nil
}

// takeSkips sets aside the open tasks the user asked to skip.
func (r *runner) takeSkips(c Control) {
	for _, id := range c.Skips() {
		t, ok := r.deps.Plan.Plan().Task(id)
		if !ok || t.Status != task.StatusOpen || r.skipped[id] {
			continue
		}
		if r.skipped == nil {
			r.skipped = map[string]bool{}
		}
		r.skipped[id] = true
		r.emit(Event{Kind: EventTaskSkipped, Iteration: r.st.Iteration, Task: &TaskRef{ID: t.ID, Title: t.Title},
			Message: "skipped for the rest of this run"})
	}
}

// skippedLeft ends a run whose remaining open tasks include skipped ones:
// a limit the user set, with tasks open.
func (r *runner) skippedLeft(p *task.Plan) error {
	var ids []string
	for _, t := range p.Tasks {
		if t.Status == task.StatusOpen && r.skipped[t.ID] {
			ids = append(ids, t.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return fmt.Errorf("%w: skipped for this run: %v", ErrLimit, ids)
}
