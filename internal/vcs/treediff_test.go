package vcs

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/gittest"
	"github.com/ralph-loop/ralph/internal/guard"
)

// goTest is a Go test file the corpus edits.
const goTest = `package a

import "testing"

func TestOne(t *testing.T) {
	got := One()
	if got != 1 {
		t.Fatalf("One() = %d, want 1", got)
	}
}

func TestTwo(t *testing.T) {
	got := Two()
	if got != 2 {
		t.Errorf("Two() = %d, want 2", got)
	}
	if Two() == 3 {
		t.Error("three")
	}
}

func TestThree(t *testing.T) {
	if Three() != 3 {
		t.Fatal("not three")
	}
}
`

// numbered is n lines "line 1\n"… for hunks to fall in.
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// replaceLines replaces lines (1-based) of s.
func replaceLines(s string, with map[int]string) string {
	lines := strings.SplitAfter(s, "\n")
	for n, l := range with {
		lines[n-1] = l
	}
	return strings.Join(lines, "")
}

// diffCase is a change from the files in before to those in after (a
// value "" under a name means the file is not there; a name ending in
// "@x" is executable, "@l" a symlink to the value).
type diffCase struct {
	name          string
	before, after map[string]string
	exclude       []string
}

var diffCorpus = []diffCase{
	{name: "added", before: map[string]string{"a.txt": "a\n"}, after: map[string]string{"a.txt": "a\n", "new.go": "package a\n\nfunc New() {}\n"}},
	{name: "deleted", before: map[string]string{"a.txt": "a\n", "gone.go": "package a\n"}, after: map[string]string{"a.txt": "a\n"}},
	{name: "modified at the start", before: map[string]string{"n.txt": numbered(20)}, after: map[string]string{"n.txt": replaceLines(numbered(20), map[int]string{1: "first\n"})}},
	{name: "modified in the middle", before: map[string]string{"n.txt": numbered(20)}, after: map[string]string{"n.txt": replaceLines(numbered(20), map[int]string{10: "ten\n", 11: "eleven\nmore\n"})}},
	{name: "modified at the end", before: map[string]string{"n.txt": numbered(20)}, after: map[string]string{"n.txt": numbered(19) + "last\n"}},
	{name: "newline removed at the end", before: map[string]string{"n.txt": numbered(5)}, after: map[string]string{"n.txt": strings.TrimSuffix(numbered(5), "\n")}},
	{name: "newline added at the end", before: map[string]string{"n.txt": "x\ny"}, after: map[string]string{"n.txt": "x\ny\n"}},
	{name: "no newline either side", before: map[string]string{"n.txt": "x\ny"}, after: map[string]string{"n.txt": "x\nz"}},
	{name: "mode change", before: map[string]string{"run.sh": "echo\n"}, after: map[string]string{"run.sh@x": "echo\n"}},
	{name: "mode and content change", before: map[string]string{"run.sh": "echo\n"}, after: map[string]string{"run.sh@x": "echo hi\n"}},
	{name: "symlink", before: map[string]string{"a.txt": "a\n", "link@l": "a.txt"}, after: map[string]string{"a.txt": "a\n", "link@l": "b.txt", "other@l": "a.txt"}},
	{name: "binary", before: map[string]string{"bin": "a\x00b\n"}, after: map[string]string{"bin": "a\x00c\n", "new.bin": "\x00"}},
	{name: "empty files", before: map[string]string{"gone": "", "grow": ""}, after: map[string]string{"empty": "", "grow": "now\n"}},
	{name: "emptied", before: map[string]string{"e.txt": "some\n"}, after: map[string]string{"e.txt": ""}},
	{name: "many hunks", before: map[string]string{"n.txt": numbered(100)}, after: map[string]string{"n.txt": replaceLines(numbered(100), map[int]string{
		3: "3\n", 10: "", 17: "x\n", 24: "y\nz\n", 30: "", 31: "", 50: "fifty\n", 57: "a\n", 90: "b\n", 100: "c\n",
	})}},
	{name: "a test function removed", before: map[string]string{"a_test.go": goTest}, after: map[string]string{"a_test.go": strings.Replace(goTest, `func TestTwo(t *testing.T) {
	got := Two()
	if got != 2 {
		t.Errorf("Two() = %d, want 2", got)
	}
	if Two() == 3 {
		t.Error("three")
	}
}

`, "", 1)}},
	{name: "an assertion removed", before: map[string]string{"a_test.go": goTest}, after: map[string]string{"a_test.go": strings.Replace(goTest, `	if Two() == 3 {
		t.Error("three")
	}
`, "", 1)}},
	{name: "a skip added", before: map[string]string{"a_test.go": goTest}, after: map[string]string{"a_test.go": strings.Replace(goTest, `func TestThree(t *testing.T) {
`, `func TestThree(t *testing.T) {
	t.Skip("later")
`, 1)}},
	{name: "a function added between two", before: map[string]string{"a_test.go": goTest}, after: map[string]string{"a_test.go": strings.Replace(goTest, `func TestThree`, `func TestTwoAndAHalf(t *testing.T) {
	if Two() == 3 {
		t.Error("three")
	}
}

func TestThree`, 1)}},
	{name: "a file in a subdirectory", before: map[string]string{"sub/dir/x.go": "package dir\n", "sub/y.go": "package sub\n"}, after: map[string]string{"sub/dir/x.go": "package dir\n\nvar X = 1\n", "sub/y.go": "package sub\n", "sub/dir/z/new.go": "package z\n"}},
	{name: "a file becomes a directory", before: map[string]string{"a": "file\n", "a.b": "x\n"}, after: map[string]string{"a/inner": "now a dir\n", "a.b": "x\n"}},
	{name: "the plan excluded", before: map[string]string{"plan.md": "- [ ] one\n", "a.go": "package a\n"}, after: map[string]string{"plan.md": "- [x] one\n", "a.go": "package a // edited\n"}, exclude: []string{"plan.md"}},
	{name: "binary with a space in its name", before: map[string]string{"a b.bin": "\x00a", "gone b.bin": "\x00"}, after: map[string]string{"a b.bin": "\x00b", "new b.bin": "\x00"}},
	{name: "a name with a space", before: map[string]string{"my file.txt": "a\n"}, after: map[string]string{"my file.txt": "b\n", "new file.txt": "c\n"}},
	{name: "function context", before: map[string]string{"f.c": "int main(void)   \n{\n" + numbered(12) + "}\n" + strings.Repeat("x", 100) + "\n" + numbered(8)}, after: map[string]string{"f.c": "int main(void)   \n{\n" + replaceLines(numbered(12), map[int]string{9: "nine\n"}) + "}\n" + strings.Repeat("x", 100) + "\n" + replaceLines(numbered(8), map[int]string{7: "seven\n"})}},
	{name: "context carried to the next hunk", before: map[string]string{"f.c": "head\n" + numbered(40)}, after: map[string]string{"f.c": "head\n" + replaceLines(numbered(40), map[int]string{10: "ten\n", 30: "thirty\n"})}},
	{name: "blank lines slide", before: map[string]string{"s.go": "a\n\nb\n\nc\n"}, after: map[string]string{"s.go": "a\n\nb\n\nx\n\nc\n"}},
	{name: "attributes that do not change a diff", before: map[string]string{".gitattributes": "* text=auto\n", "a.txt": "a\n"}, after: map[string]string{".gitattributes": "* text=auto eol=lf\n", "a.txt": "b\n"}},
	{name: "CRLF lines", before: map[string]string{"w.txt": "a\r\nb\r\nc\r\n"}, after: map[string]string{"w.txt": "a\r\nB\r\nc\r\n"}},
	{name: "a directory excluded", before: map[string]string{"docs/a.md": "a\n", "b.go": "package b\n"}, after: map[string]string{"docs/a.md": "A\n", "docs/new.md": "n\n", "b.go": "package b\n\nvar B int\n"}, exclude: []string{"docs"}},
	{name: "indented block inserted", before: map[string]string{"i.go": "func f() {\n\tif a {\n\t\tb()\n\t}\n\tif c {\n\t\td()\n\t}\n}\n"}, after: map[string]string{"i.go": "func f() {\n\tif a {\n\t\tb()\n\t}\n\tif e {\n\t\tb()\n\t}\n\tif c {\n\t\td()\n\t}\n}\n"}},
}

