package serve

import (
	"sync"
)

// Bounds of a hub.
const (
	// clientBuffer is how many messages a client may lag behind before it
	// is dropped (and resyncs).
	clientBuffer = 256
	// backlogSize bounds the messages kept for a client that connects in
	// the middle of an iteration: those of the current iteration, newest.
	backlogSize = 200
)

// Hub fans messages (SSE data, one JSON object each) out to subscribers.
// Publish never blocks: a subscriber whose buffer is full is dropped; its
// channel is closed, which tells it to resync. It is safe for concurrent
// use.
type Hub struct {
	// noBacklog: newcomers get only what comes after them.
	noBacklog bool
	mu        sync.Mutex
	subs      map[*Sub]struct{}
	backlog   [][]byte
}

// Sub is one subscriber of a hub.
type Sub struct {
	// C carries the messages, in batches (what was published together);
	// it is closed when the subscriber was too slow (resync) or
	// unsubscribed.
	C       chan [][]byte
	dropped bool
}

// NewHub returns a hub without subscribers.
func NewHub() *Hub { return &Hub{subs: map[*Sub]struct{}{}} }

// Publish sends msg to every subscriber; reset first empties the backlog
// (an iteration starts: what came before it is history, read from disk).
func (h *Hub) Publish(msg []byte, reset bool) { h.PublishBatch([][]byte{msg}, reset) }

// PublishBatch sends msgs to every subscriber at once: one wake-up each,
// however many messages.
func (h *Hub) PublishBatch(msgs [][]byte, reset bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if reset {
		clear(h.backlog)
		h.backlog = h.backlog[:0]
	}
	for _, msg := range msgs {
		if len(h.backlog) >= backlogSize {
			copy(h.backlog, h.backlog[1:])
			h.backlog = h.backlog[:len(h.backlog)-1]
		}
		h.backlog = append(h.backlog, msg)
	}
	for s := range h.subs {
		select {
		case s.C <- msgs:
		default:
			// Too slow: it resyncs instead of holding anyone up.
			s.dropped = true
			delete(h.subs, s)
			close(s.C)
		}
	}
}

// Subscribe returns a subscriber whose channel starts with the backlog.
func (h *Hub) Subscribe() *Sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &Sub{C: make(chan [][]byte, clientBuffer+1)}
	if !h.noBacklog && len(h.backlog) > 0 {
		s.C <- append([][]byte(nil), h.backlog...)
	}
	h.subs[s] = struct{}{}
	return s
}

// Unsubscribe ends s; its channel is closed.
func (h *Hub) Unsubscribe(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.C)
	}
}

// Dropped reports whether s was dropped for being too slow.
func (h *Hub) Dropped(s *Sub) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.dropped
}

// Backlog returns the messages of the current iteration, oldest first.
func (h *Hub) Backlog() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.backlog...)
}

// Clients returns how many subscribers the hub has.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// DropAll drops every subscriber: they resync (events were lost before
// they reached the hub).
func (h *Hub) DropAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.dropped = true
		delete(h.subs, s)
		close(s.C)
	}
}
