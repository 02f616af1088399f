package guard

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/gittest"
)

// change is a repository before and after a task: file name → content.
// A name present before and absent after is deleted. A name ending in
// "@x" is written executable (the suffix is not part of the name).
type change struct {
	before, after map[string]string
}

// diffs are the diffs of one change as ralph may be handed them.
type diffs struct {
	u0      []byte // git diff --no-color -U0 --no-renames
	u3      []byte // git diff --no-color (default context, renames on)
	trees   []byte // git diff <tree-a> <tree-b>
	before  map[string]string
	after   map[string]string
	workdir string
}

// makeDiffs commits c.before, then c.after, in a new repository and
// returns git's diffs between the two commits.
func makeDiffs(t testing.TB, c change) diffs {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, c.before)
	gittest.Init(t, dir)
	after := strip(c.after)
	for name := range strip(c.before) {
		if _, ok := after[name]; !ok {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(t, dir, c.after)
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "task")
	return diffs{
		u0:      git(t, dir, "diff", "--no-color", "-U0", "--no-renames", "HEAD~1", "HEAD"),
		u3:      git(t, dir, "diff", "--no-color", "-M", "HEAD~1", "HEAD"),
		trees:   git(t, dir, "diff", "HEAD~1^{tree}", "HEAD^{tree}"),
		before:  strip(c.before),
		after:   strip(c.after),
		workdir: dir,
	}
}

func strip(files map[string]string) map[string]string {
	out := map[string]string{}
	for name, content := range files {
		out[strings.TrimSuffix(name, "@x")] = content
	}
	return out
}

func write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if n, ok := strings.CutSuffix(name, "@x"); ok {
			name, mode = n, 0o755
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// git runs git and returns its exact output (gittest.Git trims it).
func git(t testing.TB, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gittest.Env(dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// withContent returns opts with Before and After reading the change.
func (d diffs) withContent(opts Options) Options {
	opts.Before = reader(d.before)
	opts.After = reader(d.after)
	return opts
}

func reader(files map[string]string) func(string) ([]byte, bool) {
	return func(p string) ([]byte, bool) {
		s, ok := files[p]
		return []byte(s), ok
	}
}

// brief is a finding as the tables write it: "rule file:line", plus
// " allowed" when the task allows it.
func brief(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		s := fmt.Sprintf("%s %s:%d", f.Rule, f.File, f.Line)
		if f.Allowed {
			s += " allowed"
		}
		out = append(out, s)
	}
	return out
}

// lines joins source lines with newlines and a final one.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