// setTree makes the working tree hold exactly files (besides .git).
func setTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(strings.TrimSuffix(name, "@x"), "@l")))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(name, "@l"):
			err = os.Symlink(body, full)
		case strings.HasSuffix(name, "@x"):
			err = os.WriteFile(full, []byte(body), 0o755)
		default:
			err = os.WriteFile(full, []byte(body), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiffInProcessMatchesGit: for each change of the corpus the patch
// made in process is git's, byte for byte, and the guard reads the same
// findings from both.
func TestDiffInProcessMatchesGit(t *testing.T) {
	t.Parallel()
	for _, c := range diffCorpus {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			g, dir := repo(t)
			setTree(t, dir, c.before)
			from, err := g.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			setTree(t, dir, c.after)
			to, err := g.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var exclude []string
			for _, x := range c.exclude {
				exclude = append(exclude, filepath.Join(dir, x))
			}
			got, err := g.diffInProcess(from, to, exclude)
			if err != nil {
				t.Fatalf("in process: %v", err)
			}
			want, err := g.diffGit(ctx, from, to, exclude)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("in process (-git +in process):\n%s", d)
			}
			opts := guard.Options{PlanFile: "plan.md"}
			wantF, werr := guard.Check(want, opts)
			gotF, gerr := guard.Check(got, opts)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("guard errors: git %v, in process %v", werr, gerr)
			}
			if d := cmp.Diff(wantF, gotF); d != "" {
				t.Errorf("guard findings (-git +in process):\n%s", d)
			}
		})
	}
}

