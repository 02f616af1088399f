package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/proc"
)

// The caches come from the user's environment and configuration: a go
// the project put on the PATH is not run, the real one is asked with
// GOTOOLCHAIN=local (a go.mod asking for another toolchain does not
// switch it), and Go's missing build cache is made.
func TestFindCaches(t *testing.T) {
	goExe, err := proc.LookPath("go", "", nil)
	if err != nil {
		t.Skip("no go toolchain: ", err)
	}
	// Telemetry off, as `go telemetry off` leaves it: go would otherwise
	// start a child that writes in the home after the test is done.
	root := tree(t, "home/.npmrc", "home/.config/go/telemetry/mode", "proj/bin/", "proj/go.mod")
	home, proj := filepath.Join(root, "home"), filepath.Join(root, "proj")
	marker := filepath.Join(root, "project-go-ran")
	if err := os.WriteFile(filepath.Join(proj, "bin/go"), []byte("#!/bin/sh\ntouch "+marker+"\necho /agent/cache\necho /agent/mod\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "go.mod"), []byte("module x\n\ngo 1.99\n\ntoolchain go1.99.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config/go/telemetry/mode"), []byte("off"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte("registry=https://example.invalid/\ncache = ~/npm-cache\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + filepath.Join(proj, "bin") + ":bin:" + filepath.Dir(goExe) + ":/usr/bin:/bin",
		"GOCACHE=" + filepath.Join(home, "gocache"), "GOMODCACHE=" + filepath.Join(home, "gomod"), "GOTOOLCHAIN=go1.99.0",
		"CARGO_HOME=" + filepath.Join(home, "cargo"), "XDG_CACHE_HOME=" + filepath.Join(home, "xdg"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	got := FindCaches(t.Context(), env, proj, []string{"~/extra"})
	want := []string{filepath.Join(home, "gocache"), filepath.Join(home, "gomod"), filepath.Join(home, "cargo"),
		filepath.Join(home, "npm-cache"), filepath.Join(home, "xdg/pip"), filepath.Join(home, ".m2"),
		filepath.Join(home, ".gradle"), filepath.Join(home, "xdg/ccache"), filepath.Join(home, ".ccache"),
		filepath.Join(home, "xdg/sccache"), "~/extra"}
	if !slices.Equal(got, want) {
		t.Errorf("FindCaches =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the go on the project's PATH was run")
	}
	if !isDir(filepath.Join(home, "gocache")) {
		t.Error("Go's build cache was not made")
	}
}

// Without a sandbox's layers, each gate run gets empty caches of its own,
// added to the user's pytest and Gradle options, and removed after, even
// where a toolchain made them read-only.
func TestColdCaches(t *testing.T) {
	vars, done, err := ColdCaches([]string{"PYTEST_ADDOPTS=-x", "GOCACHE=/home/u/.cache/go-build"})
	if err != nil {
		t.Fatal(err)
	}
	gocache := getenv(vars, "GOCACHE")
	if !strings.HasPrefix(gocache, os.TempDir()) || !strings.HasPrefix(getenv(vars, "PYTEST_ADDOPTS"), "-x -o cache_dir=") ||
		getenv(vars, "GRADLE_OPTS") != "-Dorg.gradle.caching=false" || getenv(vars, "TURBO_FORCE") != "true" {
		t.Fatalf("vars = %q", vars)
	}
	for _, v := range vars {
		k, _, _ := strings.Cut(v, "=")
		if !slices.Contains(ColdVars(), k) {
			t.Errorf("%s is set but not in ColdVars: sandbox-exec would drop it", k)
		}
	}
	ro := filepath.Join(gocache, "a/b")
	if err := os.MkdirAll(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(ro), 0o555); err != nil {
		t.Fatal(err)
	}
	done()
	if _, err := os.Stat(filepath.Dir(gocache)); err == nil {
		t.Errorf("%s is still there", filepath.Dir(gocache))
	}
}
