package task

import (
	"encoding/json"
	"strings"
)

// This file edits JSON in place: members are inserted, replaced and deleted
// by splicing bytes at the offsets jsonpos.go recorded, copying the layout
// (indentation, line endings, separators) of the neighbours, so that a
// user's file keeps its key order, unknown fields and style.

// insertMember adds key: val as the last member of obj, copying the
// indentation, line ending and key/value separator of the member before it.
func insertMember(data []byte, obj *jsonNode, key, val string) []byte {
	if len(obj.members) == 0 {
		return splice(data, obj.start+1, obj.start+1, key+": "+val)
	}
	last := obj.members[len(obj.members)-1]
	ws := last.keyStart
	for ws > obj.start+1 && isJSONSpace(data[ws-1]) {
		ws--
	}
	indent := string(data[ws:last.keyStart])
	if nl := strings.LastIndexByte(indent, '\n'); nl >= 0 {
		lineEnd := "\n"
		if nl > 0 && indent[nl-1] == '\r' {
			lineEnd = "\r\n"
		}
		indent = lineEnd + indent[nl+1:]
	}
	sep := string(data[last.keyEnd:last.val.start])
	return splice(data, last.val.end, last.val.end, ","+indent+key+sep+val)
}

// deleteMember removes the last member named key from obj together with one
// separating comma, leaving the layout of the others as it was.
func deleteMember(data []byte, obj *jsonNode, key string) []byte {
	i := -1
	for k := range obj.members {
		if obj.members[k].key == key {
			i = k
		}
	}
	switch {
	case i < 0:
		return data
	case i > 0:
		// From the end of the previous value: takes ", <ws> key: val".
		return splice(data, obj.members[i-1].val.end, obj.members[i].val.end, "")
	case len(obj.members) > 1:
		// The first of several: takes "key: val, <ws>".
		return splice(data, obj.members[0].keyStart, obj.members[1].keyStart, "")
	default:
		m := obj.members[0]
		return splice(data, m.keyStart, m.val.end, "")
	}
}

// appendElement adds elem, rendered by render at the element indentation it
// is given, as the last element of arr. It copies the separator between the
// existing elements and their indentation; an element written on one line
// gets a new element on one line.
func appendElement(data []byte, arr *jsonNode, render func(style jsonStyle) string) []byte {
	if len(arr.elems) == 0 {
		base := lineIndent(data, arr.start)
		lineEnd := lineEnding(data)
		st := jsonStyle{indent: base + "  ", unit: "  ", lineEnd: lineEnd}
		return splice(data, arr.start+1, arr.end-1, lineEnd+st.indent+render(st)+lineEnd+base)
	}
	last := arr.elems[len(arr.elems)-1]
	var gap string
	if len(arr.elems) > 1 {
		gap = string(data[arr.elems[len(arr.elems)-2].end:last.start])
	} else {
		gap = "," + string(data[arr.start+1:last.start])
	}
	st := jsonStyle{compact: !strings.Contains(string(data[last.start:last.end]), "\n"), lineEnd: lineEnding(data)}
	if !st.compact {
		st.indent = lineIndent(data, last.start)
		st.unit = indentUnit(data, last, st.indent)
	}
	return splice(data, last.end, last.end, gap+render(st))
}

// jsonStyle is how a new JSON value is laid out to match its neighbours.
type jsonStyle struct {
	compact bool   // one line: {"id": "A", "passes": false}
	indent  string // the indentation of the line the value starts on
	unit    string // one level of indentation
	lineEnd string
}

// lineIndent returns the whitespace at the start of the line holding off.
func lineIndent(data []byte, off int) string {
	start := off
	for start > 0 && data[start-1] != '\n' {
		start--
	}
	end := start
	for end < len(data) && (data[end] == ' ' || data[end] == '\t') {
		end++
	}
	return string(data[start:end])
}

// indentUnit guesses one indentation level from an object or array node
// whose line is indented by base: the extra indentation of its first member.
func indentUnit(data []byte, n *jsonNode, base string) string {
	var first int
	switch {
	case len(n.members) > 0:
		first = n.members[0].keyStart
	case len(n.elems) > 0:
		first = n.elems[0].start
	default:
		return "  "
	}
	in := lineIndent(data, first)
	if u, ok := strings.CutPrefix(in, base); ok && u != "" {
		return u
	}
	return "  "
}

// lineEnding returns "\r\n" when data uses it, else "\n".
func lineEnding(data []byte) string {
	if i := strings.IndexByte(string(data), '\n'); i > 0 && data[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

func isJSONSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// jsonKV is one member of an object being rendered; val is JSON text.
type jsonKV struct {
	key string
	val string
}

// renderObject writes an object with its members in the given order. In a
// multi-line style, arrays of strings go one element per line, as the
// snarktank and ral examples write them.
func renderObject(members []jsonKV, st jsonStyle) string {
	if st.compact {
		parts := make([]string, len(members))
		for i, m := range members {
			parts[i] = quoteJSON(m.key) + ": " + m.val
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	var b strings.Builder
	b.WriteString("{")
	for i, m := range members {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(st.lineEnd + st.indent + st.unit + quoteJSON(m.key) + ": " + m.val)
	}
	b.WriteString(st.lineEnd + st.indent + "}")
	return b.String()
}

// jsonString encodes s as a JSON string, without escaping <, > and &.
func quoteJSON(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonStrings encodes a list of strings: one per line in a multi-line
// style at the given member indentation, inline otherwise.
func jsonStrings(list []string, st jsonStyle, depth int) string {
	if len(list) == 0 {
		return "[]"
	}
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = quoteJSON(s)
	}
	if st.compact {
		return "[" + strings.Join(parts, ", ") + "]"
	}
	in := st.indent + strings.Repeat(st.unit, depth+1)
	return "[" + st.lineEnd + in + strings.Join(parts, ","+st.lineEnd+in) + st.lineEnd + st.indent + strings.Repeat(st.unit, depth) + "]"
}
