// Package trust records the configuration files the user approved, and
// at which content, outside the project: ralph obeys a project's
// ralph.toml (or a --config file) only at content the user approved, as
// direnv obeys an .envrc only after `direnv allow`, because the agent
// ralph runs can write the project, and ralph runs what its
// configuration says outside the sandbox.
//
// The store is one small JSON file per approved path under
// $XDG_STATE_HOME/ralph/trust/ (~/.local/state/ralph/trust/): the path,
// the SHA-256 of the content approved, when, and the content itself, so
// that a refusal can show what changed since.
//
// Beside the approvals it keeps the Validation Commands in force for each
// plan (gates.go), which run as gates and which the agent can edit.
//
// It reads and writes its own store only: callers pass the content of the
// files they vouch for, and decide which files need trust.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ralph-loop/ralph/internal/durable"
)

// Store is the record of approvals in Dir.
type Store struct{ Dir string }

// Record is one approval: the file at Path, at the content whose SHA-256
// is SHA256, approved at TrustedAt.
type Record struct {
	Path      string    `json:"path"`
	SHA256    string    `json:"sha256"`
	TrustedAt time.Time `json:"trusted_at"`
	// Content is the content approved, for the diff of a later change.
	Content string `json:"content"`
}

// Sum is the hex SHA-256 of content.
func Sum(content []byte) string {
	s := sha256.Sum256(content)
	return hex.EncodeToString(s[:])
}

// Key is the name approvals of path are kept under: its absolute path,
// the directory's symlinks resolved. The file's own name is kept as it is
// (a ralph.toml that is a symlink is approved by its content, not by
// where it points: a link to another project's approved file is no
// approval here).
func Key(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// file is where the approval of key is kept.
func (s Store) file(key string) string {
	h := sha256.Sum256([]byte(key))
	return filepath.Join(s.Dir, hex.EncodeToString(h[:16])+".json")
}

// Lookup returns the approval of path; false when it has none.
func (s Store) Lookup(path string) (Record, bool, error) {
	if s.Dir == "" {
		return Record{}, false, nil
	}
	key, err := Key(path)
	if err != nil {
		return Record{}, false, err
	}
	var r Record
	found, err := s.read(s.file(key), &r)
	if err != nil || !found || r.Path != key { // another path's, by a hash collision of names
		return Record{}, false, err
	}
	return r, true, nil
}

// read decodes the JSON file name into v; false when there is none.
func (s Store) read(name string, v any) (bool, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return true, nil
}

// write records v as the JSON file name, the store's directory made
// first; both are the user's alone, whatever the umask.
func (s Store) write(name string, v any) error {
	if s.Dir == "" {
		return errors.New("no place for the trust store: set XDG_STATE_HOME or HOME")
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(s.Dir, 0o700); err != nil {
		return err
	}
	return durable.WriteFile(name, append(b, '\n'), 0o600)
}

// Trusted reports whether path is approved at content, and the approval
// it has (at other content) when it is not.
func (s Store) Trusted(path string, content []byte) (ok bool, last *Record, err error) {
	r, found, err := s.Lookup(path)
	if err != nil || !found {
		return false, nil, err
	}
	if r.SHA256 == Sum(content) {
		return true, &r, nil
	}
	return false, &r, nil
}

// Approve records that path is trusted at content.
func (s Store) Approve(path string, content []byte, now time.Time) (Record, error) {
	key, err := Key(path)
	if err != nil {
		return Record{}, err
	}
	r := Record{Path: key, SHA256: Sum(content), TrustedAt: now.UTC().Truncate(time.Second), Content: string(content)}
	return r, s.write(s.file(key), r)
}
