package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"
)

// entry is one key a TOML document sets: a key-value (inline tables
// included, each key inside them too) or a table header.
type entry struct {
	path []string
	line int
	kind unstable.Kind // of the value; Table or ArrayTable for a header
	str  string        // the value, when it is a string
	elem unstable.Kind // an array's first element that is not a string; Invalid if none
}

// indexKeys lists the keys of a document in order, with their lines and
// value types. It uses go-toml's parser; on a syntax error the list is
// partial and the error is returned (the decoder reports it with context).
func indexKeys(data []byte) ([]entry, error) {
	lines := newLineIndex(data)
	var (
		p       unstable.Parser
		entries []entry
		table   []string
	)
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			var line int
			table, line = keyPath(lines, e.Key(), nil)
			entries = append(entries, entry{path: table, line: line, kind: e.Kind})
		case unstable.KeyValue:
			entries = appendKeyValue(lines, entries, table, e)
		default:
			// The other values need nothing here.
		}
	}
	return entries, p.Error()
}

func appendKeyValue(lines lineIndex, entries []entry, prefix []string, kv *unstable.Node) []entry {
	path, line := keyPath(lines, kv.Key(), prefix)
	v := kv.Value()
	en := entry{path: path, line: line, kind: v.Kind}
	switch v.Kind {
	case unstable.String:
		en.str = string(v.Data)
	case unstable.Array:
		for it := v.Children(); it.Next(); {
			if k := it.Node().Kind; k != unstable.String {
				en.elem = k
				break
			}
		}
	default:
		// The other values need nothing here.
	}
	entries = append(entries, en)
	if v.Kind == unstable.InlineTable {
		for it := v.Children(); it.Next(); {
			entries = appendKeyValue(lines, entries, path, it.Node())
		}
	}
	return entries
}

// keyPath returns prefix plus the parts of a key, and the key's line.
func keyPath(lines lineIndex, it unstable.Iterator, prefix []string) ([]string, int) {
	path := slices.Clone(prefix)
	line := 0
	for it.Next() {
		n := it.Node()
		if line == 0 {
			line = lines.at(int(n.Raw.Offset))
		}
		path = append(path, string(n.Data))
	}
	return path, line
}

// lineIndex maps byte offsets to 1-based lines.
type lineIndex []int // offsets of the newlines

func newLineIndex(data []byte) lineIndex {
	var nl lineIndex
	for i, b := range data {
		if b == '\n' {
			nl = append(nl, i)
		}
	}
	return nl
}

func (l lineIndex) at(offset int) int {
	return sort.SearchInts(l, offset) + 1
}

// pathKey joins a key path into a map key; parts may hold dots.
func pathKey(path []string) string { return strings.Join(path, "\x00") }

// checkTypes reports every key whose value has the wrong TOML type for the
// schema, and every duration that does not parse. Keys the schema does not
// know are left to the decoder's unknown-key errors. A key is reported
// once, where it first goes wrong.
func checkTypes(file string, entries []entry) errorList {
	var errs errorList
	reported := map[string]bool{}
	for _, en := range entries {
		if n := miscased(en.path); n > 0 && !reportedAt(reported, en.path[:n]) {
			// go-toml matches field names regardless of case; TOML and
			// ralph do not, and such a key would be silently dropped.
			reported[pathKey(en.path[:n])] = true
			key := dotted(en.path[:n])
			valid := keyNames()
			if n == 3 && en.path[0] == "prices" {
				valid = priceFieldNames()
			} else if n == 3 {
				valid = agentFieldNames()
			}
			errs.add(&Error{File: file, Line: en.line, Key: key, Msg: unknownKey(key, valid)})
			continue
		}
		t, depth, known := schemaType(en.path)
		if !known || reportedAt(reported, en.path[:depth]) {
			continue
		}
		key := dotted(en.path[:depth])
		problem := ""
		switch {
		case depth < len(en.path):
			// agent.x = 1 or [agent]: a table where a value belongs.
			problem = fmt.Sprintf("want %s, got a table", t.want())
		case !typeMatches(t, en):
			problem = fmt.Sprintf("want %s, got %s", t.want(), describe(en))
		case t == typeDuration:
			if _, err := time.ParseDuration(en.str); err != nil {
				problem = notADuration(en.str)
			}
		}
		if problem != "" {
			reported[pathKey(en.path[:depth])] = true
			errs.add(&Error{File: file, Line: en.line, Key: key, Msg: key + ": " + problem})
		}
	}
	return errs
}

