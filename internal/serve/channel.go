package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
)

// SocketName is the control channel's unix socket in .ralph/.
const SocketName = "run.sock"

// SocketPath is the control channel's socket of the project in dir.
func SocketPath(dir string) string { return filepath.Join(dir, state.Dir, SocketName) }

// Verbs of the control channel.
const (
	VerbPause  = "pause"
	VerbResume = "resume"
	VerbSkip   = "skip"
	VerbStop   = "stop"
	VerbAnswer = "answer"
)

// Command is one request to steer a run: POST /v1/control on its socket.
type Command struct {
	Verb string `json:"verb"`
	// Task is the task to skip or whose question to answer; "" is the
	// current task (skip) or the oldest question waiting (answer).
	Task string `json:"task,omitempty"`
	// Text is the answer.
	Text string `json:"text,omitempty"`
	// By says where an answer came from: page, tui, cli, telegram.
	By string `json:"by,omitempty"`
}

// Controller carries out commands on a run.
type Controller interface {
	Control(c Command) error
}

// Steer is the Controller of a run in this process: the loop's Steering
// and the function that stops the run (as Ctrl-C does).
type Steer struct {
	Steering *loop.Steering
	Stop     func()
	// Current returns the task the run is on, for a skip without one.
	Current func() string
}

// Control implements Controller.
func (s Steer) Control(c Command) error {
	switch c.Verb {
	case VerbPause:
		s.Steering.SetPaused(true)
	case VerbResume:
		s.Steering.SetPaused(false)
	case VerbSkip:
		id := c.Task
		if id == "" && s.Current != nil {
			id = s.Current()
		}
		if id == "" {
			return errors.New("skip: no task is running; name one")
		}
		s.Steering.Skip(id)
	case VerbStop:
		s.Stop()
	case VerbAnswer:
		if c.Text == "" {
			return errors.New("answer: empty text")
		}
		s.Steering.Answer(loop.Answer{Task: c.Task, Text: c.Text, By: c.By})
	default:
		return fmt.Errorf("unknown verb %q (pause, resume, skip, stop, answer)", c.Verb)
	}
	return nil
}