// TestDiffInProcessRandomEdits: on seeded random edits of Go test files
// (lines inserted, removed and replaced by lines of the same files) the
// in-process patch names the same files with the same headers as git's,
// and the guard finds the same in both. Where two minimal line diffs tie,
// the Myers diff here and git's xdiff may choose differently, so bytes
// are compared only to log how often that happens.
func TestDiffInProcessRandomEdits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	r := rand.New(rand.NewPCG(11, 12))
	material := strings.SplitAfter(goTest+numbered(10)+"}\n\n\t}\n", "\n")
	before, after := map[string]string{}, map[string]string{}
	for i := range 100 {
		lines := strings.SplitAfter(goTest, "\n")
		lines = lines[:len(lines)-1] // the empty string after the last newline
		before[fmt.Sprintf("p/f%02d_test.go", i)] = strings.Join(lines, "")
		for range 1 + r.IntN(8) {
			at := r.IntN(len(lines) + 1)
			switch r.IntN(3) {
			case 0:
				var ins []string
				for range 1 + r.IntN(4) {
					ins = append(ins, material[r.IntN(len(material))])
				}
				lines = slices.Insert(lines, at, ins...)
			case 1:
				if at < len(lines) {
					lines = slices.Delete(lines, at, min(len(lines), at+1+r.IntN(4)))
				}
			default:
				if at < len(lines) {
					lines[at] = material[r.IntN(len(material))]
				}
			}
		}
		after[fmt.Sprintf("p/f%02d_test.go", i)] = strings.Join(lines, "")
	}
	setTree(t, dir, before)
	from, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	setTree(t, dir, after)
	to, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.diffInProcess(from, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := g.diffGit(ctx, from, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	headers := func(b []byte) []string {
		var out []string
		for l := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "index ") ||
				strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") {
				out = append(out, l)
			}
		}
		return out
	}
	if d := cmp.Diff(headers(want), headers(got)); d != "" {
		t.Errorf("file headers (-git +in process):\n%s", d)
	}
	wantF, err := guard.Check(want, guard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gotF, err := guard.Check(got, guard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantF, gotF); d != "" {
		t.Errorf("guard findings (-git +in process):\n%s", d)
	}
	differ := 0
	gotFiles := strings.Split(string(got), "\ndiff --git ")
	for i, w := range strings.Split(string(want), "\ndiff --git ") {
		if i >= len(gotFiles) || gotFiles[i] != w {
			differ++
		}
	}
	t.Logf("%d of %d files' patches differ from git's byte for byte; %d findings", differ, len(after), len(wantF))
}

