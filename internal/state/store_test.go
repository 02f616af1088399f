package state

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenCreatesDirs(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	s, err := Open(project)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(project, ".ralph"); s.Dir() != want {
		t.Errorf("Dir() = %q, want %q", s.Dir(), want)
	}
	if fi, err := os.Stat(filepath.Join(project, ".ralph", "runs")); err != nil || !fi.IsDir() {
		t.Errorf(".ralph/runs: %v", err)
	}
	// Opening again is fine.
	if _, err := Open(project); err != nil {
		t.Fatal(err)
	}
}

func TestNewRunID(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 8, 20, 12, 0, time.FixedZone("CET", 3600))
	id := NewRunID(now)
	if !regexp.MustCompile(`^20261121-072012-[0-9a-f]{6}$`).MatchString(id) {
		t.Errorf("NewRunID = %q, want 20261121-072012-xxxxxx (UTC)", id)
	}
	// The suffix is random: ids of the same second differ (24 random bits,
	// so 100 ids collide with odds of 3 in 10,000; require 95 distinct).
	seen := map[string]bool{}
	for range 100 {
		seen[NewRunID(now)] = true
	}
	if len(seen) < 95 {
		t.Errorf("100 run ids of the same second: only %d distinct", len(seen))
	}
	if NewRunID(now) >= NewRunID(now.Add(time.Second)) {
		t.Error("run ids do not sort by time")
	}
}

func TestLoadStateMissing(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	st, err := s.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(State{Tasks: map[string]TaskState{}}, st); diff != "" {
		t.Errorf("LoadState on a fresh project (-want +got):\n%s", diff)
	}
}

func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	wait := time.Date(2026, 11, 21, 19, 0, 0, 0, time.UTC)
	want := State{
		RunID:        "20261121-072012-a1b2c3",
		Status:       StatusWaiting,
		Plan:         "prd.json",
		Agent:        "claude",
		Model:        "opus",
		Iteration:    7,
		CurrentTask:  "US-003",
		StartedAt:    time.Date(2026, 11, 21, 7, 20, 12, 0, time.UTC),
		UpdatedAt:    time.Date(2026, 11, 21, 9, 1, 2, 3000, time.UTC),
		WaitingUntil: &wait,
		PID:          4242,
		Totals:       Totals{Iterations: 7, TasksDone: 2, TasksFailed: 1, InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40, CostUSD: 1.25, DurationMS: 99},
		Tasks:        map[string]TaskState{"US-001": {Attempts: 1}, "US-002": {Attempts: 3, Failed: true, LastError: "tests fail"}},
		Message:      "waiting for the usage limit to reset",
	}
	for range 3 { // overwriting works too
		if err := s.SaveState(want); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// Atomic writes leave no temporary files behind.
	entries, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{".gitignore", "runs", "state.json"}, names); diff != "" {
		t.Errorf(".ralph entries (-want +got):\n%s", diff)
	}
}

func TestLoadStateCorrupt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, want string
	}{
		{"syntax", "{\n  \"run_id\": \"x\",\n  \"status\": oops\n}\n", `state.json:3:14: invalid character 'o'`},
		{"type", "{\n  \"iteration\": \"seven\"\n}\n", `state.json:2:23: iteration: json: cannot unmarshal`},
		{"not an object", "[1, 2]\n", `state.json:1:2: json: cannot unmarshal array`},
		{"truncated", "{\n  \"run_id\": \"x\",", `state.json:2:17: unexpected end of JSON input`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openTemp(t)
			if err := os.WriteFile(filepath.Join(s.Dir(), "state.json"), []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := s.LoadState()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadState error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestIterationFiles(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	tests := []struct {
		iter                int
		wantPrompt, wantOut string
	}{
		{1, "iter-001.prompt.md", "iter-001.out"},
		{42, "iter-042.prompt.md", "iter-042.out"},
		{999, "iter-999.prompt.md", "iter-999.out"},
		{1000, "iter-1000.prompt.md", "iter-1000.out"},
	}
	for _, tt := range tests {
		p, o, err := s.IterationFiles("20261121-072012-a1b2c3", tt.iter)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(s.Dir(), "runs", "20261121-072012-a1b2c3")
		if p != filepath.Join(dir, tt.wantPrompt) || o != filepath.Join(dir, tt.wantOut) {
			t.Errorf("IterationFiles(%d) = %q, %q", tt.iter, p, o)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf("run directory not created: %v", err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b"} {
		if _, _, err := s.IterationFiles(bad, 1); err == nil {
			t.Errorf("IterationFiles(%q) accepted a bad run id", bad)
		}
	}
}

// TestPrepareIteration: the next iteration's files made ahead are the
// ones IterationFiles names, kept when the iteration comes and removed
// when it does not; a file already there is never touched.
func TestPrepareIteration(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.PrepareIteration("run1", 2)
	s.UsePrepared("run1", 2)
	prompt, out, err := s.IterationFiles("run1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prompt, []byte("the prompt"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(out) // the agent said nothing: it stays empty
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	s.PrepareIteration("run1", 3) // the next: made, then not used
	p3, o3 := TranscriptFiles(filepath.Dir(s.Dir()), "run1", 3)
	s.DropPrepared()
	for _, p := range []string{prompt, out} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s of the iteration that came: %v", filepath.Base(p), err)
		}
	}
	for _, p := range []string{p3, o3} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s of the iteration that never came is still there (%v)", filepath.Base(p), err)
		}
	}
	// A file that is there already is neither truncated nor removed.
	p4, _ := TranscriptFiles(filepath.Dir(s.Dir()), "run1", 4)
	if err := os.WriteFile(p4, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.PrepareIteration("run1", 4)
	s.DropPrepared()
	if b, err := os.ReadFile(p4); err != nil || string(b) != "kept" {
		t.Errorf("a file that was there: %q, %v", b, err)
	}
}
