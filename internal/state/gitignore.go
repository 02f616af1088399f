package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// EnsureGitignore makes sure the project's .gitignore ignores .ralph/,
// creating the file if needed. An existing entry (.ralph/, .ralph, /.ralph/
// or /.ralph) is left alone. Otherwise ".ralph/" is appended, after a
// newline if the file lacks a trailing one, and with the file's own line
// ending. The rest of the file is kept byte for byte; appending in place
// also keeps its permissions and a symlinked .gitignore.
func EnsureGitignore(projectDir string) (changed bool, err error) {
	path := filepath.Join(projectDir, ".gitignore")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("gitignore: %w", err)
	}
	for line := range bytes.Lines(data) {
		switch string(bytes.TrimSpace(line)) {
		case ".ralph/", ".ralph", "/.ralph/", "/.ralph":
			return false, nil
		}
	}
	eol := "\n"
	if bytes.Contains(data, []byte("\r\n")) {
		eol = "\r\n"
	}
	add := Dir + "/" + eol
	if len(data) > 0 && data[len(data)-1] != '\n' {
		add = eol + add
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return false, fmt.Errorf("gitignore: %w", err)
	}
	_, err = f.WriteString(add)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("gitignore: %w", err)
	}
	return true, nil
}
