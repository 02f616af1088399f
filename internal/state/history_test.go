package state

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func record(i int, outcome Outcome) Record {
	start := time.Date(2026, 11, 21, 7, 0, i, 0, time.UTC)
	return Record{
		RunID: "20261121-070000-abcdef", Iteration: i, TaskID: "US-00" + string(rune('0'+i%10)),
		Agent: "claude", Model: "sonnet", StartedAt: start, EndedAt: start.Add(time.Minute),
		DurationMS: 60000, ExitCode: 0, Outcome: outcome, Marker: "TASK_DONE", Strategy: "promise-tag",
		InputTokens: 100, OutputTokens: 200, CacheReadTokens: 300, CacheWriteTokens: 400,
		CostUSD: 0.5, ContextUsedPercent: 12.5, SessionID: "sess", FilesChanged: 3,
		Commit: "abc123", Error: "line one\nline \"two\"",
	}
}

func historyPath(s *Store) string { return filepath.Join(s.Dir(), "history.jsonl") }

func TestHistoryAppendRead(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	got, err := s.History()
	if err != nil || got != nil {
		t.Fatalf("History of a fresh project = %v, %v; want nil, nil", got, err)
	}
	want := []Record{record(1, "task_done"), record(2, "no_marker"), record(3, "rate_limited")}
	for _, r := range want {
		if err := s.AppendHistory(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err = s.History()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("History (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(historyPath(s))
	if err != nil {
		t.Fatal(err)
	}
	assertJSONL(t, data, 3)
	// Every field of the design's history line is written, zero or not.
	for _, key := range []string{"run_id", "iteration", "task_id", "agent", "model", "started_at", "ended_at",
		"duration_ms", "exit_code", "outcome", "marker", "strategy", "input_tokens", "output_tokens",
		"cache_read_tokens", "cache_write_tokens", "cost_usd", "context_used_percent", "session_id",
		"files_changed", "commit", "error"} {
		if !bytes.Contains(data, []byte(`"`+key+`":`)) {
			t.Errorf("history line lacks %q", key)
		}
	}
}

// assertJSONL checks data is n newline-terminated JSON objects.
func assertJSONL(t *testing.T, data []byte, n int) {
	t.Helper()
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("history does not end with a newline: %q", data)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("history has %d lines, want %d:\n%s", len(lines), n, data)
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("line %d is not JSON: %v: %q", i+1, err, l)
		}
	}
}

func TestHistoryTornLastLine(t *testing.T) {
	t.Parallel()
	full, err := json.Marshal(record(2, "task_done"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		tail      string // what a killed writer left after the first, whole line
		wantAfter int    // records after repair and one more append
	}{
		{"cut mid-record", string(full[:len(full)/2]), 2},
		{"cut inside a string", `{"run_id":"20261121-07`, 2},
		{"complete record without newline", string(full), 3},
		{"garbage", "\x00\x00\x00", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openTemp(t)
			first, _ := json.Marshal(record(1, "no_marker"))
			if err := os.WriteFile(historyPath(s), append(append(first, '\n'), tt.tail...), 0o644); err != nil {
				t.Fatal(err)
			}
			// Reading tolerates the torn line.
			got, err := s.History()
			if err != nil {
				t.Fatalf("History with a torn last line: %v", err)
			}
			if want := tt.wantAfter - 1; len(got) != want {
				t.Errorf("History read %d records, want %d", len(got), want)
			}
			// The next append repairs it first.
			if err := s.AppendHistory(record(9, "task_done")); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(historyPath(s))
			if err != nil {
				t.Fatal(err)
			}
			assertJSONL(t, data, tt.wantAfter)
			got, err = s.History()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.wantAfter || got[len(got)-1].Iteration != 9 {
				t.Errorf("after repair: %d records, last %+v", len(got), got[len(got)-1])
			}
		})
	}
}

func TestHistoryTornOnlyLine(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	if err := os.WriteFile(historyPath(s), []byte(`{"run_id":"x","itera`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendHistory(record(1, "task_done")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(historyPath(s))
	assertJSONL(t, data, 1)
}

func TestHistoryLongTornLine(t *testing.T) {
	t.Parallel()
	// The torn line is longer than the repair's read-back block.
	s := openTemp(t)
	first, _ := json.Marshal(record(1, "no_marker"))
	long := `{"error":"` + strings.Repeat("x", 200<<10)
	if err := os.WriteFile(historyPath(s), append(append(first, '\n'), long...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendHistory(record(2, "task_done")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(historyPath(s))
	assertJSONL(t, data, 2)
}

func TestHistoryCorruptMiddleLine(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	a, _ := json.Marshal(record(1, "task_done"))
	b, _ := json.Marshal(record(3, "task_done"))
	data := string(a) + "\n\n" + `{"run_id": "x", "iteration": oops}` + "\n" + string(b) + "\n"
	if err := os.WriteFile(historyPath(s), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.History()
	want := historyPath(s) + ":3: invalid history record"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("History error = %v, want it to contain %q", err, want)
	}
}

func TestHistoryBlankLinesSkipped(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	a, _ := json.Marshal(record(1, "task_done"))
	if err := os.WriteFile(historyPath(s), []byte("\n"+string(a)+"\n  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.History()
	if err != nil || len(got) != 1 {
		t.Errorf("History = %d records, %v; want 1, nil", len(got), err)
	}
}

func TestHistoryConcurrentAppends(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	done := make(chan error)
	for i := range 20 {
		go func() { done <- s.AppendHistory(record(i, "task_done")) }()
	}
	for range 20 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(historyPath(s))
	assertJSONL(t, data, 20)
}

func FuzzHistory(f *testing.F) {
	a, _ := json.Marshal(record(1, "task_done"))
	f.Add(append(a, '\n'))
	f.Add(append(append(a, '\n'), a[:20]...))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte("null\n[1]\n"))
	f.Add([]byte(`{"iteration": "x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(historyPath(s), data, 0o644); err != nil {
			t.Fatal(err)
		}
		before, herr := s.History()
		// Appending after any content leaves a file whose appended record
		// reads back last, unless an earlier line was already corrupt.
		if err := s.AppendHistory(record(7, "task_done")); err != nil {
			t.Fatal(err)
		}
		after, err := s.History()
		if herr == nil {
			if err != nil {
				t.Fatalf("History failed after append: %v", err)
			}
			if len(after) != len(before)+1 || after[len(after)-1].Iteration != 7 {
				t.Fatalf("after append: %d records (before %d)", len(after), len(before))
			}
		}
	})
}
