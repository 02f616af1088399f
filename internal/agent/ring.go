package agent

import "unicode/utf8"

// ring keeps the last size bytes written to it: the tail of a long string,
// of a long line, of stderr.
type ring struct {
	buf  []byte
	size int
	pos  int // where the next byte goes
	full bool
}

func (r *ring) reset(size int) {
	if cap(r.buf) < size {
		r.buf = make([]byte, size)
	}
	r.buf = r.buf[:size]
	r.size, r.pos, r.full = size, 0, false
}

func (r *ring) Write(p []byte) (int, error) {
	n := len(p)
	if r.size == 0 || n == 0 {
		return n, nil
	}
	if len(p) >= r.size {
		copy(r.buf, p[len(p)-r.size:])
		r.pos, r.full = 0, true
		return n, nil
	}
	c := copy(r.buf[r.pos:], p)
	if c < len(p) {
		copy(r.buf, p[c:])
		r.full = true
	}
	r.pos = (r.pos + len(p)) % r.size
	if r.pos == 0 {
		r.full = true
	}
	return n, nil
}

// appendTo appends the kept bytes, oldest first.
func (r *ring) appendTo(dst []byte) []byte {
	if !r.full {
		return append(dst, r.buf[:r.pos]...)
	}
	dst = append(dst, r.buf[r.pos:]...)
	return append(dst, r.buf[:r.pos]...)
}

// utf8Start skips the continuation bytes (at most three) at the front of
// b, so that a tail cut anywhere starts on a whole character.
func utf8Start(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

// utf8Cut moves a head cut at n back over continuation bytes (at most
// three), so that the head ends on a whole character.
func utf8Cut(b []byte, n int) int {
	for i := 0; i < utf8.UTFMax-1 && n > 0 && n < len(b) && !utf8.RuneStart(b[n]); i++ {
		n--
	}
	return n
}
