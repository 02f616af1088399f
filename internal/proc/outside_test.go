package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOutsideSkipsWhatTheAgentCanWrite: the PATH ralph's own programs
// are found on has no entry in the project (nor one that is a link into
// it, nor one that is to be made there), no empty or relative one, and a
// program found only there is an error that says where it is.
func TestOutsideSkipsWhatTheAgentCanWrite(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	project := filepath.Join(root, "project")
	venv := filepath.Join(project, ".venv", "bin")
	host := filepath.Join(root, "usr", "bin")
	extra := filepath.Join(root, "allowed")
	for _, d := range []string{venv, host, extra} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(venv, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(root, "later")
	if err := os.Symlink(filepath.Join(project, "bin"), dangling); err != nil {
		t.Fatal(err)
	}
	exe := func(p string) {
		t.Helper()
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe(filepath.Join(venv, "bwrap"))
	exe(filepath.Join(host, "bwrap"))
	exe(filepath.Join(venv, "only-here"))
	exe(filepath.Join(extra, "tool"))
	// A file outside that is a link to one inside.
	if err := os.Symlink(filepath.Join(venv, "only-here"), filepath.Join(host, "linked")); err != nil {
		t.Fatal(err)
	}

	path := strings.Join([]string{venv, "", "rel/bin", link, dangling, filepath.Join(project, "not-yet"), host, extra}, ":")
	o := NewOutside([]string{"PATH=" + path}, []string{project, extra})
	if diff := cmp.Diff(host, o.PATH()); diff != "" {
		t.Errorf("PATH (-want +got):\n%s", diff)
	}
	if got, err := o.LookPath("bwrap"); err != nil || got != filepath.Join(host, "bwrap") {
		t.Errorf("bwrap: %q, %v; want the one outside the project", got, err)
	}
	for _, name := range []string{"only-here", "linked"} {
		_, err := o.LookPath(name)
		var held *HeldError
		if !errors.As(err, &held) || !IsNotFound(err) {
			t.Fatalf("%s: %v; want a HeldError that matches ErrNotFound", name, err)
		}
		if !strings.Contains(err.Error(), "which the agent can write") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := o.LookPath("tool"); !IsNotFound(err) {
		t.Errorf("a program in an allow-write path: %v; want not found", err)
	}
	if _, err := o.LookPath("nowhere"); !IsNotFound(err) {
		t.Errorf("nowhere: %v", err)
	}
	env := o.Environ([]string{"A=1", "PATH=" + path})
	if diff := cmp.Diff([]string{"A=1", "PATH=" + host}, env); diff != "" {
		t.Errorf("Environ (-want +got):\n%s", diff)
	}
	if _, ok := o.Held(filepath.Join(link, "x")); !ok {
		t.Error("a path through a link into the project is not held")
	}
}

// TestOutsideOnce: a name is looked up once per lookup; a program the
// agent makes later, even outside, is not found instead.
func TestOutsideOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := NewOutside([]string{"PATH=" + dir}, nil)
	if _, err := o.LookPath("x"); !IsNotFound(err) {
		t.Fatalf("x: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := o.LookPath("x"); !IsNotFound(err) {
		t.Errorf("x, asked again: %v; want the first answer", err)
	}
	ctx := WithOutside(t.Context(), o)
	if OutsideFrom(ctx, nil) != o {
		t.Error("OutsideFrom does not return the context's lookup")
	}
}