// TestDiffAndFilesStartNoGit: between loose trees, Diff and Files answer
// with no git on the PATH at all, and answer as git does.
func TestDiffAndFilesStartNoGit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "a_test.go"), goTest)
	from, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a_test.go"), strings.Replace(goTest, "\tt.Fatal(\"not three\")\n", "", 1))
	to, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := g.diffGit(ctx, from, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range g.Env {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	// The configuration the looks read: a diff needs no git for it.
	noGit := &Git{Root: g.Root, Env: append(env, "PATH="+t.TempDir()), gitDir: g.gitDir, commonDir: g.commonDir, conf: g.conf}
	got, err := noGit.Diff(ctx, from, to, nil)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("Diff with no git = %q, %v; want %q", got, err, want)
	}
	files, err := noGit.Files(ctx, to, []string{"a_test.go"})
	if err != nil || !strings.Contains(string(files["a_test.go"]), "TestThree") {
		t.Errorf("Files with no git = %q, %v", files, err)
	}
}

// TestDiffAgainstTheLook: Diff to "" uses the tree the last look wrote,
// and before any is written goes through the private index; both are
// git's patch.
func TestDiffAgainstTheLook(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	write(t, filepath.Join(dir, "a.go"), "package a\n")
	from, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a.go"), "package a\n\nfunc A() {}\n")
	if _, err := g.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	viaIndex, err := g.Diff(ctx, from, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	to, err := g.Seen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	viaTree, err := g.Diff(ctx, from, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := g.diffGit(ctx, from, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(viaIndex, want) || !bytes.Equal(viaTree, want) {
		t.Errorf("diff against the look:\nvia the index:\n%s\nvia the tree:\n%s\nwant:\n%s", viaIndex, viaTree, want)
	}
}

// TestDiffFallsBack: what the writer here cannot vouch for goes to git,
// and the answer is still git's.
func TestDiffFallsBack(t *testing.T) {
	t.Parallel()
	for name, files := range map[string][2]map[string]string{
		"attributes":           {{"a.txt": "a\n", ".gitattributes": "*.txt diff=x\n"}, {"a.txt": "b\n", ".gitattributes": "*.txt diff=x\n"}},
		"binary by attributes": {{"a.txt": "a\n"}, {"a.txt": "b\n", "sub/.gitattributes": "x -diff\n"}},
		"quoted name":          {{"caf\u00e9": "a\n"}, {"caf\u00e9": "b\n"}},
		"type change":          {{"l": "a\n"}, {"l@l": "a"}},
		"large file":           {{"big": strings.Repeat("x\n", maxObject/2+1)}, {"big": strings.Repeat("y\n", maxObject/2+1)}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			g, dir := repo(t)
			setTree(t, dir, files[0])
			from, err := g.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			setTree(t, dir, files[1])
			to, err := g.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.diffInProcess(from, to, nil); err == nil {
				t.Errorf("made in process; want the fallback")
			}
			got, err := g.Diff(ctx, from, to, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := g.diffGit(ctx, from, to, nil)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("Diff = %q, %v; want git's %q", got, err, want)
			}
		})
	}
}

// TestDiffFallsBackForSubmodulesAndDiffOpts: a submodule that changed,
// or GIT_DIFF_OPTS in the environment, leaves the diff to git.
func TestDiffFallsBackForSubmodulesAndDiffOpts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, sub, "init", "-q")
	gittest.Git(t, sub, "commit", "-q", "--allow-empty", "-m", "one")
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	from, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, sub, "commit", "-q", "--allow-empty", "-m", "two")
	write(t, filepath.Join(dir, "a.txt"), "b\n")
	to, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.diffInProcess(from, to, nil); err == nil {
		t.Errorf("a submodule change made in process")
	}
	if got, err := g.Diff(ctx, from, to, nil); err != nil || !strings.Contains(string(got), "Subproject commit") {
		t.Errorf("Diff = %q, %v; want git's, with the submodule", got, err)
	}
	// Without the submodule's change, it is made in process, unless
	// GIT_DIFF_OPTS says otherwise.
	if _, err := g.diffInProcess(from, to, []string{"sub"}); err != nil {
		t.Errorf("the submodule excluded: %v", err)
	}
	opts := &Git{Root: g.Root, Env: append(slices.Clip(g.Env), "GIT_DIFF_OPTS=--unified=1"), commonDir: g.commonDir}
	if _, err := opts.diffInProcess(from, to, []string{"sub"}); err == nil {
		t.Errorf("made in process with GIT_DIFF_OPTS set")
	}
}

