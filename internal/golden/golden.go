// Package golden compares test output with golden files under testdata/,
// and rewrites them when the tests run with -update. It is test support:
// only _test.go files import it.
//
// One flag for every package: `go test ./... -update` rewrites every golden
// file (and the testscripts' cmp files, where a package passes Updating to
// testscript), then `git diff` shows what changed, to be reviewed like code.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update is the -update flag. A flag is process-wide by nature; it is
// registered once, here, so that no test package defines its own.
var update = flag.Bool("update", false, "rewrite golden files from the current output")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Check compares got with the file at path. With -update it writes got
// there instead (creating the directory), so the next run compares.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got); if the change is intended, run go test -update and review the diff:\n%s", path, diff)
	}
}
