package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// ColdVars are the variables ColdCaches sets: a sandbox that filters the
// environment (sandbox-exec) must let them in.
func ColdVars() []string {
	return []string{"GOCACHE", "PYTEST_ADDOPTS", "TESTMON_DATAFILE", "NX_CACHE_DIRECTORY", "NX_SKIP_NX_CACHE",
		"TURBO_CACHE_DIR", "TURBO_FORCE", "CCACHE_DIR", "SCCACHE_DIR", "GRADLE_OPTS"}
}

// ColdCaches gives one gate run, where no layer can be laid (sandbox-exec,
// no sandbox, no user namespace), caches of its own, empty: a directory,
// and the toolchains' variables pointing into it (Go's build cache,
// pytest's, testmon's, Nx's and Turborepo's, ccache's, sccache's), with
// replay switched off where a variable does that (Nx, Turborepo, Gradle's
// build cache). Each run is cold, and replays nothing the agent wrote.
// env is the gate's environment, whose PYTEST_ADDOPTS and GRADLE_OPTS are
// added to, not replaced; done removes the directory.
func ColdCaches(env []string) (vars []string, done func(), err error) {
	dir, err := os.MkdirTemp("", "ralph-gate-")
	if err != nil {
		return nil, nil, err
	}
	in := func(name string) string { return filepath.Join(dir, name) }
	with := func(name, add string) string {
		return name + "=" + strings.TrimSpace(getenv(env, name)+" "+add)
	}
	vars = []string{
		"GOCACHE=" + in("go-build"),
		with("PYTEST_ADDOPTS", "-o cache_dir="+in("pytest")),
		"TESTMON_DATAFILE=" + in("testmondata"),
		"NX_CACHE_DIRECTORY=" + in("nx"), "NX_SKIP_NX_CACHE=true",
		"TURBO_CACHE_DIR=" + in("turbo"), "TURBO_FORCE=true",
		"CCACHE_DIR=" + in("ccache"), "SCCACHE_DIR=" + in("sccache"),
		with("GRADLE_OPTS", "-Dorg.gradle.caching=false"),
	}
	return vars, func() { removeAll(dir) }, nil
}

// removeAll removes dir, whose subdirectories a toolchain may have made
// read-only (Go's module cache does).
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// NoReplay gives one gate run without any sandbox (--sandbox none) the
// user's build caches as they are (Go's, ccache's, sccache's), and stores
// that replay verdicts or select tests empty or switched off as
// ColdCaches does, with go test's cached results off too (-count=1).
// Without a sandbox the agent writes the user's caches as freely as the
// user does, so an empty build cache per gate run would protect nothing
// and cost every gate a cold build; what no agent can make a gate do here
// is take a stored result for a test it did not run. done removes the
// directory of the stores.
func NoReplay(env []string) (vars []string, done func(), err error) {
	cold, done, err := ColdCaches(env)
	if err != nil {
		return nil, nil, err
	}
	for _, v := range cold {
		name, _, _ := strings.Cut(v, "=")
		switch name {
		case "GOCACHE", "CCACHE_DIR", "SCCACHE_DIR":
			continue
		}
		vars = append(vars, v)
	}
	vars = append(vars, "GOFLAGS="+strings.TrimSpace(getenv(env, "GOFLAGS")+" -count=1"))
	return vars, done, nil
}
