package task

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// writeTemp writes a plan into a fresh directory and returns its path.
func writeTemp(t *testing.T, name string, data []byte, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask
		t.Fatal(err)
	}
	return path
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// dirNames lists a directory, to catch leftover temp files.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestLoadFixtures(t *testing.T) {
	t.Parallel()
	for name, want := range fixturePlans {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", name)
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			want := clonePlan(want)
			want.Path = path
			if diff := cmp.Diff(want, f.Plan()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if !bytes.Equal(f.Bytes(), readFixture(t, name)) {
				t.Error("Bytes() is not the file content")
			}
			if f.Path() != path {
				t.Errorf("Path() = %q, want %q", f.Path(), path)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, content string
		is                  error
		want                string // with DIR for the temp directory
	}{
		{
			name: "invalid prd", file: "prd.json", content: "{\"userStories\": [{\"id\": \"A\", \"passes\": \"true\"}]}",
			want: `DIR/prd.json:1: userStories[0].passes: want true or false, got "true" (a string) — remove the quotes`,
		},
		{
			name: "tasks.json without a description", file: "tasks.json", content: `[{"category": "x", "passes": false}]`,
			want: `DIR/tasks.json:1: [0].description: missing: every task needs a "description" (or a "title") saying what to do`,
		},
		{
			name: "markdown without tasks", file: "notes.md", content: "# Notes\n\nNothing to do.\n",
			want: `DIR/notes.md: no tasks: a checklist plan lists its tasks as "- [ ] ..." items`,
		},
		{
			name: "unknown", file: "plan.txt", content: "do things\n", is: ErrUnsupported,
			want: "DIR/plan.txt: unknown plan format (not a format ralph knows); supported: " + supported,
		},
		{
			name: "empty .json is prd", file: "prd.json", content: "",
			want: `DIR/prd.json:1: invalid JSON: unexpected end of JSON input`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeTemp(t, tt.file, []byte(tt.content), 0o644)
			before, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Load(path)
			if err == nil {
				t.Fatal("no error")
			}
			got := strings.ReplaceAll(err.Error(), filepath.Dir(path), "DIR")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error is not %v", tt.is)
			}
			// The file is never touched on error.
			if got := string(mustRead(t, path)); got != tt.content {
				t.Errorf("file changed to %q", got)
			}
			after, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !after.ModTime().Equal(before.ModTime()) {
				t.Error("file mtime changed")
			}
			if diff := cmp.Diff([]string{tt.file}, dirNames(t, filepath.Dir(path))); diff != "" {
				t.Errorf("directory (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		_, err := Load(dir)
		if diff := cmp.Diff(dir+": not a regular file", fmt.Sprint(err)); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		_, err := Load(filepath.Join(t.TempDir(), "prd.json"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("got %v, want not-exist", err)
		}
	})
}

func TestFileSetStatusWritesAtomically(t *testing.T) {
	t.Parallel()
	in := readFixture(t, "snarktank-prd.json.example")
	path := writeTemp(t, "prd.json", in, 0o640)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	old := f.Plan()
	if err := f.SetStatus("US-002", StatusDone); err != nil {
		t.Fatal(err)
	}
	want := bytes.Replace(in, []byte(`"passes": false`), []byte(`"passes": true`), 2)
	want = bytes.Replace(want, []byte(`"passes": true`), []byte(`"passes": false`), 1) // only the second
	if diff := cmp.Diff(string(want), string(mustRead(t, path))); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(string(want), string(f.Bytes())); diff != "" {
		t.Errorf("Bytes (-want +got):\n%s", diff)
	}
	if got, _ := f.Plan().Task("US-002"); got.Status != StatusDone {
		t.Errorf("Plan() has US-002 %s, want done", got.Status)
	}
	if got, _ := old.Task("US-002"); got.Status != StatusOpen {
		t.Error("an earlier Plan snapshot changed")
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", info.Mode().Perm())
	}
	if diff := cmp.Diff([]string{"prd.json"}, dirNames(t, filepath.Dir(path))); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
	if m, err := f.Modified(); err != nil || m {
		t.Errorf("Modified() after our own write = %v, %v; want false", m, err)
	}

	// Failing is not recorded in a prd.json: nothing is written.
	before, _ := os.Stat(path)
	if err := f.SetStatus("US-003", StatusFailed); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Error("SetStatus(failed) rewrote the file")
	}
}

func TestFileSetStatusKeepsSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "plans", "real.json")
	if err := os.Mkdir(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(`{"userStories": [{"id": "A", "passes": false}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "prd.json")
	if err := os.Symlink(filepath.Join("plans", "real.json"), link); err != nil {
		t.Fatal(err)
	}
	f, err := Load(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetStatus("A", StatusDone); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("prd.json is no longer a symlink (%v)", err)
	}
	if diff := cmp.Diff(`{"userStories": [{"id": "A", "passes": true}]}`, string(mustRead(t, real))); diff != "" {
		t.Errorf("target (-want +got):\n%s", diff)
	}
}

const twoStories = `{
  "userStories": [
    {"id": "A", "passes": false},
    {"id": "B", "passes": false}
  ]
}
`

func TestFileSetStatusMergesConcurrentEdit(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, "prd.json", []byte(twoStories), 0o644)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// Someone else ticks B and adds a field while we work on A.
	theirs := strings.Replace(twoStories, `{"id": "B", "passes": false}`, `{"id": "B", "passes": true, "notes": "by hand"}`, 1)
	if err := os.WriteFile(path, []byte(theirs), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := f.Modified(); err != nil || !m {
		t.Fatalf("Modified() = %v, %v; want true", m, err)
	}
	if err := f.SetStatus("A", StatusDone); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(theirs, `{"id": "A", "passes": false}`, `{"id": "A", "passes": true}`, 1)
	if diff := cmp.Diff(want, string(mustRead(t, path))); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	wantTasks := []Task{
		{ID: "A", Status: StatusDone, Line: 3},
		{ID: "B", Status: StatusDone, Notes: "by hand", Line: 4},
	}
	if diff := cmp.Diff(wantTasks, f.Plan().Tasks); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
}

func TestFileSetStatusRefusesConflict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		theirs *string // nil: the file is removed
		want   string  // with DIR for the temp directory
	}{
		{
			name:   "task removed",
			theirs: new(`{"userStories": [{"id": "B", "passes": false}]}`),
			want:   `DIR/prd.json: plan file changed on disk since it was read and no longer has task "A"; not marking it done`,
		},
		{
			name:   "now invalid",
			theirs: new(`{"userStories": [{"id": "A", "passes": false},]}`),
			want: "DIR/prd.json: plan file changed on disk since it was read and is no longer valid; not marking A done:\n" +
				"DIR/prd.json:1: invalid JSON: invalid character ']' looking for beginning of value",
		},
		{
			name: "file removed",
			want: `DIR/prd.json: plan file changed on disk since it was read: the file was removed; not marking A done`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeTemp(t, "prd.json", []byte(twoStories), 0o644)
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if tt.theirs != nil {
				err = os.WriteFile(path, []byte(*tt.theirs), 0o644)
			} else {
				err = os.Remove(path)
			}
			if err != nil {
				t.Fatal(err)
			}
			err = f.SetStatus("A", StatusDone)
			if !errors.Is(err, ErrChanged) {
				t.Fatalf("got %v, want ErrChanged", err)
			}
			if diff := cmp.Diff(tt.want, strings.ReplaceAll(err.Error(), filepath.Dir(path), "DIR")); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if tt.theirs == nil {
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Error("a removed plan was recreated")
				}
				return
			}
			if diff := cmp.Diff(*tt.theirs, string(mustRead(t, path))); diff != "" {
				t.Errorf("their edit was overwritten (-want +got):\n%s", diff)
			}
			// Our baseline is unchanged, so Restore can still undo their edit.
			if diff := cmp.Diff(twoStories, string(f.Bytes())); diff != "" {
				t.Errorf("Bytes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFileModifiedAndRestore(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, "prd.json", []byte(twoStories), 0o600)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	assertModified := func(want bool) {
		t.Helper()
		if got, err := f.Modified(); err != nil || got != want {
			t.Fatalf("Modified() = %v, %v; want %v", got, err, want)
		}
	}
	assertModified(false)

	// A touch is no change.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	assertModified(false)
	if err := f.Restore(); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(path); !info.ModTime().Equal(later) {
		t.Error("Restore rewrote an unchanged file")
	}

	// A same-size edit, with the mtime put back, is a change.
	edited := strings.Replace(twoStories, `"A"`, `"X"`, 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	assertModified(true)
	if err := f.Restore(); err != nil {
		t.Fatal(err)
	}
	assertModified(false)
	if diff := cmp.Diff(twoStories, string(mustRead(t, path))); diff != "" {
		t.Errorf("restored file (-want +got):\n%s", diff)
	}

	// A removed file counts as modified and is recreated with its mode.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	assertModified(true)
	if err := f.Restore(); err != nil {
		t.Fatal(err)
	}
	assertModified(false)
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("recreated file: %v, %v; want mode 0600", info, err)
	}
	if diff := cmp.Diff([]string{"prd.json"}, dirNames(t, filepath.Dir(path))); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
}

func TestFileReload(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, "prd.json", []byte(twoStories), 0o644)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); err != nil || changed {
		t.Fatalf("Reload() of an unchanged file = %v, %v", changed, err)
	}

	// The agent ticks A itself (agent-ownership mode).
	ticked := strings.Replace(twoStories, `{"id": "A", "passes": false}`, `{"id": "A", "passes": true}`, 1)
	if err := os.WriteFile(path, []byte(ticked), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); err != nil || !changed {
		t.Fatalf("Reload() = %v, %v; want true, nil", changed, err)
	}
	if got, _ := f.Plan().Task("A"); got.Status != StatusDone {
		t.Errorf("A is %s after reload, want done", got.Status)
	}

	// The agent breaks the file: the error names the place, the last valid
	// content stays, and Restore puts it back.
	if err := os.WriteFile(path, []byte(`{"userStories": [{"id": "A", "passes": "true"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := f.Reload()
	var te *Error
	if !changed || !errors.As(err, &te) || te.Field != "userStories[0].passes" {
		t.Fatalf("Reload() = %v, %v; want true and a passes error", changed, err)
	}
	if got, _ := f.Plan().Task("A"); got.Status != StatusDone {
		t.Errorf("plan lost after a bad reload: A is %s", got.Status)
	}
	if err := f.Restore(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ticked, string(mustRead(t, path))); diff != "" {
		t.Errorf("restored (-want +got):\n%s", diff)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); !changed || !errors.Is(err, ErrChanged) {
		t.Errorf("Reload() of a removed file = %v, %v; want true, ErrChanged", changed, err)
	}
}

func TestFileSetStatusConcurrent(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("{\"userStories\": [\n")
	const n = 20
	for i := range n {
		sep := ","
		if i == n-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  {\"id\": \"T%d\", \"passes\": false}%s\n", i, sep)
	}
	b.WriteString("]}\n")
	path := writeTemp(t, "prd.json", []byte(b.String()), 0o644)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := f.SetStatus(fmt.Sprintf("T%d", i), StatusDone); err != nil {
				t.Error(err)
			}
			_ = f.Plan().Open()
		})
	}
	wg.Wait()
	g, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if open := g.Plan().Open(); open != 0 {
		t.Errorf("%d tasks still open on disk", open)
	}
	if diff := cmp.Diff([]string{"prd.json"}, dirNames(t, filepath.Dir(path))); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The change check reads in chunks: a difference in the last one, a file
// that grew or shrank by a byte, are all changes, and Reload then has the
// new content whole.
func TestFileModifiedReadsInChunks(t *testing.T) {
	t.Parallel()
	data := planN(1000) // more than two chunks
	if len(data) < 2*64<<10 {
		t.Fatalf("plan of %d bytes: want at least two chunks", len(data))
	}
	edits := map[string][]byte{
		"last chunk": bytes.Replace(data, []byte(`"T-1000", "title": "Task 1000"`), []byte(`"T-1000", "title": "Task 1OOO"`), 1),
		"longer":     append(bytes.Clone(data), '\n'),
		"shorter":    bytes.TrimSuffix(data, []byte("\n")),
		"same":       bytes.Clone(data),
	}
	if bytes.Equal(edits["last chunk"], data) {
		t.Fatal("the last-chunk edit changed nothing")
	}
	for name, edited := range edits {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := writeTemp(t, "prd.json", data, 0o644)
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, edited, 0o644); err != nil {
				t.Fatal(err)
			}
			want := !bytes.Equal(edited, data)
			if got, err := f.Modified(); err != nil || got != want {
				t.Fatalf("Modified() = %v, %v; want %v", got, err, want)
			}
			if changed, err := f.Reload(); err != nil || changed != want {
				t.Fatalf("Reload() = %v, %v; want %v", changed, err, want)
			}
			if !bytes.Equal(f.Bytes(), edited) {
				t.Errorf("after Reload, Bytes() is not the file's content")
			}
		})
	}
}

