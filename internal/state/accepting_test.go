package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// acceptingFiles lists the acceptance records in s's directory.
func acceptingFiles(t *testing.T, s *Store) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(s.Dir(), acceptingPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return matches
}

func TestAcceptingRecordRoundTrip(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	const run = "20261125-010203-abcdef"
	if err := s.SaveState(State{RunID: run, Status: StatusRunning}); err != nil {
		t.Fatal(err)
	}
	// Ids with what a file name or the record's own syntax could trip on.
	ids := []string{"US-001", "a,b", "x/y", "with space", "50%", "ünï.code", "+plus"}
	recorded, err := s.Accepting(run, ids)
	if err != nil || !recorded {
		t.Fatalf("Accepting = %v, %v; want recorded", recorded, err)
	}
	if files := acceptingFiles(t, s); len(files) != 1 {
		t.Fatalf("records %v, want one file", files)
	}
	st, err := s.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids, st.Accepting); diff != "" {
		t.Errorf("loaded Accepting (-want +got):\n%s", diff)
	}

	s.Accepted()
	if files := acceptingFiles(t, s); len(files) != 0 {
		t.Errorf("records %v after Accepted, want none", files)
	}
	if st, err = s.LoadState(); err != nil || st.Accepting != nil {
		t.Errorf("after Accepted: Accepting %v, %v; want none", st.Accepting, err)
	}
}

func TestAcceptingMergesWithStateJSON(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	const run = "20261125-010203-abcdef"
	if err := s.SaveState(State{RunID: run, Accepting: []string{"A", "B"}}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Accepting(run, []string{"B", "C"}); err != nil || !ok {
		t.Fatalf("Accepting = %v, %v", ok, err)
	}
	st, err := s.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A", "B", "C"}, st.Accepting); diff != "" {
		t.Errorf("Accepting (-want +got):\n%s", diff)
	}
}

// A record names its run: one another run left is not read into this
// run's state, and DropAccepting removes every one.
func TestAcceptingRecordOfAnotherRun(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	if ok, err := s.Accepting("20261125-000000-old000", []string{"A"}); err != nil || !ok {
		t.Fatalf("Accepting = %v, %v", ok, err)
	}
	if err := s.SaveState(State{RunID: "20261125-010203-new000"}); err != nil {
		t.Fatal(err)
	}
	st, err := s.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	if st.Accepting != nil {
		t.Errorf("Accepting = %v, want none: the record is another run's", st.Accepting)
	}
	if err := s.DropAccepting(); err != nil {
		t.Fatal(err)
	}
	if files := acceptingFiles(t, s); len(files) != 0 {
		t.Errorf("records %v after DropAccepting, want none", files)
	}
}

// Ids too long for a file name are not recorded: the caller saves them in
// state.json.
func TestAcceptingTooLong(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	ok, err := s.Accepting("20261125-010203-abcdef", []string{strings.Repeat("x", maxAcceptingName)})
	if err != nil || ok {
		t.Errorf("Accepting = %v, %v; want not recorded, no error", ok, err)
	}
	if files := acceptingFiles(t, s); len(files) != 0 {
		t.Errorf("records %v, want none", files)
	}
}

// A record that cannot be made is an error, so the task is not accepted.
func TestAcceptingUnwritable(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	// A directory where the record's file goes (writable or not, root or not).
	if err := os.Mkdir(filepath.Join(s.Dir(), acceptingPrefix+"20261125-010203-abcdef.A"), 0o755); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Accepting("20261125-010203-abcdef", []string{"A"}); err == nil || ok {
		t.Errorf("Accepting = %v, %v; want an error", ok, err)
	}
}
