package state

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ralph-loop/ralph/internal/projectfs"
	"github.com/ralph-loop/ralph/internal/redact"
)

// Store is a project's .ralph directory. Its methods are safe for concurrent
// use by the goroutines of one process; the lock keeps other processes out.
type Store struct {
	dir string // absolute path of .ralph

	// mu serialises history appends and the one-time repair of a torn
	// last line that precedes the first of them, and guards accepting.
	mu       sync.Mutex
	repaired bool
	// accepting is the acceptance record Accepting made, "" for none.
	accepting string

	// ahead are the transcript files of the next iteration, created in
	// the background while the current one runs (PrepareIteration).
	ahead ahead
}

// ahead is the iteration whose transcript files were made ahead.
type ahead struct {
	mu        sync.Mutex
	wg        sync.WaitGroup
	runID     string
	iteration int
	made      []string // the files it created
	used      bool
}

// Open returns the store of projectDir, creating .ralph/ and .ralph/runs/
// when they are missing.
func Open(projectDir string) (*Store, error) {
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	dir := filepath.Join(abs, Dir)
	s := &Store{dir: dir}
	// The project itself is the user's (the root of the door, not behind it).
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	if err := s.fs().MkdirAll(filepath.Join(dir, RunsDir), 0o700); err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	// What ralph keeps of a run is the user's alone, whatever the umask
	// (and a .ralph/ an older ralph made 0755): prompts, transcripts,
	// its own git index.
	if err := private(dir); err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	// .ralph/ ignores itself, as soon as it exists: a run refused before
	// it could add .ralph/ to the project's .gitignore (a detached HEAD,
	// say) must not leave the tree dirty with its lock file.
	self := filepath.Join(dir, ".gitignore")
	if _, err := s.fs().Lstat(self); errors.Is(err, fs.ErrNotExist) {
		if err := writeFile(s.fs(), self, []byte("# ralph's own files: never committed\n*\n")); err != nil {
			return nil, fmt.Errorf("open state: %w", err)
		}
	}
	return s, nil
}

// View returns the store of projectDir for reading only, creating
// nothing: what the checks before a run look at, when nothing may change
// yet.
func View(projectDir string) (*Store, error) {
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	return &Store{dir: filepath.Join(abs, Dir)}, nil
}

// Dir returns the absolute path of the store's .ralph directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(name string) string { return filepath.Join(s.dir, name) }

// NewRunID returns an id such as 20261121-072012-a1b2c3: the UTC time, so ids
// sort by start time whatever the time zone, and a random suffix so two runs
// started in the same second differ.
func NewRunID(now time.Time) string {
	var b [3]byte
	// crypto/rand.Read never returns an error (it crashes the program if the
	// system's randomness is unavailable).
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// LoadState reads state.json. A missing file is a fresh project: the zero
// State with an empty Tasks map and no error. A corrupt file is an error
// that names the file, line and column.
func (s *Store) LoadState() (State, error) {
	st, err := readState(s.fs(), s.path(StateFile))
	if err != nil {
		return State{}, err
	}
	if err := s.loadAccepting(&st); err != nil {
		return State{}, err
	}
	return st, nil
}

// ReadState is LoadState for a reader that must not create .ralph/ (the
// server watching projects): projectDir's state.json, without the
// acceptance records.
func ReadState(projectDir string) (State, error) {
	return readState(projectfs.New(projectDir), filepath.Join(Dir, StateFile))
}

// readState reads the state.json at path; a missing one is the zero
// State. Writes replace the file whole (durable.WriteFile), so a read
// gets one of them.
func readState(root projectfs.Root, path string) (State, error) {
	var st State
	data, err := root.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{Tasks: map[string]TaskState{}}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, jsonError(path, data, err)
	}
	if st.Tasks == nil {
		st.Tasks = map[string]TaskState{}
	}
	return st, nil
}

