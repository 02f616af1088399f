package proc

import "unicode/utf8"

// Tail keeps the last bytes written to it: the end of a child's output,
// where test runners print their verdict and agents their error, or the
// end of any long text. Its memory is its size, whatever is written; the
// zero Tail keeps nothing. It is not safe for concurrent writes (a writer
// given to Cmd as both Stdout and Stderr is only written from one
// goroutine).
type Tail struct {
	buf   []byte
	size  int
	pos   int // where the next byte goes
	full  bool
	total int64 // bytes written since the last Reset
}

// NewTail returns a Tail that keeps the last size bytes.
func NewTail(size int) *Tail {
	t := &Tail{}
	t.Reset(size)
	return t
}

// Reset empties t and makes it keep the last size bytes, reusing its
// memory where it can.
func (t *Tail) Reset(size int) {
	if cap(t.buf) < size {
		t.buf = make([]byte, size)
	}
	t.buf = t.buf[:size]
	t.size, t.pos, t.full, t.total = size, 0, false, 0
}

// Write keeps the end of p; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	if t.size == 0 || n == 0 {
		return n, nil
	}
	if n >= t.size {
		copy(t.buf, p[n-t.size:])
		t.pos, t.full = 0, true
		return n, nil
	}
	c := copy(t.buf[t.pos:], p)
	if c < n {
		copy(t.buf, p[c:])
		t.full = true
	}
	t.pos = (t.pos + n) % t.size
	if t.pos == 0 {
		t.full = true
	}
	return n, nil
}

// AppendTo appends the kept bytes, oldest first, to dst: raw, so they may
// start in the middle of a character.
func (t *Tail) AppendTo(dst []byte) []byte {
	if !t.full {
		return append(dst, t.buf[:t.pos]...)
	}
	dst = append(dst, t.buf[t.pos:]...)
	return append(dst, t.buf[:t.pos]...)
}

// Bytes returns the kept bytes; when the tail was cut in the middle of a
// UTF-8 sequence, from the first whole character on (at most three
// continuation bytes dropped).
func (t *Tail) Bytes() []byte {
	return t.AppendTo(nil)[t.trim():]
}

// String is Bytes as a string.
func (t *Tail) String() string { return string(t.Bytes()) }

// Dropped is how many of the bytes written Bytes leaves out.
func (t *Tail) Dropped() int64 {
	return t.total - int64(t.kept()-t.trim())
}

func (t *Tail) kept() int {
	if t.full {
		return t.size
	}
	return t.pos
}

// trim counts the continuation bytes at the start of a cut tail. An uncut
// one is left as it was written.
func (t *Tail) trim() int {
	kept := t.kept()
	if t.total == int64(kept) {
		return 0
	}
	n := 0
	for n < utf8.UTFMax-1 && n < kept && !utf8.RuneStart(t.at(n)) {
		n++
	}
	return n
}

// at returns the i-th oldest kept byte.
func (t *Tail) at(i int) byte {
	if !t.full {
		return t.buf[i]
	}
	return t.buf[(t.pos+i)%t.size]
}