// miscased returns how many parts of path lead to a part that names a key
// of the schema in the wrong case (MODEL, [Agents.x], Command), or 0.
func miscased(path []string) int {
	wrongCase := func(name string, valid []string) bool {
		return !slices.Contains(valid, name) && slices.ContainsFunc(valid, func(v string) bool { return strings.EqualFold(v, name) })
	}
	switch {
	case wrongCase(path[0], keyNames()):
		return 1
	case path[0] == "agents" && len(path) >= 3 && wrongCase(path[2], agentFieldNames()):
		return 3
	case path[0] == "prices" && len(path) >= 3 && wrongCase(path[2], priceFieldNames()):
		return 3
	}
	return 0
}

// reportedAt says whether path or a key above it was reported: one wrong
// [[agents]] header is enough, without an error for each key below it.
func reportedAt(reported map[string]bool, path []string) bool {
	for i := 1; i <= len(path); i++ {
		if reported[pathKey(path[:i])] {
			return true
		}
	}
	return false
}

// schemaType returns the type the schema wants at path, and how many parts
// of path it covers: fewer than len(path) when path goes below a value.
// known is false for keys the schema does not have.
func schemaType(path []string) (t valueType, depth int, known bool) {
	if slices.Contains(sections(), path[0]) {
		if len(path) == 1 {
			return typeTable, 1, true
		}
		f, ok := lookupField(path[0] + "." + path[1])
		if !ok {
			return 0, 0, false
		}
		return typeOf(f.ptr(&Config{})), 2, true
	}
	if path[0] == "prices" {
		switch {
		case len(path) <= 2: // prices, prices.MODEL
			return typeTable, len(path), true
		case slices.Contains(priceFieldNames(), path[2]):
			return typeFloat, 3, true
		}
		return 0, 0, false
	}
	if path[0] != "agents" {
		f, ok := lookupField(path[0])
		if !ok {
			return 0, 0, false
		}
		return typeOf(f.ptr(&Config{})), 1, true
	}
	switch {
	case len(path) <= 2: // agents, agents.NAME
		return typeTable, len(path), true
	case path[2] == "command", path[2] == "output":
		return typeString, 3, true
	case path[2] == "args", path[2] == "extra-args":
		return typeList, 3, true
	case path[2] == "env" && len(path) == 3:
		return typeTable, 3, true
	case path[2] == "env":
		return typeString, 4, true
	case path[2] == "error-patterns" && len(path) == 3:
		return typeTable, 3, true
	case path[2] == "error-patterns":
		return typeList, 4, true
	}
	return 0, 0, false
}

func typeMatches(t valueType, en entry) bool {
	switch t {
	case typeString, typeDuration:
		return en.kind == unstable.String
	case typeInt:
		return en.kind == unstable.Integer
	case typeFloat:
		return en.kind == unstable.Float || en.kind == unstable.Integer
	case typeBool:
		return en.kind == unstable.Bool
	case typeNetwork:
		return en.kind == unstable.String || en.kind == unstable.Bool
	case typeList:
		return en.kind == unstable.Array && en.elem == unstable.Invalid
	case typeTable:
		return en.kind == unstable.Table || en.kind == unstable.InlineTable
	}
	return false
}

// describe names the TOML type of a value: "a string", "an array of
// tables".
func describe(en entry) string {
	if en.kind == unstable.Array && en.elem != unstable.Invalid {
		return "a list holding " + kindName(en.elem)
	}
	return kindName(en.kind)
}

func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a float"
	case unstable.Bool:
		return "a boolean"
	case unstable.Array:
		return "an array"
	case unstable.Table, unstable.InlineTable:
		return "a table"
	case unstable.ArrayTable:
		return "an array of tables"
	case unstable.LocalDate:
		return "a date"
	case unstable.LocalTime:
		return "a time"
	case unstable.LocalDateTime, unstable.DateTime:
		return "a date-time"
	default:
		// The other values need nothing here.
	}
	return "a " + strings.ToLower(k.String())
}
