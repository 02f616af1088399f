package words

import (
	"os"
	"path/filepath"
	"strings"
)

// Rel is p relative to dir when it is inside it, p otherwise: a file of
// the project named as the project names it.
func Rel(dir, p string) string {
	if rel, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return p
}

// Path is path as the user would type it here: relative to the working
// directory when it is below it, else absolute.
func Path(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return abs
}
