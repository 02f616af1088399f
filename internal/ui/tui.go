package ui

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/loop"
)

// TUIOptions configure the live terminal UI.
type TUIOptions struct {
	// Plan is the plan file; Agent and Model say what runs it.
	Plan, Agent, Model string
	// Tasks are the plan's tasks as the run starts, in plan order.
	Tasks []TaskItem
	// Color is false under NO_COLOR.
	Color bool
	// Control takes the p and s keys; nil turns them off.
	Control Controller
	// Stop is called on the first q or Ctrl-C: it cancels the run, which
	// stops the agent gracefully and saves state.
	Stop func()
	// Force is called on the second q or Ctrl-C, once the terminal is
	// restored: it kills the agent at once and exits.
	Force func()
	// Transcript returns an iteration's raw output file and a decoder for
	// it, for the l key's pager; nil turns the pager off.
	Transcript func(runID string, iteration int) (path string, dec agent.Decoder)
	// In and Out are the terminal (nil: stdin, or the controlling
	// terminal, and stdout). Env is the environment the terminal's
	// capabilities are read from.
	In  io.Reader
	Out io.Writer
	Env []string
	// Summary receives the plain line report of how the run ended, once
	// the TUI has left the screen.
	Summary io.Writer

	// size is the screen size when Out is not a terminal (tests).
	size [2]int
}

// closeWait bounds how long Close waits for the TUI to draw its last
// frame and give the terminal back.
const closeWait = 5 * time.Second

// frameInterval bounds how often the TUI takes the loop's events: however
// fast an agent streams, the screen is updated at most this often.
const frameInterval = 50 * time.Millisecond

// TUI is the live terminal UI, a Renderer. Handle never blocks the loop:
// events go into an inbox the UI drains once per frame.
type TUI struct {
	in    *inbox
	prog  *tea.Program
	done  chan struct{}
	opts  TUIOptions
	final model
	mu    sync.Mutex
	ended *loop.Event
	plain *Plain // takes over if the terminal cannot be used
}

// NewTUI starts the TUI on the terminal.
func NewTUI(opts TUIOptions) *TUI {
	opts.Tasks = slices.Clone(opts.Tasks)
	for i := range opts.Tasks { // the plan's titles are the agent's to write
		opts.Tasks[i].ID, opts.Tasks[i].Title = Text(opts.Tasks[i].ID), Text(opts.Tasks[i].Title)
	}
	t := &TUI{in: newInbox(), done: make(chan struct{}), opts: opts}
	mo := modelOptions{
		plan: opts.Plan, agent: opts.Agent, model: opts.Model, color: opts.Color,
		control: opts.Control, stop: opts.Stop, inbox: t.in,
	}
	if opts.Transcript != nil {
		mo.transcript = cachedTranscripts(opts.Transcript, opts.Color)
	}
	popts := []tea.ProgramOption{tea.WithoutSignalHandler()}
	if opts.In != nil {
		popts = append(popts, tea.WithInput(opts.In))
	}
	if opts.Out != nil {
		popts = append(popts, tea.WithOutput(opts.Out))
	}
	if opts.Env != nil {
		popts = append(popts, tea.WithEnvironment(opts.Env))
	}
	if opts.size[0] > 0 {
		popts = append(popts, tea.WithWindowSize(opts.size[0], opts.size[1]))
	}
	t.prog = tea.NewProgram(newModel(mo, opts.Tasks), popts...)
	go t.run()
	return t
}

func (t *TUI) run() {
	defer close(t.done)
	final, err := t.prog.Run()
	if fm, ok := final.(model); ok {
		t.final = fm
	}
	if err != nil && !t.in.isClosed() {
		// The terminal could not be used: the run goes on in plain lines.
		t.mu.Lock()
		t.plain = NewPlain(t.summaryOut(), PlainOptions{})
		t.mu.Unlock()
		return
	}
	if t.final.forced && t.opts.Force != nil {
		t.opts.Force()
	}
}

func (t *TUI) summaryOut() io.Writer {
	if t.opts.Summary != nil {
		return t.opts.Summary
	}
	return io.Discard
}

