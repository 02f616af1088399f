package projectfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// tree makes a project beside a directory outside it:
//
//	project/plan.json             "plan"
//	project/sub/notes.md          "notes"
//	project/inlink -> sub/notes.md
//	project/sub/uplink -> ../plan.json
//	project/out -> ../outside/secret
//	project/abs -> <abs>/outside/secret
//	project/outdir -> ../outside
//	outside/secret                "key"
func tree(t *testing.T) (project, outside string) {
	t.Helper()
	base := t.TempDir()
	project, outside = filepath.Join(base, "project"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(project, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(project, "plan.json"):    "plan",
		filepath.Join(project, "sub/notes.md"): "notes",
		filepath.Join(outside, "secret"):       "key",
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"inlink":     "sub/notes.md",
		"sub/uplink": "../plan.json",
		"out":        "../outside/secret",
		"abs":        filepath.Join(outside, "secret"),
		"outdir":     "../outside",
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(project, name)); err != nil {
			t.Fatal(err)
		}
	}
	return project, outside
}

// roots are the ways a root opens names: the kernel's openat2 where there
// is one, and the os.Root walk every system has.
func roots(project string) map[string]Root {
	walk := New(project)
	walk.noOpenat2 = true
	rs := map[string]Root{"walk": walk}
	if runtime.GOOS == "linux" {
		rs["openat2"] = New(project)
	}
	return rs
}

func TestReadStaysBeneath(t *testing.T) {
	t.Parallel()
	project, outside := tree(t)
	tests := []struct {
		name    string
		want    string
		outside bool
	}{
		{name: "plan.json", want: "plan"},
		{name: filepath.Join(project, "sub/notes.md"), want: "notes"},
		{name: "inlink", want: "notes"},
		{name: "sub/uplink", want: "plan"},
		{name: "sub/../plan.json", want: "plan"},
		{name: "out", outside: true},
		{name: "abs", outside: true},
		{name: "outdir/secret", outside: true},
		{name: "../outside/secret", outside: true},
		{name: filepath.Join(outside, "secret"), outside: true},
	}
	for how, r := range roots(project) {
		for _, tt := range tests {
			t.Run(how+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				got, err := r.ReadFile(tt.name)
				if tt.outside {
					if !errors.Is(err, ErrOutside) {
						t.Fatalf("ReadFile(%q) = %q, %v; want an error wrapping ErrOutside", tt.name, got, err)
					}
					return
				}
				if err != nil || string(got) != tt.want {
					t.Fatalf("ReadFile(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
				}
			})
		}
	}
}

// TestOutsideErrorSaysWhere: the error names the file, where it leads and
// why nothing was read.
func TestOutsideErrorSaysWhere(t *testing.T) {
	t.Parallel()
	project, outside := tree(t)
	for how, r := range roots(project) {
		_, err := r.ReadFile("out")
		var oe *OutsideError
		if !errors.As(err, &oe) {
			t.Fatalf("%s: %v, want an *OutsideError", how, err)
		}
		want := "out leads to " + filepath.Join(outside, "secret")
		if real, err := filepath.EvalSymlinks(filepath.Join(outside, "secret")); err == nil {
			want = "out leads to " + real
		}
		if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
			t.Errorf("%s: error %q, want it to start %q", how, got, want)
		}
	}
}