// TestFilesInProcess: Files reads blobs through the tree without git, a
// directory, a submodule or a missing path being absent, and packed
// objects fall back to git with the same answer.
func TestFilesInProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g, dir := repo(t)
	setTree(t, dir, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n", "sub/c/d.txt": "", "link@l": "a.txt"})
	tree, err := g.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"a.txt", "sub/b.txt", "sub/c/d.txt", "link", "sub", "missing", "sub/missing", "a.txt/x", ""}
	want := map[string][]byte{"a.txt": []byte("a\n"), "sub/b.txt": []byte("b\n"), "sub/c/d.txt": {}, "link": []byte("a.txt")}
	got, err := g.filesInProcess(tree, paths)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("in process (-want +got):\n%s", d)
	}
	viaGit, err := g.filesGit(ctx, tree, paths)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, viaGit, cmp.Comparer(bytes.Equal)); d != "" {
		t.Errorf("git (-want +got):\n%s", d)
	}

	gitIn(t, g, "add", "-A")
	gitIn(t, g, "commit", "-q", "-m", "files")
	gitIn(t, g, "gc", "-q", "--prune=now")
	if _, err := g.filesInProcess(tree, paths); err == nil {
		t.Errorf("packed objects read in process")
	}
	packed, err := g.Files(ctx, tree, paths)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, packed, cmp.Comparer(bytes.Equal)); d != "" {
		t.Errorf("packed, through git (-want +got):\n%s", d)
	}
}

// FuzzParseTree: the tree parser never panics, and what it accepts
// writes back to the same bytes.
func FuzzParseTree(f *testing.F) {
	id := bytes.Repeat([]byte{0xab}, 20)
	f.Add([]byte("100644 a.txt\x00" + string(id) + "40000 sub\x00" + string(id)))
	f.Add([]byte("120000 link\x00" + string(id[:5])))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseTree(b)
		if err != nil {
			return
		}
		var back bytes.Buffer
		for _, e := range entries {
			raw, _ := hex.DecodeString(e.id)
			back.WriteString(e.mode + " " + e.name + "\x00")
			back.Write(raw)
		}
		if !bytes.Equal(back.Bytes(), b) {
			t.Errorf("parseTree(%q) reads back as %q", b, back.Bytes())
		}
	})
}

