package sandbox

import (
	"strings"
	"testing"
)

// NoReplay keeps the user's build caches and switches replay off: go
// test's cached results, pytest's store (an empty one of its own).
func TestNoReplay(t *testing.T) {
	vars, done, err := NoReplay([]string{"GOFLAGS=-mod=mod", "PYTEST_ADDOPTS=-x"})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	got := map[string]string{}
	for _, v := range vars {
		k, val, _ := strings.Cut(v, "=")
		got[k] = val
	}
	if _, ok := got["GOCACHE"]; ok {
		t.Errorf("NoReplay sets GOCACHE (%s): the build cache should stay the user's", got["GOCACHE"])
	}
	if got["GOFLAGS"] != "-mod=mod -count=1" {
		t.Errorf("GOFLAGS = %q, want the user's and -count=1", got["GOFLAGS"])
	}
	if !strings.HasPrefix(got["PYTEST_ADDOPTS"], "-x -o cache_dir=") {
		t.Errorf("PYTEST_ADDOPTS = %q, want the user's and a cache_dir of its own", got["PYTEST_ADDOPTS"])
	}
}
