package vcs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDiffFilesAndRestoreTree: a diff between two snapshots shows a new
// untracked file and leaves an excluded one out; Files reads both ends;
// RestoreTree puts back what changed and removes what was created, and
// leaves the user's index alone.
func TestDiffFilesAndRestoreTree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "a.go"), "package a\n")
	write(t, filepath.Join(dir, "plan.md"), "- [ ] one\n")
	write(t, filepath.Join(dir, "staged.txt"), "staged\n")
	gitIn(t, g, "add", "a.go", "plan.md")
	gitIn(t, g, "commit", "-q", "-m", "files")
	gitIn(t, g, "add", "staged.txt") // the user's staging area
	indexBefore := gitIn(t, g, "diff", "--cached", "--name-status")

	from, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a.go"), "package a\n\nfunc A() {}\n")
	write(t, filepath.Join(dir, "sub", "new_test.go"), "package a\n")
	write(t, filepath.Join(dir, "plan.md"), "- [x] one\n")
	if err := os.Remove(filepath.Join(dir, "staged.txt")); err != nil {
		t.Fatal(err)
	}
	to, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}

	diff, err := g.Diff(ctx, from, to, []string{filepath.Join(dir, "plan.md")})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"diff --git a/a.go b/a.go", "+func A() {}", "diff --git a/sub/new_test.go b/sub/new_test.go", "diff --git a/staged.txt"} {
		if !strings.Contains(string(diff), want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(string(diff), "plan.md") {
		t.Errorf("the excluded plan is in the diff:\n%s", diff)
	}

	files, err := g.Files(ctx, from, []string{"a.go", "sub/new_test.go", "staged.txt"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"a.go": []byte("package a\n"), "staged.txt": []byte("staged\n")}
	if d := cmp.Diff(want, files); d != "" {
		t.Errorf("Files(from) (-want +got):\n%s", d)
	}

	restored, err := g.RestoreTree(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a.go", "plan.md", "staged.txt", "sub/new_test.go"}, restored); d != "" {
		t.Errorf("restored (-want +got):\n%s", d)
	}
	for name, body := range map[string]string{"a.go": "package a\n", "plan.md": "- [ ] one\n", "staged.txt": "staged\n"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != body {
			t.Errorf("%s after restore: %q, %v; want %q", name, b, err, body)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("the created file's directory is still there: %v", err)
	}
	if got := gitIn(t, g, "diff", "--cached", "--name-status"); got != indexBefore {
		t.Errorf("the user's index changed: %q, was %q", got, indexBefore)
	}
	if again, err := g.RestoreTree(ctx, from); err != nil || len(again) != 0 {
		t.Errorf("a second restore: %v, %v; want nothing to do", again, err)
	}
}

func gitIn(t *testing.T, g *Git, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = g.Root, g.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
