package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNotFound is what a missing executable matches, so that callers can
// tell "not installed" from other failures without importing os/exec.
var ErrNotFound = exec.ErrNotFound

// IsNotFound reports whether err says an executable is not installed (or
// not on the PATH it was looked up on).
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// LookPath finds name the way the child's own environment would: on the
// PATH in env (ralph's PATH when env has none), not ralph's. Relative PATH
// entries are skipped, so a file in the project cannot stand in for a
// program. A name with a slash is checked as is, relative to dir, and
// returned unchanged (a relative one runs relative to the child's Dir). A
// missing executable is an error that matches ErrNotFound and names it.
func LookPath(name, dir string, env []string) (string, error) {
	notFound := &exec.Error{Name: name, Err: exec.ErrNotFound}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if !isExecutable(p) {
			return "", notFound
		}
		return name, nil
	}
	pathList, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			pathList, ok = v, true
		}
	}
	if !ok {
		pathList = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(d) {
			continue
		}
		if p := filepath.Join(d, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", notFound
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
