package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServeMemory: ralph serve watching 10 projects whose histories have
// 10,000 lines each stays under 60 MB of resident memory, however often
// the page asks for their runs, tasks and history. It runs with the
// browser tests (RALPH_E2E_CHROMIUM), and logs the figures for
// BENCHMARKS.md.
func TestServeMemory(t *testing.T) {
	if os.Getenv("RALPH_E2E_CHROMIUM") == "" {
		t.Skip("runs with the browser tests: set RALPH_E2E_CHROMIUM")
	}
	const projects, lines = 10, 10000
	e := newServeEnv(t)
	var dirs []string
	for p := range projects {
		dir := filepath.Join(e.root, fmt.Sprintf("proj-%02d", p))
		if err := os.MkdirAll(filepath.Join(dir, ".ralph"), 0o755); err != nil {
			t.Fatal(err)
		}
		var stories []string
		for i := 1; i <= 50; i++ {
			stories = append(stories, fmt.Sprintf(`{"id": "T-%03d", "title": "Task %d", "passes": %v}`, i, i, i <= 25))
		}
		write(t, filepath.Join(dir, "prd.json"), `{"userStories": [`+strings.Join(stories, ",\n")+"]}\n")
		var b strings.Builder
		t0 := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
		for i := 1; i <= lines; i++ {
			rec := map[string]any{"run_id": "20261124-080000-abcdef", "iteration": i, "task_id": fmt.Sprintf("T-%03d", i%50+1),
				"agent": "claude", "model": "sonnet", "started_at": t0.Add(time.Duration(i) * time.Minute),
				"ended_at": t0.Add(time.Duration(i)*time.Minute + 50*time.Second), "duration_ms": 50000, "exit_code": 0,
				"outcome": "no_marker", "marker": "", "strategy": "", "input_tokens": 12000, "output_tokens": 3000,
				"cache_read_tokens": 40000, "cache_write_tokens": 2000, "cost_usd": 0.0421, "context_used_percent": 23.5,
				"session_id": "5f0c6b1e-2d7a-4c1b-9f3e-8a6d2b7c4e91", "files_changed": 3, "commit": "",
				"error": "the agent ended without a completion marker; its last words: still working on the parser tests"}
			line, _ := json.Marshal(rec)
			b.Write(line)
			b.WriteByte('\n')
		}
		write(t, filepath.Join(dir, ".ralph", "history.jsonl"), b.String())
		st := fmt.Sprintf(`{"run_id": "20261124-080000-abcdef", "status": "stopped", "plan": %q, "agent": "claude", "iteration": %d, "tasks": {}}`,
			filepath.Join(dir, "prd.json"), lines)
		write(t, filepath.Join(dir, ".ralph", "state.json"), st)
		dirs = append(dirs, dir)
	}
	base, _, _ := strings.Cut(e.serve(append(dirs, "--addr", "127.0.0.1:0")...), "?")
	pid := servePID(t)
	var ids []string
	var body struct{ Runs []struct{ ID string } }
	getJSONURL(t, base+"api/v1/runs", &body)
	for _, r := range body.Runs {
		ids = append(ids, r.ID)
	}
	if len(ids) != projects {
		t.Fatalf("%d runs watched, want %d", len(ids), projects)
	}
	// What the page asks for, many times over.
	for range 5 {
		getJSONURL(t, base+"api/v1/runs", nil)
		for _, id := range ids {
			for _, path := range []string{"", "/tasks", "/history?limit=30", "/history?limit=1000"} {
				getJSONURL(t, base+"api/v1/runs/"+id+path, nil)
			}
		}
	}
	rss, peak := memory(t, pid)
	t.Logf("ralph serve, %d projects × %d history lines: RSS %.1f MB, peak %.1f MB", projects, lines, rss, peak)
	if peak >= 60 {
		t.Errorf("peak RSS %.1f MB, want under 60 MB", peak)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func getJSONURL(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if v == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// servePID finds the pid of the ralph serve the test started: its child
// whose command line is ralph serve on 127.0.0.1:0.
func servePID(t *testing.T) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		args := strings.Split(string(cmd), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "ralph" && args[1] == "serve" && strings.Contains(string(cmd), "127.0.0.1:0") &&
			ppidIs(ent.Name(), os.Getpid()) {
			return pid
		}
	}
	t.Fatal("no ralph serve process found")
	return 0
}

func ppidIs(pid string, parent int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 1 && f[1] == strconv.Itoa(parent)
}

// memory reads a process's resident and peak resident memory, in MB.
func memory(t *testing.T, pid int) (rss, peak float64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return rss, peak
}