// benchTrees makes a repository with a typical change between two trees:
// one source file and its test edited among a few dozen files.
func benchTrees(b *testing.B) (*Git, string, string) {
	b.Helper()
	dir := b.TempDir()
	gittest.Git(b, dir, "init", "-q")
	g, err := Open(b.Context(), dir, gittest.Env(dir))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("pkg%d/file%d.go", i%5, i)] = "package p\n\n" + numbered(200)
	}
	files["pkg0/a_test.go"] = goTest
	setTree(b, dir, files)
	from, err := g.Snapshot(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	files["pkg0/file0.go"] = "package p\n\n" + replaceLines(numbered(200), map[int]string{50: "changed\n", 120: "more\nlines\n"})
	files["pkg0/a_test.go"] = strings.Replace(goTest, "func TestThree", "func TestFour(t *testing.T) {}\n\nfunc TestThree", 1)
	setTree(b, dir, files)
	to, err := g.Snapshot(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	return g, from, to
}

func BenchmarkDiffInProcess(b *testing.B) {
	g, from, to := benchTrees(b)
	for b.Loop() {
		if _, err := g.diffInProcess(from, to, []string{"plan.md"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiffGit(b *testing.B) {
	g, from, to := benchTrees(b)
	for b.Loop() {
		if _, err := g.diffGit(b.Context(), from, to, []string{"plan.md"}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAbbrevLen: the index lines abbreviate ids as git does by default,
// one more digit past 2^14 packed objects, whatever the index version.
func TestAbbrevLen(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		counts []uint32
		v2     bool
		want   int
	}{
		{nil, true, 7},
		{[]uint32{16383}, true, 7},
		{[]uint32{16384}, true, 8},
		{[]uint32{10000, 7000}, false, 8},
		{[]uint32{1 << 20}, true, 11},
	} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "pack"), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, n := range c.counts {
			var idx []byte
			if c.v2 {
				idx = append(idx, 0xff, 't', 'O', 'c', 0, 0, 0, 2)
			}
			idx = append(idx, make([]byte, 255*4)...)
			idx = binary.BigEndian.AppendUint32(idx, n)
			idx = append(idx, make([]byte, 20)...) // the first id
			if err := os.WriteFile(filepath.Join(dir, "pack", fmt.Sprintf("pack-%d.idx", i)), idx, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s := &looseObjects{dir: dir}
		if got := s.abbrevLen(); got != c.want {
			t.Errorf("abbrevLen with packs of %v objects = %d, want %d", c.counts, got, c.want)
		}
	}
}

// FuzzLineChanges: whatever the two texts, the changes (after git's
// compaction) turn the old lines into the new ones.
func FuzzLineChanges(f *testing.F) {
	f.Add(goTest, strings.Replace(goTest, "TestTwo", "TestTwice", 1))
	f.Add("a\n\nb\n\nc\n", "a\n\nb\n\nx\n\nc\n")
	f.Add("x\ny", "x\ny\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		la, lb := splitLines([]byte(a)), splitLines([]byte(b))
		var got []string
		at := 0
		changes, ok := lineChanges(la, lb)
		if !ok {
			t.Skip("too costly")
		}
		for _, c := range changes {
			if c.i1 < at || c.i1+c.del > len(la) || c.i2+c.ins > len(lb) {
				t.Fatalf("change %+v out of order or range (%d, %d lines)", c, len(la), len(lb))
			}
			got = append(got, la[at:c.i1]...)
			got = append(got, lb[c.i2:c.i2+c.ins]...)
			at = c.i1 + c.del
		}
		got = append(got, la[at:]...)
		if strings.Join(got, "") != b {
			t.Errorf("the changes make %q, want %q", strings.Join(got, ""), b)
		}
	})
}

func BenchmarkFilesInProcess(b *testing.B) {
	g, _, to := benchTrees(b)
	paths := []string{"pkg0/file0.go", "pkg0/a_test.go"}
	for b.Loop() {
		if _, err := g.filesInProcess(to, paths); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFilesGit(b *testing.B) {
	g, _, to := benchTrees(b)
	paths := []string{"pkg0/file0.go", "pkg0/a_test.go"}
	for b.Loop() {
		if _, err := g.filesGit(b.Context(), to, paths); err != nil {
			b.Fatal(err)
		}
	}
}
