package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// This file reads JSON into a small tree that remembers where every key and
// value sits in the source bytes. The JSON formats need those offsets twice:
// to name the line of a bad field, and to edit one value in place without
// re-encoding (and so re-indenting, re-ordering) a user's file.

// jsonKind is the type of a JSON value.
type jsonKind int

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

func (k jsonKind) String() string {
	switch k {
	case jsonBool:
		return "a boolean"
	case jsonNumber:
		return "a number"
	case jsonString:
		return "a string"
	case jsonArray:
		return "an array"
	case jsonObject:
		return "an object"
	default:
		// The other values need nothing here.
	}
	return "null"
}

// jsonNode is one JSON value and its byte range [start, end) in the source.
type jsonNode struct {
	kind       jsonKind
	start, end int
	boolean    bool
	num        json.Number
	str        string
	members    []jsonMember // objects, in source order (duplicates kept)
	elems      []*jsonNode  // arrays
}

// jsonMember is one key of an object; keyStart/keyEnd cover the quoted key.
type jsonMember struct {
	key              string
	keyStart, keyEnd int
	val              *jsonNode
}

// member returns the last member named key (encoding/json's rule for
// duplicates), or nil.
func (n *jsonNode) member(key string) *jsonMember {
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return &n.members[i]
		}
	}
	return nil
}

// jsonDoc is parsed JSON plus what is needed to turn offsets into lines.
type jsonDoc struct {
	data     []byte
	root     *jsonNode
	newlines []int // offsets of every '\n' in data
}

// line returns the 1-based line of byte offset off.
func (d *jsonDoc) line(off int) int {
	return 1 + sort.SearchInts(d.newlines, off)
}

// utf8BOM is skipped before parsing: editors on Windows write it and
// encoding/json rejects it. Offsets stay relative to the full data, so edits
// keep it.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// errJSONSyntax is a syntax error at a line.
type errJSONSyntax struct {
	line int
	msg  string
}

func (e *errJSONSyntax) Error() string { return e.msg }

// parseJSON parses data. A syntax error is an *errJSONSyntax with the line of
// the offending byte.
func parseJSON(data []byte) (*jsonDoc, error) {
	d := &jsonDoc{data: data}
	for i, b := range data {
		if b == '\n' {
			d.newlines = append(d.newlines, i)
		}
	}
	base := 0
	if bytes.HasPrefix(data, utf8BOM) {
		base = len(utf8BOM)
	}
	body := data[base:]

	// Validate first: encoding/json's scanner reports the offset of a syntax
	// error (and bounds nesting depth, which keeps the recursion below safe).
	if !json.Valid(body) {
		var raw json.RawMessage
		err := json.Unmarshal(body, &raw)
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			return nil, err
		}
		// Offset is just past (json v1) or at (v2) the bad byte: the same
		// line either way, as the bad byte is never a newline. At the end of
		// input, point at the last line that has content.
		off := base + int(se.Offset)
		if end := base + len(bytes.TrimRight(body, " \t\r\n")); off > end {
			off = end
		}
		return nil, &errJSONSyntax{line: d.line(off), msg: se.Error()}
	}
	w := &jsonWalker{data: data, pos: base}
	root, err := w.value()
	if err != nil {
		return nil, fmt.Errorf("reading JSON: %w", err)
	}
	d.root = root
	return d, nil
}

// jsonWalker builds the tree of an already validated document in one pass,
// recording each value's byte range. It is a hand-written descent rather
// than json.Decoder tokens: those allocate per token and made a 50-task
// plan take 300 µs to read, on every status change.
//
// It allocates nodes in blocks, and gathers an object's members and an
// array's elements on shared stacks, copying them out once their number is
// known: growing each slice one append at a time was most of the
// allocations of a read.
type jsonWalker struct {
	data    []byte
	pos     int
	block   []jsonNode
	members []jsonMember
	elems   []*jsonNode
}

// node returns a new node starting at start.
func (w *jsonWalker) node(start int) *jsonNode {
	if len(w.block) == cap(w.block) {
		w.block = make([]jsonNode, 0, 128)
	}
	w.block = append(w.block, jsonNode{start: start})
	return &w.block[len(w.block)-1]
}