// Info describes the run behind a control channel: GET /v1/info.
type Info struct {
	Schema    int       `json:"schema"`
	RunID     string    `json:"run_id"`
	Dir       string    `json:"dir"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
}

// eventQueue bounds the events waiting to be encoded: the loop hands them
// over without waiting; past this they are lost and the clients resync.
const eventQueue = 4096

// Channel is the control channel of a run in this process: a unix socket
// in .ralph/ serving HTTP. It is a renderer of the loop's events (Handle),
// never blocking the loop.
type Channel struct {
	path    string
	info    Info
	ctl     Controller
	hub     *Hub
	events  chan loop.Event
	lost    atomic.Bool
	current atomic.Value // string: the task of the running iteration
	srv     *http.Server
	done    chan struct{}
	once    sync.Once

	// mu guards raw, and the choice between it and the hub: while nobody
	// listens, the current iteration's events wait here unencoded (JSON
	// for each of a chatty agent's events costs more than the rest of
	// their way), and the first subscriber has them encoded.
	mu  sync.Mutex
	raw []loop.Event

	// inflight counts the events handed to pump and not through it yet:
	// what a test waits on before it subscribes.
	inflight sync.WaitGroup
}

// Listen serves the control channel of the run in dir at
// dir/.ralph/run.sock, readable by the user only. The caller holds the
// project's lock: a socket left there is a dead run's and is replaced.
func Listen(dir string, info Info, ctl Controller) (*Channel, error) {
	path := SocketPath(dir)
	_ = os.Remove(path)
	short, done := sockPath(path)
	ln, err := net.Listen("unix", short)
	done()
	if err != nil {
		return nil, fmt.Errorf("control channel: %w", err)
	}
	if ul, ok := ln.(*net.UnixListener); ok {
		// Close removes path itself: short may name another directory by
		// then.
		ul.SetUnlinkOnClose(false)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("control channel: %w", err)
	}
	info.Schema = loop.EventSchema
	c := &Channel{path: path, info: info, ctl: ctl, hub: NewHub(), events: make(chan loop.Event, eventQueue),
		done: make(chan struct{})}
	c.current.Store("")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, c.info) })
	mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, r *http.Request) { streamSSE(w, r, c) })
	mux.HandleFunc("POST /v1/control", c.control)
	c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.srv.Serve(ln) }()
	go c.pump()
	return c, nil
}

// Path is the socket's path.
func (c *Channel) Path() string { return c.path }

// Current is the task of the running iteration, "" between iterations.
func (c *Channel) Current() string { return c.current.Load().(string) }

func (c *Channel) control(w http.ResponseWriter, r *http.Request) {
	var cmd Command
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&cmd); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "bad command: " + err.Error()})
		return
	}
	if err := c.ctl.Control(cmd); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// Handle takes one loop event; it never blocks. The event is encoded
// later, on another goroutine: what its pointers share with the loop's
// state (the run's totals go on changing) is copied here.
func (c *Channel) Handle(e loop.Event) {
	e = detach(e)
	switch e.Kind {
	case loop.EventIterationStarted:
		if e.Task != nil {
			c.current.Store(e.Task.ID)
		}
	case loop.EventIterationEnded, loop.EventRunEnded:
		c.current.Store("")
	default:
		// The other values need nothing here.
	}
	c.inflight.Add(1)
	select {
	case c.events <- e:
	default:
		c.inflight.Done()
		c.lost.Store(true)
	}
}

// pump encodes the events and publishes them, off the loop's goroutine.
func (c *Channel) pump() {
	defer close(c.done)
	// Events that queued up while the last batch went out go out
	// together: a chatty agent wakes each client once per batch, not once
	// per event.
	const maxBatch = 256
	var batch [][]byte
	reset := false
	publish := func() {
		if len(batch) > 0 || reset {
			c.hub.PublishBatch(batch, reset)
		}
		batch, reset = nil, false
	}
	for e := range c.events {
		for {
			if c.lost.Swap(false) {
				publish()
				c.hub.DropAll()
			}
			e.Schema = loop.EventSchema
			if c.hold(e, publish) {
				// Kept for a subscriber to come.
			} else if b, err := json.Marshal(e); err == nil {
				if e.Kind == loop.EventIterationStarted {
					publish()
					reset = true
				}
				batch = append(batch, b)
			}
			c.inflight.Done()
			if len(batch) >= maxBatch {
				break
			}
			var ok bool
			select {
			case e, ok = <-c.events:
			default:
			}
			if !ok {
				break
			}
		}
		publish()
	}
}

// hold keeps e unencoded when nobody listens, and reports whether it
// did; publish first sends what was encoded before, so the backlog keeps
// its order. An iteration's start empties what is kept, as it empties the
// hub's backlog.
func (c *Channel) hold(e loop.Event, publish func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hub.Clients() > 0 {
		return false
	}
	publish()
	if e.Kind == loop.EventIterationStarted {
		clear(c.raw)
		c.raw = c.raw[:0]
		c.hub.PublishBatch(nil, true)
	}
	if len(c.raw) >= backlogSize {
		c.raw[0] = loop.Event{}
		c.raw = c.raw[1:]
	}
	c.raw = append(c.raw, e)
	return true
}

// Subscribe implements subscriber: the events kept while nobody listened
// are encoded into the hub's backlog, which the subscriber starts with.
func (c *Channel) Subscribe() *Sub {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.raw) > 0 {
		msgs := make([][]byte, 0, len(c.raw))
		for _, e := range c.raw {
			if b, err := json.Marshal(e); err == nil {
				msgs = append(msgs, b)
			}
		}
		clear(c.raw)
		c.raw = c.raw[:0]
		c.hub.PublishBatch(msgs, false)
	}
	return c.hub.Subscribe()
}

// Unsubscribe implements subscriber.
func (c *Channel) Unsubscribe(s *Sub) { c.hub.Unsubscribe(s) }

// Dropped implements subscriber.
func (c *Channel) Dropped(s *Sub) bool { return c.hub.Dropped(s) }

// Close ends the channel once the run is over: the last events are
// delivered, the clients told the stream ended, the socket removed.
func (c *Channel) Close(error) {
	c.once.Do(func() {
		close(c.events)
		<-c.done
		c.hub.DropAll()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.srv.Shutdown(ctx)
		_ = c.srv.Close()
		_ = os.Remove(c.path)
	})
}

type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Dial returns an HTTP client that talks to the control channel at
// socket (any host in the URL: use http://run/).
func Dial(socket string) *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			short, done := sockPath(socket)
			defer done()
			return d.DialContext(ctx, "unix", short)
		},
	}
	return &http.Client{Transport: tr}
}

// Send sends one command to the run whose socket is socket.
func Send(ctx context.Context, socket string, c Command) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://run/v1/control", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	cl := Dial(socket)
	defer cl.CloseIdleConnections()
	resp, err := cl.Do(req)
	if err != nil {
		return fmt.Errorf("no run answers on %s: %w", socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e apiError
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("the run refused %s: %s", c.Verb, e.Error)
	}
	return nil
}

// detach copies what an event points to that the loop goes on changing.
func detach(e loop.Event) loop.Event {
	if e.Totals != nil {
		t := *e.Totals
		e.Totals = &t
	}
	if e.Record != nil {
		r := *e.Record
		e.Record = &r
	}
	if e.Plan != nil {
		p := *e.Plan
		e.Plan = &p
	}
	if e.Agent != nil {
		a := *e.Agent
		e.Agent = &a
	}
	if e.Until != nil {
		u := *e.Until
		e.Until = &u
	}
	return e
}
