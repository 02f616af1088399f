package agent

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// jsonScanner reads one JSON line token by token and decodes only the
// values a decoder asks for; everything else is checked for syntax and
// skipped without being built. Decoders walk a line into a small view of
// the fields they use, then act on the view once the whole line has proved
// to be one valid JSON object, so a malformed line is noise as before (the
// one exception: the tail of a Claude user line, see claudeDecoder.read).
//
// Why jsontext (github.com/go-json-experiment/json/jsontext, the module
// that mirrors encoding/json/v2 and becomes an alias of the standard
// library's encoding/json/jsontext once that is no longer behind
// GOEXPERIMENT=jsonv2, as it still is in Go 1.26): measured on a 64 KiB
// Claude Code tool-result line (source code, printed twice as Claude Code
// does), on this project's 2-core machine,
//
//	encoding/json Unmarshal into structs (the old decoders)    71 MB/s
//	tidwall/gjson ValidBytes, then path lookups               379 MB/s
//	buger/jsonparser path lookups, no validation              418 MB/s
//	jsontext token walk, raw values, validating               984 MB/s
//
// jsontext was the fastest, validates as it goes (which keeps "a malformed
// line is skipped whole"), allocates nothing for what it skips, and its
// strings unquote like encoding/json's (invalid UTF-8 and lone surrogates
// become U+FFFD).
//
// The semantics follow encoding/json's Unmarshal into structs, which the
// decoders used before: duplicate names are allowed (the last wins), a
// value of an unexpected type leaves its field as it was, null clears a
// pointer-like field. One difference: names match exactly, where
// encoding/json also accepted any case ("Type" for "type").
//
// Reading an object:
//
//	if s.object() {
//		for s.more() {
//			switch string(s.name()) {
//			case "type":
//				s.str(&v.typ)
//			}
//		}
//	}
//
// A member whose value the loop body does not read is skipped. Arrays are
// the same with array() and no name. Errors are sticky: after one every
// read reports nothing, and end reports false.
type jsonScanner struct {
	buf  bytes.Buffer
	dec  *jsontext.Decoder
	opts []jsontext.Options
	err  error

	// seen is, per open container, its length (jsontext's count of names
	// and values) when more last returned true, so that the next more can
	// tell whether the loop body read the member's value.
	seen    []int64
	key     []byte // the current name: in the line, or in keyBuf
	keyBuf  []byte
	scratch []byte
}

func newJSONScanner() *jsonScanner {
	opts := []jsontext.Options{
		// encoding/json accepts both: agents print neither, but a line
		// that has one is not noise.
		jsontext.AllowDuplicateNames(true),
		jsontext.AllowInvalidUTF8(true),
	}
	return &jsonScanner{dec: jsontext.NewDecoder(&bytes.Buffer{}, opts...), opts: opts}
}

// start begins a line and reports whether it may be a JSON object; the
// scanner reads the line in place, so it must not change until end.
func (s *jsonScanner) start(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	s.buf = *bytes.NewBuffer(line)
	s.dec.Reset(&s.buf, s.opts...)
	s.err, s.seen = nil, s.seen[:0]
	if cap(s.scratch) > 256<<10 {
		s.scratch = nil // a long text was unquoted: do not keep its size live
	}
	return true
}

// end reports whether the line was exactly one valid JSON value and every
// read succeeded.
func (s *jsonScanner) end() bool {
	if s.err != nil || s.dec.StackDepth() != 0 {
		return false
	}
	_, err := s.dec.ReadToken()
	return errors.Is(err, io.EOF)
}

func (s *jsonScanner) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// kind is the kind of the next value: '{', '[', '"', '0' (a number), 't',
// 'f', 'n', or 0 after an error.
func (s *jsonScanner) kind() jsontext.Kind {
	if s.err != nil {
		return 0
	}
	k := s.dec.PeekKind()
	if k == 0 {
		// Read the error PeekKind cached.
		if _, err := s.dec.ReadToken(); err != nil {
			s.fail(err)
		} else {
			s.fail(io.ErrUnexpectedEOF)
		}
	}
	return k
}

// raw reads the next value as raw JSON, valid until the next read.
func (s *jsonScanner) raw() jsontext.Value {
	if s.err != nil {
		return nil
	}
	v, err := s.dec.ReadValue()
	if err != nil {
		s.fail(err)
		return nil
	}
	return v
}

// skip checks the next value's syntax and drops it.
func (s *jsonScanner) skip() { s.raw() }

// open reads the next value's opening delimiter when it is of kind k, and
// otherwise skips the value.
func (s *jsonScanner) open(k jsontext.Kind) bool {
	if s.kind() != k {
		s.skip()
		return false
	}
	if _, err := s.dec.ReadToken(); err != nil {
		s.fail(err)
		return false
	}
	s.seen = append(s.seen, -1)
	return true
}

// object starts reading the next value when it is an object (see more);
// any other value is skipped.
func (s *jsonScanner) object() bool { return s.open('{') }

// array starts reading the next value when it is an array (see more); any
// other value is skipped.
func (s *jsonScanner) array() bool { return s.open('[') }