// Handle queues an event for the next frame; it never blocks.
func (t *TUI) Handle(e loop.Event) {
	e = TextEvent(e) // text, never commands, to the terminal
	t.mu.Lock()
	if e.Kind == loop.EventRunEnded {
		ev := e
		t.ended = &ev
	}
	plain := t.plain
	t.mu.Unlock()
	if plain != nil {
		plain.Handle(e)
		return
	}
	t.in.put(e)
}

// Close ends the TUI once it has shown the last events, restores the
// terminal, and writes how the run ended.
func (t *TUI) Close(error) {
	t.in.close()
	select {
	case <-t.done:
	case <-time.After(closeWait):
		// The terminal does not take output (a suspended pager, XOFF):
		// the run is over all the same.
		t.prog.Kill()
		<-t.done
	}
	t.mu.Lock()
	ended, plain := t.ended, t.plain
	t.mu.Unlock()
	if ended != nil && plain == nil {
		w := t.summaryOut()
		NewPlain(w, PlainOptions{Color: t.opts.Color}).Handle(*ended)
		for _, l := range t.final.taskSummary() {
			fmt.Fprintln(w, l)
		}
	}
}

// inbox holds the events the loop emitted since the UI last looked. It
// coalesces: when the UI falls behind, older agent events (text, tool
// calls, usage) are dropped first, since only a bounded tail is shown;
// run and iteration events are always kept.
type inbox struct {
	mu     sync.Mutex
	events []loop.Event
	closed bool
	wake   chan struct{} // one pending wake-up at most
	last   time.Time     // when the UI last took events
}

// maxInbox bounds the events waiting for the UI.
const maxInbox = 4096

func newInbox() *inbox { return &inbox{wake: make(chan struct{}, 1)} }

func (b *inbox) put(e loop.Event) {
	b.mu.Lock()
	if !b.closed {
		b.events = append(b.events, e)
		if len(b.events) > maxInbox {
			b.events = compact(b.events, maxInbox/2)
		}
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *inbox) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *inbox) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// next waits for events and returns all of them, at most once per frame;
// closed reports that no more will come.
func (b *inbox) next() (events []loop.Event, closed bool) {
	b.mu.Lock()
	closed = b.closed
	b.mu.Unlock()
	if !closed {
		<-b.wake
	}
	b.mu.Lock()
	wait := frameInterval - time.Since(b.last)
	b.mu.Unlock()
	if wait > 0 {
		time.Sleep(wait) // let a burst of events gather into one frame
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	events, b.events = b.events, nil
	b.last = time.Now()
	return events, b.closed
}

// compact keeps every non-agent event and the newest keep agent events,
// in order.
func compact(events []loop.Event, keep int) []loop.Event {
	agents := 0
	for _, e := range events {
		if e.Kind == loop.EventAgent {
			agents++
		}
	}
	drop := agents - keep
	out := events[:0:0]
	for _, e := range events {
		if e.Kind == loop.EventAgent && drop > 0 {
			drop--
			continue
		}
		out = append(out, e)
	}
	return out
}

// ReadTranscript renders an iteration's raw output file as readable lines.
func ReadTranscript(path string, dec agent.Decoder, color bool) ([]string, error) {
	var b strings.Builder
	tw := NewTranscriptWriter(&b, dec, TranscriptOptions{Color: color})
	if err := copyFile(tw, path); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return splitLines(b.String()), nil
}

// cachedTranscripts reads transcripts for the pager, which reloads the
// running iteration's every second: a file that has not grown is not
// decoded again.
func cachedTranscripts(open func(runID string, iteration int) (string, agent.Decoder), color bool) func(string, int) ([]string, error) {
	var (
		mu    sync.Mutex
		path  string
		size  int64
		lines []string
	)
	return func(runID string, iteration int) ([]string, error) {
		p, dec := open(runID, iteration)
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		if p == path && fi.Size() == size {
			defer mu.Unlock()
			return lines, nil
		}
		mu.Unlock()
		l, err := ReadTranscript(p, dec, color)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		path, size, lines = p, fi.Size(), l
		mu.Unlock()
		return l, nil
	}
}
