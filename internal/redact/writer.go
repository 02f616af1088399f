package redact

import (
	"bytes"
	"io"
)

// maxPending bounds what a Writer holds back waiting for the end of a
// line.
const maxPending = 64 << 10

// Writer hides the secrets (String) of what is written through it, whole
// lines at a time, so that a secret written in pieces is still found.
// Flush writes what is left of the last line.
type Writer struct {
	w       io.Writer
	pending []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

func (rw *Writer) Write(p []byte) (int, error) {
	rw.pending = append(rw.pending, p...)
	end := bytes.LastIndexByte(rw.pending, '\n') + 1
	if end == 0 && len(rw.pending) < maxPending {
		return len(p), nil
	}
	if end == 0 {
		end = len(rw.pending)
	}
	_, err := io.WriteString(rw.w, String(string(rw.pending[:end])))
	rw.pending = append(rw.pending[:0], rw.pending[end:]...)
	return len(p), err
}

// Flush writes what is held back.
func (rw *Writer) Flush() error {
	if len(rw.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(rw.w, String(string(rw.pending)))
	rw.pending = rw.pending[:0]
	return err
}