// more reports whether the open object or array has another member (then
// name returns its name) or element, after skipping the previous one if
// the loop body left it unread. At the end it reads the closing delimiter.
func (s *jsonScanner) more() bool {
	if s.err != nil || len(s.seen) == 0 {
		return false
	}
	depth := s.dec.StackDepth()
	k, n := s.dec.StackIndex(depth)
	top := &s.seen[len(s.seen)-1]
	if n == *top {
		s.skip() // the body did not read it
		if s.err != nil {
			return false
		}
		_, n = s.dec.StackIndex(depth)
	}
	switch s.kind() {
	case 0:
		return false
	case '}', ']':
		s.seen = s.seen[:len(s.seen)-1]
		if _, err := s.dec.ReadToken(); err != nil {
			s.fail(err)
		}
		return false
	default:
		// The other values need nothing here.
	}
	if k == '{' {
		name := s.raw()
		if s.err != nil {
			return false
		}
		if verbatim(name) {
			s.key = name[1 : len(name)-1] // the usual case: no copy
		} else {
			s.key = s.unquote(s.keyBuf[:0], name)
			s.keyBuf = s.key
		}
		n++
	}
	*top = n
	return true
}

// name is the name of the member more has just reached, valid until the
// next read.
func (s *jsonScanner) name() []byte { return s.key }

// verbatim reports whether a raw JSON string's content is its value:
// nothing to unescape, no invalid UTF-8 to replace.
func verbatim(raw jsontext.Value) bool {
	if len(raw) > 64 {
		return bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw)
	}
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			return utf8.Valid(raw) && bytes.IndexByte(raw, '\\') < 0
		}
	}
	return true
}

// unquote appends the content of a raw JSON string to dst.
func (s *jsonScanner) unquote(dst []byte, raw jsontext.Value) []byte {
	if verbatim(raw) {
		return append(dst, raw[1:len(raw)-1]...)
	}
	// An error here is invalid UTF-8, which is replaced, as
	// encoding/json does.
	dst, _ = jsontext.AppendUnquote(dst, raw)
	return dst
}

// null reads the next value if it is null.
func (s *jsonScanner) null() bool {
	if s.kind() != 'n' {
		return false
	}
	s.skip()
	return s.err == nil
}

// str sets *dst to the next value when it is a string.
func (s *jsonScanner) str(dst *string) bool {
	b, ok := s.strBytes()
	if ok {
		*dst = string(b)
	}
	return ok
}

// rawOf reads the next value raw, valid until the next read, and reports
// whether it is of kind k ('"' or '0' for a number).
func (s *jsonScanner) rawOf(k jsontext.Kind) (jsontext.Value, bool) {
	v := s.raw()
	return v, s.err == nil && v.Kind() == k
}

// strBytes returns the next value's content when it is a string, valid
// until the next read.
func (s *jsonScanner) strBytes() ([]byte, bool) {
	raw, ok := s.rawOf('"')
	if !ok {
		return nil, false
	}
	s.scratch = s.unquote(s.scratch[:0], raw)
	return s.scratch, true
}

// strHead appends to dst at least the first n bytes of the next value when
// it is a string (all of it when shorter), without unquoting the rest: a
// tool's output of megabytes costs its syntax check and a few kilobytes.
// Any other value is skipped.
func (s *jsonScanner) strHead(dst []byte, n int) []byte {
	raw, ok := s.rawOf('"')
	if !ok {
		return dst
	}
	// Unquote a head of the raw string, then a longer one if escapes made
	// it too short: an escape is at most six bytes for one byte of
	// content. Past the n bytes, headMargin keeps the cut from changing how
	// the last characters before it decode (a surrogate pair, invalid
	// UTF-8).
	const headMargin = 16
	content := raw[1 : len(raw)-1]
	start := len(dst)
	for _, size := range [...]int{2*n + 4*headMargin, 6 * (n + headMargin)} {
		if len(content) <= size {
			break
		}
		cut := headCut(content, size)
		s.scratch = append(append(append(s.scratch[:0], '"'), content[:cut]...), '"')
		dst = s.unquote(dst[:start], s.scratch)
		if len(dst)-start >= n+headMargin {
			return dst
		}
	}
	return s.unquote(dst[:start], raw)
}

// int64 sets *dst to the next value when it is an integer that fits.
func (s *jsonScanner) int64(dst *int64) bool {
	raw, ok := s.rawOf('0')
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// int sets *dst to the next value when it is an integer that fits.
func (s *jsonScanner) int(dst *int) bool {
	var n int64
	if !s.int64(&n) || int64(int(n)) != n {
		return false
	}
	*dst = int(n)
	return true
}

// float sets *dst to the next value when it is a number in range.
func (s *jsonScanner) float(dst *float64) bool {
	raw, ok := s.rawOf('0')
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return false
	}
	*dst = f
	return true
}

// bool sets *dst to the next value when it is true or false.
func (s *jsonScanner) bool(dst *bool) bool {
	v := s.raw()
	if s.err != nil || (v.Kind() != 't' && v.Kind() != 'f') {
		return false
	}
	*dst = v.Kind() == 't'
	return true
}
