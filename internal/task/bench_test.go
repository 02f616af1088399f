package task

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// planN is a prd.json of n stories, as `ralph run` benchmarks use.
func planN(n int) []byte {
	var stories []string
	for i := 1; i <= n; i++ {
		stories = append(stories, fmt.Sprintf(`    {"id": "T-%03d", "title": "Task %d", "description": "Do thing %d.", "acceptanceCriteria": ["it works", "tests pass"], "priority": %d, "passes": false}`, i, i, i, i))
	}
	return []byte("{\n  \"project\": \"bench\",\n  \"userStories\": [\n" + strings.Join(stories, ",\n") + "\n  ]\n}\n")
}

// checklistN is an IMPLEMENTATION_PLAN.md of n tasks in the shape of
// planN's stories.
func checklistN(n int) []byte {
	var b strings.Builder
	b.WriteString("# Bench\n\nA plan to measure.\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] T-%03d: Task %d\n  Do thing %d.\n  - Priority: %d\n  - it works\n  - tests pass\n", i, i, i, i)
	}
	return []byte(b.String())
}

func benchRead(b *testing.B, read func(path string, data []byte) error, path string, data []byte) {
	b.Helper()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := read(path, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadPRD50(b *testing.B) {
	benchRead(b, func(p string, d []byte) error { _, err := readPRD(p, d); return err }, "prd.json", planN(50))
}

func BenchmarkReadPRD1000(b *testing.B) {
	benchRead(b, func(p string, d []byte) error { _, err := readPRD(p, d); return err }, "prd.json", planN(1000))
}

func BenchmarkReadChecklist1000(b *testing.B) {
	benchRead(b, func(p string, d []byte) error { _, err := readChecklist(p, d); return err }, "IMPLEMENTATION_PLAN.md", checklistN(1000))
}

// benchSetStatus is one runner-mode "mark done" per op on a plan file in
// dir: change check, splice, validation, atomic write. The task cycles
// through the plan, done on the first pass and open again on the next, so
// that every op changes the file.
func benchSetStatus(b *testing.B, dir, name string, data []byte, n int) {
	b.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		st := StatusDone
		if (i/n)%2 == 1 {
			st = StatusOpen
		}
		if err := f.SetStatus(fmt.Sprintf("T-%03d", i%n+1), st); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// tmpfs returns a directory on a memory filesystem, where fsync costs
// nothing, so that a benchmark measures the edit and not the disk; it
// skips the benchmark where there is none.
func tmpfs(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ralph-bench-") //nolint:usetesting // tmpfs on purpose; b.TempDir is on disk
	if err != nil {
		b.Skipf("no tmpfs at /dev/shm: %v", err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// BenchmarkSetStatusEdit50 is what SetStatus does in memory on a
// 50-story prd.json, without the write: change check (the file is read and
// compared), splice, the parse of the result, the check that the status
// took.
func BenchmarkSetStatusEdit50(b *testing.B) {
	benchEdit(b, "prd.json", planN(50), 50)
}

func BenchmarkSetStatusEdit1000(b *testing.B) {
	benchEdit(b, "prd.json", planN(1000), 1000)
}

func BenchmarkSetStatusEditChecklist50(b *testing.B) {
	benchEdit(b, "IMPLEMENTATION_PLAN.md", checklistN(50), 50)
}

func benchEdit(b *testing.B, name string, data []byte, n int) {
	b.Helper()
	path := filepath.Join(tmpfs(b), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		st := StatusDone
		if (i/n)%2 == 1 {
			st = StatusOpen
		}
		id := fmt.Sprintf("T-%03d", i%n+1)
		next, err := f.prepare("", nil, func(cur parsed) (parsed, error) { return f.format.setStatus(cur, id, st) },
			func(after *Plan) error {
				if t, ok := after.Task(id); !ok || t.Status != st {
					return fmt.Errorf("%s is not %s", id, st)
				}
				return nil
			})
		if err != nil || next == nil {
			b.Fatal(err, next)
		}
		// Keep the file as the next change check expects it, off the clock.
		b.StopTimer()
		f.cur = next
		if err := os.WriteFile(path, next.source(), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		i++
	}
}

// BenchmarkSetStatus50 is SetStatus on a 50-story prd.json on the disk
// the tests run on: fsync of the file and of the directory included.
func BenchmarkSetStatus50(b *testing.B) {
	benchSetStatus(b, b.TempDir(), "prd.json", planN(50), 50)
}

// BenchmarkSetStatus50Tmpfs is the same on tmpfs: everything but the
// fsyncs' latency (change check, splice, validation, temp file, rename).
func BenchmarkSetStatus50Tmpfs(b *testing.B) {
	benchSetStatus(b, tmpfs(b), "prd.json", planN(50), 50)
}

func BenchmarkSetStatus1000Tmpfs(b *testing.B) {
	benchSetStatus(b, tmpfs(b), "prd.json", planN(1000), 1000)
}

func BenchmarkSetStatusChecklist50Tmpfs(b *testing.B) {
	benchSetStatus(b, tmpfs(b), "IMPLEMENTATION_PLAN.md", checklistN(50), 50)
}

// BenchmarkModified is the change check the runner makes three times an
// iteration, on an unchanged prd.json.
func BenchmarkModified(b *testing.B) {
	for _, n := range []int{50, 1000, 5000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			path := filepath.Join(tmpfs(b), "prd.json")
			data := planN(n)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				b.Fatal(err)
			}
			f, err := Load(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if mod, err := f.Modified(); err != nil || mod {
					b.Fatal(mod, err)
				}
			}
		})
	}
}

// headingsN is a plan of n "### Task N:" sections of one box each, as
// tools/bench's ralphex scenario writes it.
func headingsN(n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Bench plan\n\n## Overview\n\n%d one-line tasks.\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "\n### Task %d: Task %d\n\n- [ ] work-%03d\n", i, i, i)
	}
	return []byte(b.String())
}

func BenchmarkReadHeadings50(b *testing.B) {
	data := headingsN(50)
	f, err := detect("plan.md", data)
	if err != nil {
		b.Fatal(err)
	}
	benchRead(b, func(p string, d []byte) error { _, err := f.read(p, d); return err }, "plan.md", data)
}
