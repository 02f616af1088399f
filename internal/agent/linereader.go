package agent

import (
	"bufio"
	"errors"
	"io"
)

// lineLimits bounds what the line reader keeps of one line. Agents print
// single JSON lines of tens of megabytes (a tool result holding a whole
// file), so a line has no length limit but what is kept of it does.
type lineLimits struct {
	bufSize int // the bufio buffer: lines shorter than this are not copied
	maxLine int // lines up to this many bytes are passed whole

	// In a longer line, a string literal longer than strCap keeps its first
	// strHead and last strTail bytes. Once the shortened line has passed
	// budget, later strings get the small caps and containers drop the
	// elements that follow, which keeps the line valid JSON.
	strCap, strHead, strTail       int
	smallCap, smallHead, smallTail int
	budget                         int

	// Past these, a long line is treated as not JSON.
	maxDepth, maxLiteral int

	// A long line that is not JSON keeps its first rawHead and last
	// rawTail bytes.
	rawHead, rawTail int
}

func defaultLineLimits() lineLimits {
	return lineLimits{
		bufSize: 256 << 10,
		maxLine: 1 << 20,
		strCap:  64 << 10, strHead: 16 << 10, strTail: 16 << 10,
		smallCap: 512, smallHead: 128, smallTail: 128,
		budget:   1 << 20,
		maxDepth: 256, maxLiteral: 1024,
		rawHead: 64 << 10, rawTail: 64 << 10,
	}
}

// markerMax is the longest elision marker: "…[" + 20 digits + " bytes elided]…".
const markerMax = 48

func appendMarker(dst []byte, n int64) []byte {
	dst = append(dst, "…["...)
	dst = appendInt(dst, n)
	return append(dst, " bytes elided]…"...)
}

func appendInt(dst []byte, n int64) []byte {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

// hardCap bounds a shortened JSON line. After the output passes budget at
// most one big string is still being written, and then, because every comma
// starts a skip, at most one key, bracket pair and small string per depth
// level plus one literal: the JSON stays valid within this bound.
func (l lineLimits) hardCap() int {
	big := max(l.strCap, l.strHead+l.strTail+markerMax) + 2
	small := max(l.smallCap, l.smallHead+l.smallTail+markerMax) + 2
	return l.budget + big + l.maxDepth*(small+3) + l.maxLiteral + 16
}

// maxOut bounds any line Next returns.
func (l lineLimits) maxOut() int {
	return max(l.maxLine, l.hardCap(), l.rawHead+l.rawTail+markerMax)
}

// lineReader splits a stream into lines with no length limit and bounded
// memory. bufio.Scanner is not used: its token limit breaks on real agent
// output.
type lineReader struct {
	r   *bufio.Reader
	lim lineLimits
	buf []byte // stitches a line longer than the bufio buffer
	sh  shortener
	err error // the read error to return once the last line is out
}

func newLineReader(r io.Reader, lim lineLimits) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, lim.bufSize), lim: lim, sh: shortener{lim: lim}}
}

// Next returns the next line without its '\n'; the slice is valid until the
// next call. Lines up to maxLine come back byte for byte; longer lines come
// back shortened (see shortener). After the last line it returns the read
// error, io.EOF at a clean end.
func (lr *lineReader) Next() ([]byte, error) {
	if lr.err != nil {
		return nil, lr.err
	}
	if cap(lr.buf) > 2*lr.lim.bufSize {
		// A long line grew it to as much as maxLine: let it go rather
		// than keep a megabyte live for lines that are rare. (Live heap
		// counts twice in peak RSS: the collector lets the heap grow to
		// twice what is live.)
		lr.buf = nil
	}
	lr.buf = lr.buf[:0]
	long := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		last := err == nil
		if last {
			chunk = chunk[:len(chunk)-1]
		}
		if !long && len(lr.buf)+len(chunk) > lr.lim.maxLine {
			long = true
			lr.sh.reset()
			lr.sh.write(lr.buf)
			lr.buf = lr.buf[:0]
		}
		switch {
		case long:
			lr.sh.write(chunk)
		case last && len(lr.buf) == 0:
			return chunk, nil // the common case: no copy
		default:
			lr.buf = append(lr.buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			lr.err = err
			if !long && len(lr.buf) == 0 {
				return nil, err
			}
		}
		if long {
			return lr.sh.finish(), nil
		}
		return lr.buf, nil
	}
}
