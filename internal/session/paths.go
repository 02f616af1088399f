package session

import "path/filepath"

// InDir resolves a path given on the command line against the project
// directory (-C).
func InDir(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}