func TestWriteFileStaysBeneath(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"walk", "openat2"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			project, outside := tree(t)
			r, ok := roots(project)[how]
			if !ok {
				t.Skip("no openat2 here")
			}
			// A plain replacement keeps the file's permissions.
			if err := r.WriteFile("plan.json", []byte("plan 2"), 0o644); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(filepath.Join(project, "plan.json")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("plan.json after WriteFile: %v, %v; want mode 0600 kept", fi, err)
			}
			// Through a link inside: the target is replaced, the link stays.
			if err := r.WriteFile("sub/uplink", []byte("plan 3"), 0o644); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(project, "plan.json")); string(b) != "plan 3" {
				t.Errorf("plan.json = %q, want the write through sub/uplink", b)
			}
			if fi, err := os.Lstat(filepath.Join(project, "sub/uplink")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("sub/uplink is no longer a link: %v, %v", fi, err)
			}
			// A new file.
			if err := r.WriteFile("sub/new.md", []byte("new"), 0o644); err != nil {
				t.Fatal(err)
			}
			// Out, by every way: refused, and the file outside is untouched.
			for _, name := range []string{"out", "abs", "outdir/secret", "outdir/fresh", "../outside/secret"} {
				if err := r.WriteFile(name, []byte("pwned"), 0o644); !errors.Is(err, ErrOutside) {
					t.Errorf("WriteFile(%q) = %v, want an error wrapping ErrOutside", name, err)
				}
				if err := r.Append(name, []byte("pwned"), 0o644); !errors.Is(err, ErrOutside) {
					t.Errorf("Append(%q) = %v, want an error wrapping ErrOutside", name, err)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "key" {
				t.Errorf("outside/secret = %q, want it untouched", b)
			}
			if _, err := os.Lstat(filepath.Join(outside, "fresh")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("outside/fresh was made: %v", err)
			}
			ents, err := os.ReadDir(filepath.Join(project, "sub"))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if len(names) != 3 {
				t.Errorf("sub/ holds %q, want notes.md, new.md and uplink: no temporary file left", names)
			}
		})
	}
}

// Replace puts a file where a link was, and writes nowhere a link in
// the way leads.
func TestReplaceStaysBeneath(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"walk", "openat2"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			project, outside := tree(t)
			r, ok := roots(project)[how]
			if !ok {
				t.Skip("no openat2 here")
			}
			for _, name := range []string{"out", "sub/uplink"} {
				if err := r.Replace(name, []byte("replaced"), 0o644); err != nil {
					t.Fatal(err)
				}
				fi, err := os.Lstat(filepath.Join(project, name))
				if err != nil || !fi.Mode().IsRegular() {
					t.Errorf("%s after Replace: %v, %v; want a regular file in the link's place", name, fi, err)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(project, "plan.json")); string(b) != "plan" {
				t.Errorf("plan.json = %q, want it untouched (sub/uplink led there)", b)
			}
			for _, name := range []string{"outdir/secret", "outdir/fresh", "../outside/secret"} {
				if err := r.Replace(name, []byte("pwned"), 0o644); !errors.Is(err, ErrOutside) {
					t.Errorf("Replace(%q) = %v, want an error wrapping ErrOutside", name, err)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "key" {
				t.Errorf("outside/secret = %q, want it untouched", b)
			}
			if _, err := os.Lstat(filepath.Join(outside, "fresh")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("outside/fresh was made: %v", err)
			}
		})
	}
}

func TestAppendAndDirectories(t *testing.T) {
	t.Parallel()
	project, _ := tree(t)
	for how, r := range roots(project) {
		log := filepath.Join(".ralph", how, "history.jsonl")
		if err := r.MkdirAll(filepath.Dir(log), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, line := range []string{"a\n", "b\n"} {
			if err := r.Append(log, []byte(line), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if b, err := r.ReadFile(log); err != nil || string(b) != "a\nb\n" {
			t.Errorf("%s: %s = %q, %v", how, log, b, err)
		}
		ents, err := r.ReadDir(filepath.Dir(log))
		if err != nil || len(ents) != 1 || ents[0].Name() != "history.jsonl" {
			t.Errorf("%s: ReadDir = %v, %v", how, ents, err)
		}
		if _, err := r.ReadDir("outdir"); !errors.Is(err, ErrOutside) {
			t.Errorf("%s: ReadDir(outdir) = %v, want ErrOutside", how, err)
		}
		if err := r.MkdirAll("outdir/made", 0o755); !errors.Is(err, ErrOutside) {
			t.Errorf("%s: MkdirAll(outdir/made) = %v, want ErrOutside", how, err)
		}
		if _, err := r.Stat("out"); !errors.Is(err, ErrOutside) {
			t.Errorf("%s: Stat(out) = %v, want ErrOutside", how, err)
		}
	}
}
