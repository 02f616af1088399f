package prompt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/projectfs"
)

// snarktankProgress is a progress.txt as ralph.sh starts it and agents
// following snarktank's prompt append to it.
const snarktankProgress = `# Ralph Progress Log
Started: Fri Nov 21 07:20:12 CET 2026
---

## Codebase Patterns
- Use ` + "`sql<number>`" + ` template for aggregations
- Always use IF NOT EXISTS for migrations

### Testing
- Run ` + "`npm test -- --run`" + `, watch mode hangs

## 2026-11-21 07:31 - US-001
Thread: https://ampcode.com/threads/T-1
- Added the priority column
- Files changed: db/schema.ts
- **Learnings for future iterations:**
  - Migrations run with npm run db:push
---

## 2026-11-21 07:52 - US-002
- Priority badge on task cards
- **Learnings for future iterations:**
  - Example output:
` + "```" + `
## not a heading
---
` + "```" + `
---

## 2026-11-21 08:10 - US-003
- Priority selector in the edit modal
---

## 2026-11-21 08:40 - US-004
- Filter dropdown
- **Learnings for future iterations:**
  - URL state goes through useSearchParams
---
`

func writeProgress(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "progress.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadProgressSnarktank(t *testing.T) {
	t.Parallel()
	patterns, recent, err := readProgress(writeProgress(t, snarktankProgress), 0)
	if err != nil {
		t.Fatal(err)
	}
	wantPatterns := "- Use `sql<number>` template for aggregations\n- Always use IF NOT EXISTS for migrations\n\n### Testing\n- Run `npm test -- --run`, watch mode hangs"
	if diff := cmp.Diff(wantPatterns, patterns); diff != "" {
		t.Errorf("patterns (-want +got):\n%s", diff)
	}
	wantRecent := "## 2026-11-21 07:52 - US-002\n- Priority badge on task cards\n- **Learnings for future iterations:**\n  - Example output:\n```\n## not a heading\n---\n```" +
		"\n---\n" +
		"## 2026-11-21 08:10 - US-003\n- Priority selector in the edit modal" +
		"\n---\n" +
		"## 2026-11-21 08:40 - US-004\n- Filter dropdown\n- **Learnings for future iterations:**\n  - URL state goes through useSearchParams"
	if diff := cmp.Diff(wantRecent, recent); diff != "" {
		t.Errorf("recent (-want +got):\n%s", diff)
	}
}

func TestReadProgressShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text               string
		wantPatterns, wantRecent string
	}{
		{"empty", "", "", ""},
		{"only title", "# Ralph Progress Log\nStarted: today\n---\n", "", ""},
		{"patterns only", "## Codebase Patterns\n- a\n- b\n", "- a\n- b", ""},
		{"patterns ended by rule", "## Codebase Patterns\n- a\n---\nentry one\n", "- a", "entry one"},
		{"no patterns, rule separated", "first\n---\nsecond\n---\nthird\n---\nfourth\n", "", "second\n---\nthird\n---\nfourth"},
		{"headings only", "## one\nx\n## two\ny\n", "", "## one\nx\n---\n## two\ny"},
		{"patterns at the end", "## e1\nx\n# Codebase Patterns\n## p\n", "## p", "## e1\nx"},
		{"patterns above the title", "## Codebase Patterns\n- a\n\n# Ralph Progress Log\nStarted: today\n---\n## e1\nx\n---\n", "- a", "## e1\nx"},
		{"crlf", "## Codebase Patterns\r\n- a\r\n\r\n## e1\r\nx\r\n", "- a", "## e1\nx"},
		{"level-3 entries stay whole", "## Iteration log\n### Iteration 1\na\n### Iteration 2\nb\n", "", "## Iteration log\n### Iteration 1\na\n### Iteration 2\nb"},
		{"tilde fence", "## e1\n~~~\n---\n## x\n~~~\n", "", "## e1\n~~~\n---\n## x\n~~~"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, r, err := readProgress(writeProgress(t, tt.text), 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantPatterns, p); diff != "" {
				t.Errorf("patterns (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRecent, r); diff != "" {
				t.Errorf("recent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadProgressMissing(t *testing.T) {
	t.Parallel()
	p, r, err := readProgress(filepath.Join(t.TempDir(), "progress.txt"), 100)
	if p != "" || r != "" || err != nil {
		t.Errorf("readProgress(missing) = %q, %q, %v; want empty, no error", p, r, err)
	}
}

func TestReadProgressBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("## Codebase Patterns\n")
	for range 200 {
		b.WriteString("- a reusable pattern about the codebase\n")
	}
	for i := range 50 {
		b.WriteString("\n## 2026-11-21 - US-" + strings.Repeat("9", i%3+1) + "\n- did a thing\n- **Learnings:** é ü 漢字\n---\n")
	}
	b.WriteString("\n## newest\n- the last entry\n---\n")
	path := writeProgress(t, b.String())
	for _, max := range []int{1, 20, 100, 400, 1000, 5000} {
		p, r, err := readProgress(path, max)
		if err != nil {
			t.Fatal(err)
		}
		if len(p)+len(r) > max {
			t.Errorf("max %d: got %d + %d bytes", max, len(p), len(r))
		}
		if !utf8.ValidString(p) || !utf8.ValidString(r) {
			t.Errorf("max %d: cut inside a character", max)
		}
		if max >= 400 {
			if !strings.HasPrefix(p, "- a reusable pattern") || !strings.HasSuffix(p, "[… trimmed …]") {
				t.Errorf("max %d: patterns not cut at the end with a mark: %q", max, p)
			}
			if !strings.Contains(r, "the last entry") {
				t.Errorf("max %d: the newest entry is missing: %q", max, r)
			}
		}
	}
	// Only RecentEntries entries even when more fit.
	_, r, _ := readProgress(path, 1<<20)
	if n := strings.Count(r, "\n---\n") + 1; n != RecentEntries {
		t.Errorf("%d recent entries, want %d", n, RecentEntries)
	}
}

func FuzzReadProgress(f *testing.F) {
	f.Add([]byte(snarktankProgress), 0)
	f.Add([]byte(snarktankProgress), 50)
	f.Add([]byte("## Codebase Patterns\n```\n---\n"), 10)
	f.Add([]byte("#\n##\n###### Codebase Patterns ###\n~~~~\n"), 3)
	f.Add([]byte("---\n---\n# a\n## b\n"), 1000)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		// ReadProgress is os.ReadFile and then this; no temp file per input
		// keeps the fuzzer fast.
		p, r := progress(string(data), max)
		limit := max
		if limit <= 0 {
			limit = DefaultProgressBytes
		}
		if len(p)+len(r) > limit {
			t.Fatalf("%d + %d bytes over the limit %d", len(p), len(r), limit)
		}
		if utf8.Valid(data) && (!utf8.ValidString(p) || !utf8.ValidString(r)) {
			t.Fatal("valid UTF-8 in, invalid out")
		}
	})
}

// readProgress is ReadProgress of the file at path, in its directory.
func readProgress(path string, maxBytes int) (patterns, recent string, err error) {
	return ReadProgress(projectfs.New(filepath.Dir(path)), path, maxBytes)
}

// TestReadProgressStaysInProject: a progress log linked to a file outside
// the project (the user's SSH key) is refused, and none of it is returned.
func TestReadProgressStaysInProject(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	project, key := filepath.Join(base, "project"), filepath.Join(base, "id_ed25519")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("## Codebase Patterns\n- PRIVATE KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(key, filepath.Join(project, "progress.txt")); err != nil {
		t.Fatal(err)
	}
	p, r, err := ReadProgress(projectfs.New(project), "progress.txt", 0)
	if !errors.Is(err, projectfs.ErrOutside) || p != "" || r != "" {
		t.Errorf("ReadProgress(link out) = %q, %q, %v; want nothing and ErrOutside", p, r, err)
	}
}
