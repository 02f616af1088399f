package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
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
	var raw json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
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

	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	w := &jsonWalker{dec: dec, data: data, base: base}
	root, err := w.value()
	if err != nil {
		return nil, fmt.Errorf("reading JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("reading JSON: unexpected data after the top-level value")
	}
	d.root = root
	return d, nil
}

// jsonWalker builds the tree from json.Decoder tokens. InputOffset after a
// token is the end of that token; the start of the next value is found by
// skipping the whitespace, ':' and ',' the decoder consumes silently.
type jsonWalker struct {
	dec  *json.Decoder
	data []byte
	base int
}

func (w *jsonWalker) next() (tok json.Token, start, end int, err error) {
	start = w.base + int(w.dec.InputOffset())
	for start < len(w.data) {
		switch w.data[start] {
		case ' ', '\t', '\r', '\n', ':', ',':
			start++
			continue
		}
		break
	}
	tok, err = w.dec.Token()
	return tok, start, w.base + int(w.dec.InputOffset()), err
}

func (w *jsonWalker) value() (*jsonNode, error) {
	tok, start, end, err := w.next()
	if err != nil {
		return nil, err
	}
	n := &jsonNode{start: start, end: end}
	switch v := tok.(type) {
	case nil:
		n.kind = jsonNull
	case bool:
		n.kind, n.boolean = jsonBool, v
	case json.Number:
		n.kind, n.num = jsonNumber, v
	case string:
		n.kind, n.str = jsonString, v
	case json.Delim:
		switch v {
		case '{':
			n.kind = jsonObject
			for w.dec.More() {
				ktok, ks, ke, err := w.next()
				if err != nil {
					return nil, err
				}
				key, ok := ktok.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %T", ktok)
				}
				val, err := w.value()
				if err != nil {
					return nil, err
				}
				n.members = append(n.members, jsonMember{key: key, keyStart: ks, keyEnd: ke, val: val})
			}
		case '[':
			n.kind = jsonArray
			for w.dec.More() {
				val, err := w.value()
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, val)
			}
		default:
			return nil, fmt.Errorf("unexpected %q", v)
		}
		if _, _, n.end, err = w.next(); err != nil { // the closing delimiter
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unexpected token %T", tok)
	}
	return n, nil
}

// splice returns data with [start, end) replaced by repl, in a new slice.
func splice(data []byte, start, end int, repl string) []byte {
	out := make([]byte, 0, len(data)-(end-start)+len(repl))
	out = append(out, data[:start]...)
	out = append(out, repl...)
	return append(out, data[end:]...)
}
