// Package ui shows a run: the plain line renderer, the JSON event stream
// and (on a terminal) the TUI, all fed by the same loop Events.
//
// It never decides anything about the run; it only shows what the loop
// reports.
package ui

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/ralph-loop/ralph/internal/loop"
)

// Renderer shows loop events.
type Renderer interface {
	Handle(e loop.Event)
	// Close is called once when the run has ended, with its error.
	Close(err error)
}

// JSON writes each event as one JSON object per line.
type JSON struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewJSON returns a renderer that writes JSON lines to w.
func NewJSON(w io.Writer) *JSON { return &JSON{enc: json.NewEncoder(w)} }

// Handle writes one event.
func (j *JSON) Handle(e loop.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Schema = loop.EventSchema
	_ = j.enc.Encode(e)
}

// Close does nothing: run_ended already said how the run ended.
func (j *JSON) Close(error) {}
