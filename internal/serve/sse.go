package serve

import (
	"io"
	"net/http"
	"time"
)

// keepAlive is how often an idle event stream gets a comment line, so
// proxies and phones do not close it.
const keepAlive = 25 * time.Second

// flushEvery coalesces a busy stream: what comes within it goes out in
// one write, so that a chatty agent costs each client at most 20 writes
// a second (the TUI redraws as often).
const flushEvery = 50 * time.Millisecond

// streamSSE sends hub's messages to one client as Server-Sent Events
// until the client goes or is dropped; a dropped client gets a resync
// event first.
// subscriber is where a stream's messages come from: a Hub, or a Channel,
// which encodes the events nobody was listening to when someone comes.
type subscriber interface {
	Subscribe() *Sub
	Unsubscribe(s *Sub)
	Dropped(s *Sub) bool
}

func streamSSE(w http.ResponseWriter, r *http.Request, hub subscriber) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	sub := hub.Subscribe()
	defer hub.Unsubscribe(sub)
	if _, err := w.Write([]byte("retry: 1000\n\n")); err != nil {
		return
	}
	fl.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	// pending: written, not flushed yet; flush fires when it is due.
	var pending bool
	var lastFlush time.Time
	flush := time.NewTimer(flushEvery)
	flush.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
			fl.Flush()
			lastFlush = time.Now()
		case <-flush.C:
			fl.Flush()
			pending, lastFlush = false, time.Now()
		case msg, ok := <-sub.C:
			if !ok {
				if hub.Dropped(sub) {
					_, _ = w.Write([]byte("event: resync\ndata: {}\n\n"))
				}
				fl.Flush()
				return
			}
			for _, m := range msg {
				if err := writeData(w, m); err != nil {
					return
				}
			}
			if pending {
				continue
			}
			if wait := flushEvery - time.Since(lastFlush); wait > 0 {
				pending = true
				flush.Reset(wait)
				continue
			}
			fl.Flush()
			lastFlush = time.Now()
		}
	}
}

// writeData writes one SSE message; the ResponseWriter buffers, so the
// three writes cost no copy of msg.
func writeData(w http.ResponseWriter, msg []byte) error {
	if _, err := io.WriteString(w, "data: "); err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n\n")
	return err
}
