package agenthome

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchHome is a ~/.claude of files files holding size bytes in all
// (settings, commands, agents, plugins; a few big files and many small
// ones), with its earlier sessions in scratch, which the copy skips.
func benchHome(b *testing.B, files, size int) (Layout, Options, string) {
	b.Helper()
	base := b.TempDir()
	home := filepath.Join(base, "home")
	claude := filepath.Join(home, ".claude")
	big := size / 2 / 4 // four files hold half of it
	small := (size - 4*big) / (files - 4)
	for i := range files {
		dir := filepath.Join(claude, []string{"commands", "agents", "plugins/cache/p", "plugins/marketplaces/m"}[i%4], fmt.Sprint(i%7))
		n := small
		if i < 4 {
			n = big
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.md", i)), make([]byte, n), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// Earlier sessions: not copied.
	sessions := filepath.Join(claude, "projects", "old")
	if err := os.MkdirAll(sessions, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(sessions, fmt.Sprintf("s%d.jsonl", i)), make([]byte, 1<<20), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	l := Layout{
		Roots:     []string{claude},
		Scratch:   []string{filepath.Join(claude, "projects")},
		WriteBack: []string{filepath.Join(claude, ".credentials.json"), filepath.Join(claude, "projects/**/*.jsonl")},
	}
	return l, Options{Dir: filepath.Join(base, "state"), Home: home}, claude
}

// BenchmarkOpen is the copy a run makes of a ~/.claude at its agent's
// first start (and removes at its end).
func BenchmarkOpen(b *testing.B) {
	for _, sz := range []struct{ files, size int }{{200, 5 << 20}, {2000, 50 << 20}} {
		b.Run(fmt.Sprintf("%dfiles-%dMB", sz.files, sz.size>>20), func(b *testing.B) {
			l, o, _ := benchHome(b, sz.files, sz.size)
			b.SetBytes(int64(sz.size))
			var closing time.Duration
			for b.Loop() {
				h, err := Open(l, o)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := h.Close(); err != nil {
					b.Fatal(err)
				}
				closing += time.Since(start)
			}
			b.ReportMetric(float64(closing.Microseconds())/1000/float64(b.N), "ms-close/op")
		})
	}
}

// BenchmarkSync is the look after each agent run: nothing changed, or a
// settings file changed (reported) and a session transcript written back.
func BenchmarkSync(b *testing.B) {
	for _, sz := range []struct{ files, size int }{{200, 5 << 20}, {2000, 50 << 20}} {
		l, o, claude := benchHome(b, sz.files, sz.size)
		h, err := Open(l, o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = h.Close() })
		cp := h.Binds()[0].Copy
		b.Run(fmt.Sprintf("%dfiles-%dMB/unchanged", sz.files, sz.size>>20), func(b *testing.B) {
			for b.Loop() {
				if _, err := h.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dfiles-%dMB/changed", sz.files, sz.size>>20), func(b *testing.B) {
			transcript := filepath.Join(cp, "projects", "x", "s.jsonl")
			if err := os.MkdirAll(filepath.Dir(transcript), 0o755); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				i++
				if err := os.WriteFile(filepath.Join(cp, "settings.json"), fmt.Appendf(nil, `{"n": %d}`, i), 0o644); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(transcript, make([]byte, 100<<10+i), 0o644); err != nil {
					b.Fatal(err)
				}
				if _, err := h.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := os.Stat(filepath.Join(claude, "projects", "x", "s.jsonl")); err != nil {
				b.Errorf("the transcript was not written back: %v", err)
			}
		})
	}
}
