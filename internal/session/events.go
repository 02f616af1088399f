package session

import (
	"context"
	"sync"
	"time"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/ui"
)

// events is the run's one event pipeline. Every event of a run goes
// through emit: the loop's, the process family's reports, the warnings of
// the sandbox, the proxy, the repository and the tracker. emit redacts it,
// stamps a --worker's task run's events with the worker's id, and hands it
// to each consumer in this fixed order, one event at a time:
//
//  1. the log (.ralph/ralph.log): durable;
//  2. the tracker's write-back (labels, comments on the issues): durable;
//  3. the screen: the TUI, plain lines or JSON on stdout;
//  4. notifications (ntfy, Slack, Telegram, a command): best effort;
//  5. the page's channel (ralph serve, --serve): best effort.
//
// The history and the state are not consumers: the loop writes them
// itself before it emits the event that tells of them, so that a crash
// leaves them behind. No consumer's failure stops the run: a log line
// that cannot be written is lost, a write-back that fails is a warning
// (and one that cannot reach the tracker ends the write-backs, never the
// run), notifications and the page drop what they cannot deliver. What
// stops a run is the loop's own errors (a state or plan write, a commit)
// and the user: Ctrl-C, q in the TUI, the page's stop, and the screen's
// broken pipe (stopOnBrokenPipe), which stops the run as Ctrl-C does.
type events struct {
	workerID string
	log      ui.Renderer
	wb       *writeBack // nil: no tracker to write back to
	screen   ui.Renderer
	channel  ui.Renderer // nil: no control channel

	// mu makes delivery one event at a time; a consumer that emits while
	// it handles an event (the write-back's warnings, the tracker's waits)
	// queues it in pending, delivered after the event at hand.
	mu      sync.Mutex
	qmu     sync.Mutex
	pending []loop.Event

	// release closes the page's channel and the log's file, once the
	// consumers are closed.
	release func()
}

// emit delivers e to every consumer, in order, and what they queued.
func (ev *events) emit(e loop.Event) {
	ev.mu.Lock()
	ev.deliver(e)
	ev.drain()
	ev.mu.Unlock()
	ev.flush()
}

// post is emit for a consumer, which may be in the middle of delivering
// an event: e is queued and delivered after it, or at once when no event
// is being delivered.
func (ev *events) post(e loop.Event) {
	ev.qmu.Lock()
	ev.pending = append(ev.pending, e)
	ev.qmu.Unlock()
	ev.flush()
}

// flush delivers what is queued unless another call is delivering: that
// one delivers it before it lets go.
func (ev *events) flush() {
	for ev.queued() && ev.mu.TryLock() {
		ev.drain()
		ev.mu.Unlock()
	}
}

func (ev *events) queued() bool {
	ev.qmu.Lock()
	defer ev.qmu.Unlock()
	return len(ev.pending) > 0
}

// drain delivers the queue; ev.mu is held.
func (ev *events) drain() {
	for {
		ev.qmu.Lock()
		if len(ev.pending) == 0 {
			ev.qmu.Unlock()
			return
		}
		e := ev.pending[0]
		ev.pending = ev.pending[1:]
		ev.qmu.Unlock()
		ev.deliver(e)
	}
}

// deliver hands e to the consumers in the pipeline's order; ev.mu is
// held.
func (ev *events) deliver(e loop.Event) {
	e = redactEvent(e)
	if ev.workerID != "" {
		// A --worker's task run: every event says whose it is, the
		// process family's reports included.
		e.WorkerID = ev.workerID
	}
	ev.log.Handle(e)
	if ev.wb != nil {
		ev.wb.handle(e)
	}
	ev.screen.Handle(e) // notifications follow the screen (newRenderer)
	if ev.channel != nil {
		ev.channel.Handle(e)
	}
}

// warn is a warning of the run's, from outside the pipeline's consumers.
func (ev *events) warn(msg string) {
	ev.post(loop.Event{Kind: loop.EventWarning, Time: time.Now(), Message: msg})
}

// close closes the consumers: the screen shows how the run ended.
func (ev *events) close(err error) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.drain()
	ev.screen.Close(err)
	ev.log.Close(err)
	if ev.channel != nil {
		ev.channel.Close(err)
	}
}

// openEvents opens the run's consumers and makes the pipeline the loop's
// Emit and where every other part of the run reports: the process family,
// the proxy between agents, the agents' homes and kept layers, the
// tracker's waits.
func (r *Run) openEvents(ctx context.Context, store *state.Store, life *lifetime, stop func(), deps *loop.Deps) (*events, error) {
	logger, closeLog, err := openLog(store.Dir(), r.f.Debug)
	if err != nil {
		return nil, err
	}
	steer := loop.NewSteering()
	deps.Control = steer
	ch, pageURL, closeChannel := openChannel(ctx, r.opts, r.dir, r.lopts.RunID, steer, stop, logger)
	screen, err := chooseRenderer(r.opts, runView{dir: r.dir, plan: r.plan.Plan(), agent: r.ag.Name(), model: r.cfg.Model,
		failed: failedIn(store), newDecoder: r.ag.NewDecoder, stop: stop, steer: steer, notify: r.cfg.Notify, log: logger,
		pageURL: pageURL, programs: proc.OutsideOf(ctx), notifyBox: r.sb.notify(r.cfg.Notify.Env)})
	if err != nil {
		closeChannel()
		closeLog()
		return nil, err
	}
	ev := &events{workerID: r.opts.workerID, log: ui.NewLog(logger), screen: screen,
		release: func() { closeChannel(); closeLog() }}
	if ch != nil {
		ev.channel = ch
	}
	deps.Emit = ev.emit
	life.attach(ev.post)
	if r.sb.egress != nil {
		// A gate's or a reviewer's refusal, between agents.
		r.sb.egress.network.reportUnwatched(ev.warn)
	}
	r.sb.warnWith(ev.warn)
	if r.gh != nil {
		// GitHub's rate limits are waited out like an agent's usage limit.
		r.gh.OnWait(func(until time.Time, why string) {
			ev.post(loop.Event{Kind: loop.EventWaiting, Time: time.Now(), Until: &until, Message: why})
		})
		ev.wb = newWriteBack(ctx, r.gh, store, r.lopts.RunID, ev.post)
		ev.wb.reconcile(r.plan.Plan())
	}
	return ev, nil
}
