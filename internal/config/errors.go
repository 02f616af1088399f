package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/words"
)

// Error is one problem with a setting, located where the user can fix it.
// Load and Validate return one Error, or several joined with errors.Join
// (one per line); find them with errors.As.
type Error struct {
	File string // the file the value is in; empty for the environment and flags
	Line int    // 1-based line in File; 0 when not known
	Var  string // the environment variable the value came from, if any
	Key  string // the key, dotted below agents: agents.codex.output; may be empty
	// Msg says what is wrong, naming the key where the location does not:
	// `max-iterations: want an integer, got a string`.
	Msg string
}

func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return e.File + ": " + e.Msg
	case e.Var != "":
		return e.Var + ": " + e.Msg
	}
	return e.Msg
}

// errorList collects problems and returns them in order of file and line.
type errorList []*Error

func (l *errorList) add(e *Error) { *l = append(*l, e) }

func (l errorList) err() error {
	if len(l) == 0 {
		return nil
	}
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	if len(l) == 1 {
		return l[0]
	}
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// unknownKey says a key is not known, suggesting the closest valid one.
func unknownKey(key string, valid []string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	last := key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		last = key[i+1:]
	}
	if s := words.Suggest(last, valid); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
