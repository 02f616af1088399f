package ui

import (
	"io"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/termtext"
)

// Text is s as a terminal may show it: termtext.Text, the one sanitizer
// of what ralph prints.
func Text(s string) string { return termtext.Text(s) }

// TextEvent is e with everything in it that the agent, a gate or a
// reviewer could have written passed through Text, for a renderer that
// writes to a terminal. The event's own values are not changed.
func TextEvent(e loop.Event) loop.Event {
	e.Message = Text(e.Message)
	e.WorkerID = Text(e.WorkerID)
	if t := e.Task; t != nil {
		c := *t
		c.ID, c.Title = Text(t.ID), Text(t.Title)
		e.Task = &c
	}
	if a := e.Agent; a != nil {
		c := *a
		c.Text, c.Tool, c.ToolInput = Text(a.Text), Text(a.Tool), Text(a.ToolInput)
		e.Agent = &c
	}
	if r := e.Record; r != nil {
		c := *r
		c.Error, c.TaskID = Text(r.Error), Text(r.TaskID)
		if g := r.Guard; g != nil {
			gc := *g
			gc.Error = Text(g.Error)
			c.Guard = &gc
		}
		e.Record = &c
	}
	if p := e.Plan; p != nil {
		c := *p
		c.Path = Text(p.Path)
		e.Plan = &c
	}
	return e
}

// TextWriter writes what it is given through Text: for the commands that
// print what an agent wrote (ralph tasks, status, history) and colour
// nothing themselves. An escape sequence cut between two writes loses its
// ESC all the same, and what is left of it is plain text.
type TextWriter struct{ W io.Writer }

func (t TextWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.W, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