// SaveState replaces state.json atomically: a reader, or a run killed
// with SIGKILL, sees the old state or the new one, never a part. The
// fsyncs that make it survive a power loss (the file, then .ralph/) run in
// the background: Sync waits for them.
func (s *Store) SaveState(st State) error {
	data, err := json.MarshalIndent(redactState(st), "", "  ")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	data = append(data, '\n')
	if err := s.fs().WriteFile(s.path(StateFile), data, 0o600); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// redactState is st with the secrets in its messages hidden (an error
// may quote one); the caller's tasks are not touched.
func redactState(st State) State {
	st.Message = redact.String(st.Message)
	for _, ts := range st.Tasks {
		if redact.String(ts.LastError) == ts.LastError {
			continue
		}
		tasks := maps.Clone(st.Tasks)
		for id, ts := range tasks {
			ts.LastError = redact.String(ts.LastError)
			tasks[id] = ts
		}
		st.Tasks = tasks
		break
	}
	return st
}

// IterationFiles returns where iteration's transcript goes (see
// TranscriptFiles) and creates the run directory; the files are the
// caller's to write.
func (s *Store) IterationFiles(runID string, iteration int) (promptPath, outPath string, err error) {
	if err := checkTranscript(runID, iteration); err != nil {
		return "", "", err
	}
	promptPath, outPath = TranscriptFiles(filepath.Dir(s.dir), runID, iteration)
	if err := s.fs().MkdirAll(filepath.Dir(outPath), 0o700); err != nil {
		return "", "", fmt.Errorf("transcript: %w", err)
	}
	return promptPath, outPath, nil
}

// checkTranscript refuses a run id or iteration that would not name a
// transcript inside the runs directory.
func checkTranscript(runID string, iteration int) error {
	if runID == "" || runID == "." || runID == ".." || strings.ContainsAny(runID, `/\`) {
		return fmt.Errorf("transcript: invalid run id %q", runID)
	}
	if iteration < 0 {
		return fmt.Errorf("transcript: invalid iteration %d", iteration)
	}
	return nil
}

// PrepareIteration creates iteration's transcript files, empty, in the
// background: creating a file costs a journal transaction, which is best
// paid while an agent runs rather than between two. The writer of the
// iteration truncates and fills them as it would have created them
// (UsePrepared); DropPrepared removes them if the iteration never comes,
// or comes as something else (an end review's round writes files of its
// own). A run killed in
// between leaves two empty files in its own runs directory.
func (s *Store) PrepareIteration(runID string, iteration int) {
	if checkTranscript(runID, iteration) != nil {
		return
	}
	s.DropPrepared()
	s.ahead.mu.Lock()
	defer s.ahead.mu.Unlock()
	s.ahead.runID, s.ahead.iteration, s.ahead.made, s.ahead.used = runID, iteration, nil, false
	promptPath, outPath := TranscriptFiles(filepath.Dir(s.dir), runID, iteration)
	s.ahead.wg.Go(func() {
		var made []string
		_ = s.fs().MkdirAll(filepath.Dir(outPath), 0o700)
		for _, p := range []string{promptPath, outPath} {
			// O_EXCL: never a file that is there already.
			if f, err := s.fs().OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
				_ = f.Close()
				made = append(made, p)
			}
		}
		s.ahead.mu.Lock()
		s.ahead.made = made
		s.ahead.mu.Unlock()
	})
}

// UsePrepared says the iteration's transcript files are being written:
// those PrepareIteration made for it stay.
func (s *Store) UsePrepared(runID string, iteration int) {
	s.ahead.mu.Lock()
	defer s.ahead.mu.Unlock()
	if s.ahead.runID == runID && s.ahead.iteration == iteration {
		s.ahead.used = true
	}
}

// DropPrepared waits for the files PrepareIteration is making and removes
// them unless their iteration came.
func (s *Store) DropPrepared() {
	s.ahead.wg.Wait()
	s.ahead.mu.Lock()
	defer s.ahead.mu.Unlock()
	if !s.ahead.used {
		for _, p := range s.ahead.made {
			if info, err := s.fs().Lstat(p); err == nil && info.Size() == 0 {
				_ = s.fs().Remove(p)
			}
		}
	}
	s.ahead.runID, s.ahead.made = "", nil
}

// jsonError turns a decoding error of data (read from path) into one that
// says where: "state.json:3:14: ...".
func jsonError(path string, data []byte, err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return fmt.Errorf("%s:%d:%d: %w", path, line, col, err)
	case errors.As(err, &typ):
		line, col := position(data, typ.Offset)
		if typ.Field == "" {
			return fmt.Errorf("%s:%d:%d: %w", path, line, col, err)
		}
		return fmt.Errorf("%s:%d:%d: %s: %w", path, line, col, typ.Field, err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	if offset < 0 {
		offset = 0
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// private makes the directory dir 0700, without following a link in its
// place: everything ralph keeps beneath it is then the user's alone,
// whatever mode the umask (or git, for its index) gave it.
func private(dir string) error {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.Mode().Perm() == 0o700 {
		// Already private: nothing to change, and nothing to ask of a
		// file system the sandbox mounts read-only (ralph tasks done,
		// run by the agent in agent ownership).
		return nil
	}
	return f.Chmod(0o700)
}
