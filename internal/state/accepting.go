package state

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strings"
)

// acceptingPrefix starts the names of the files that record an acceptance
// under way: "accepting.<run id>.<task ids>" in .ralph/ (Store.Accepting).
const acceptingPrefix = "accepting."

// maxAcceptingName bounds the name of such a file; ids that would make it
// longer are recorded in state.json instead.
const maxAcceptingName = 200

// Accepting records, before it returns, that run runID is accepting the
// tasks ids (State.Accepting says what that means): an empty file in
// .ralph/ whose name holds the run and the ids, created and made durable
// (the directory fsynced) before the plan's mark is written. LoadState
// reads it back into the State of that run. It reports false, having
// recorded nothing, when the ids do not fit in a file name; the caller
// then saves them in state.json. Accepted ends the record.
func (s *Store) Accepting(runID string, ids []string) (bool, error) {
	if runID == "" || strings.ContainsAny(runID, `./\`) || len(ids) == 0 {
		return false, nil
	}
	escaped := make([]string, len(ids))
	for i, id := range ids {
		escaped[i] = url.QueryEscape(id) // no '/', and no ',' to split on
	}
	name := acceptingPrefix + runID + "." + strings.Join(escaped, ",")
	if len(name) > maxAcceptingName {
		return false, nil
	}
	s.Accepted()
	path := s.path(name)
	if err := s.fs().Append(path, nil, 0o600); err != nil {
		return false, fmt.Errorf("record the acceptance: %w", err)
	}
	s.mu.Lock()
	s.accepting = path
	s.mu.Unlock()
	return true, nil
}

// Accepted ends the record Accepting made, if any: the acceptance is
// over (history says how it ended).
func (s *Store) Accepted() {
	s.mu.Lock()
	path := s.accepting
	s.accepting = ""
	s.mu.Unlock()
	if path != "" {
		_ = s.fs().Remove(path) // a file left behind names a run that is no longer read
	}
}

// DropAccepting removes every acceptance record in .ralph/: a new run,
// once it has settled what the last one left (and said so in state.json
// and history), drops the records of that run.
func (s *Store) DropAccepting() error {
	entries, err := s.fs().ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("drop acceptance records: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), acceptingPrefix) {
			if err := s.fs().Remove(s.path(e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("drop acceptance records: %w", err)
			}
		}
	}
	return nil
}

// loadAccepting adds to st.Accepting the ids the acceptance records of
// st's run name.
func (s *Store) loadAccepting(st *State) error {
	if st.RunID == "" {
		return nil
	}
	entries, err := s.fs().ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("read acceptance records: %w", err)
	}
	prefix := acceptingPrefix + st.RunID + "."
	for _, e := range entries {
		list, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		for esc := range strings.SplitSeq(list, ",") {
			id, err := url.QueryUnescape(esc)
			if err != nil {
				return fmt.Errorf("%s: the task id %q: %w", s.path(e.Name()), esc, err)
			}
			if id != "" && !slices.Contains(st.Accepting, id) {
				st.Accepting = append(st.Accepting, id)
			}
		}
	}
	return nil
}