func (w *jsonWalker) skipSpace() {
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\r', '\n':
			w.pos++
		default:
			return
		}
	}
}

// expect consumes c after optional whitespace.
func (w *jsonWalker) expect(c byte) error {
	w.skipSpace()
	if w.pos >= len(w.data) || w.data[w.pos] != c {
		return fmt.Errorf("want %q at offset %d", c, w.pos)
	}
	w.pos++
	return nil
}

func (w *jsonWalker) value() (*jsonNode, error) {
	w.skipSpace()
	if w.pos >= len(w.data) {
		return nil, io.ErrUnexpectedEOF
	}
	n := w.node(w.pos)
	switch c := w.data[w.pos]; c {
	case '{':
		n.kind = jsonObject
		w.pos++
		w.skipSpace()
		mark := len(w.members)
		defer func() { w.members = w.members[:mark] }()
		for w.pos < len(w.data) && w.data[w.pos] != '}' {
			w.skipSpace()
			ks := w.pos
			key, err := w.str()
			if err != nil {
				return nil, err
			}
			ke := w.pos
			if err := w.expect(':'); err != nil {
				return nil, err
			}
			val, err := w.value()
			if err != nil {
				return nil, err
			}
			w.members = append(w.members, jsonMember{key: key, keyStart: ks, keyEnd: ke, val: val})
			w.skipSpace()
			if w.pos < len(w.data) && w.data[w.pos] == ',' {
				w.pos++
			}
			w.skipSpace()
		}
		if err := w.expect('}'); err != nil {
			return nil, err
		}
		if len(w.members) > mark {
			n.members = slices.Clone(w.members[mark:])
		}
	case '[':
		n.kind = jsonArray
		w.pos++
		w.skipSpace()
		mark := len(w.elems)
		defer func() { w.elems = w.elems[:mark] }()
		for w.pos < len(w.data) && w.data[w.pos] != ']' {
			val, err := w.value()
			if err != nil {
				return nil, err
			}
			w.elems = append(w.elems, val)
			w.skipSpace()
			if w.pos < len(w.data) && w.data[w.pos] == ',' {
				w.pos++
			}
			w.skipSpace()
		}
		if err := w.expect(']'); err != nil {
			return nil, err
		}
		if len(w.elems) > mark {
			n.elems = slices.Clone(w.elems[mark:])
		}
	case '"':
		s, err := w.str()
		if err != nil {
			return nil, err
		}
		n.kind, n.str = jsonString, s
	case 't', 'f', 'n':
		lit := "null"
		switch c {
		case 't':
			lit = "true"
		case 'f':
			lit = "false"
		}
		if !bytes.HasPrefix(w.data[w.pos:], []byte(lit)) {
			return nil, fmt.Errorf("bad literal at offset %d", w.pos)
		}
		w.pos += len(lit)
		switch c {
		case 'n':
			n.kind = jsonNull
		default:
			n.kind, n.boolean = jsonBool, c == 't'
		}
	default:
		for w.pos < len(w.data) && strings.IndexByte("+-0123456789.eE", w.data[w.pos]) >= 0 {
			w.pos++
		}
		if w.pos == n.start {
			return nil, fmt.Errorf("unexpected %q at offset %d", c, w.pos)
		}
		n.kind, n.num = jsonNumber, json.Number(w.data[n.start:w.pos])
	}
	n.end = w.pos
	return n, nil
}

// str reads a string literal at pos; only strings with escapes go through
// encoding/json.
func (w *jsonWalker) str() (string, error) {
	if w.pos >= len(w.data) || w.data[w.pos] != '"' {
		return "", fmt.Errorf("want a string at offset %d", w.pos)
	}
	start := w.pos
	escaped := false
	for i := start + 1; i < len(w.data); i++ {
		switch w.data[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			w.pos = i + 1
			raw := w.data[start:w.pos]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			err := json.Unmarshal(raw, &s)
			return s, err
		}
	}
	return "", io.ErrUnexpectedEOF
}

// splice returns data with [start, end) replaced by repl, in a new slice.
func splice(data []byte, start, end int, repl string) []byte {
	out := make([]byte, 0, len(data)-(end-start)+len(repl))
	out = append(out, data[:start]...)
	out = append(out, repl...)
	return append(out, data[end:]...)
}
