package task

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plan50 is a prd.json of n stories, as `ralph run` benchmarks use.
func planN(n int) []byte {
	var stories []string
	for i := 1; i <= n; i++ {
		stories = append(stories, fmt.Sprintf(`    {"id": "T-%03d", "title": "Task %d", "description": "Do thing %d.", "acceptanceCriteria": ["it works", "tests pass"], "priority": %d, "passes": false}`, i, i, i, i))
	}
	return []byte("{\n  \"project\": \"bench\",\n  \"userStories\": [\n" + strings.Join(stories, ",\n") + "\n  ]\n}\n")
}

func BenchmarkReadPRD50(b *testing.B) {
	data := planN(50)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := readPRD("prd.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetStatus50 is one runner-mode "mark done": change check,
// splice, validation, atomic write with fsync.
func BenchmarkSetStatus50(b *testing.B) {
	path := filepath.Join(b.TempDir(), "prd.json")
	if err := os.WriteFile(path, planN(50), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		st := StatusDone
		if (i/50)%2 == 1 {
			st = StatusOpen
		}
		if err := f.SetStatus(fmt.Sprintf("T-%03d", i%50+1), st); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