// Edits of every kind, one after the other on one File, each building on
// the parse the previous one left (a spliced one after a status change):
// after each, the File says what loading the file again says.
func TestFileEditsBuildOnEachOther(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, "prd.json", []byte(twoStories), 0o644)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"A done", func() error { return f.SetStatus("A", StatusDone) }},
		{"add C", func() error { _, err := f.Add(Task{Title: "C", ID: "C"}); return err }},
		{"C done", func() error { return f.SetStatus("C", StatusDone) }},
		{"B failed", func() error { return f.SetStatus("B", StatusFailed) }},
		{"A open", func() error { return f.SetStatus("A", StatusOpen) }},
		{"their edit", func() error {
			return os.WriteFile(path, bytes.Replace(f.Bytes(), []byte(`"id": "B", "passes": false`), []byte(`"id": "B", "passes": true`), 1), 0o644)
		}},
		{"C open, merged", func() error { return f.SetStatus("C", StatusOpen) }},
		{"B open", func() error { return f.SetStatus("B", StatusOpen) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.name == "their edit" {
			continue
		}
		fresh, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !bytes.Equal(f.Bytes(), fresh.Bytes()) {
			t.Fatalf("%s: the File's content is not the file's", s.name)
		}
		if diff := cmp.Diff(fresh.Plan(), f.Plan()); diff != "" {
			t.Fatalf("%s: plan (-loaded +kept):\n%s", s.name, diff)
		}
	}
	want := []Status{StatusOpen, StatusOpen, StatusOpen}
	var got []Status
	for _, tk := range f.Plan().Tasks {
		got = append(got, tk.Status)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

// TestLoadMissing: a plan that is not there is named as the user gave it,
// not in the system call's words, and is still fs.ErrNotExist.
func TestLoadMissing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing.md")
	_, err := Load(path)
	if want := "plan file " + path + " does not exist"; err == nil || err.Error() != want {
		t.Errorf("Load(missing) = %v, want %q", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
}
