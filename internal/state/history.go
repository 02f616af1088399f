package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/ralph-loop/ralph/internal/projectfs"
	"github.com/ralph-loop/ralph/internal/redact"
)

// AppendHistory adds rec as one line to history.jsonl: the whole line goes
// out in a single write(2) on an O_APPEND descriptor before AppendHistory
// returns, so a reader never sees half of it unless the process dies
// inside that write; its fsync follows in the background (Sync waits for
// it).
//
// Before the store's first append, a torn last line (one without its
// newline, left by a kill -9 in the middle of a write) is repaired: if it is
// not a complete JSON object it is truncated away, losing only the record
// that was never fully written; if it is complete and merely lacks its
// newline, the newline is added. Either way the file is valid JSONL again
// and the new record starts on a line of its own.
func (s *Store) AppendHistory(rec Record) error {
	rec.Error = redact.String(rec.Error) // an agent's error may quote a secret
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	line = append(line, '\n')

	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.path(HistoryFile)
	if !s.repaired {
		if err := repairTail(s.fs(), path); err != nil {
			return fmt.Errorf("append history: repair %s: %w", path, err)
		}
		s.repaired = true
	}
	if err := s.fs().Append(path, line, 0o600); err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	return nil
}

// repairTail makes sure path, if it exists, ends with a newline; see
// AppendHistory for what happens to an unterminated last line.
func repairTail(root projectfs.Root, path string) error {
	f, err := root.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	size := info.Size()
	if size == 0 {
		return nil
	}
	start, err := lastLineStart(f, size)
	if err != nil {
		return err
	}
	if start == size {
		return nil // ends with a newline: nothing torn
	}
	tail := make([]byte, size-start)
	if _, err := f.ReadAt(tail, start); err != nil {
		return err
	}
	if isRecord(tail) {
		_, err = f.WriteAt([]byte("\n"), size)
	} else {
		err = f.Truncate(start)
	}
	if err != nil {
		return err
	}
	return f.Sync()
}

// lastLineStart returns the offset just after the last newline in the first
// size bytes of f (0 when there is none), reading backwards in blocks.
func lastLineStart(f *os.File, size int64) (int64, error) {
	const block = 64 << 10
	buf := make([]byte, block)
	end := size
	for end > 0 {
		n := min(int64(block), end)
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// isRecord reports whether line is one complete record.
func isRecord(line []byte) bool {
	_, err := decodeRecord(line)
	return err == nil
}

// decodeRecord decodes one history line, which must be a JSON object.
func decodeRecord(line []byte) (Record, error) {
	var rec Record
	if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '{' {
		return rec, errors.New("not a JSON object")
	}
	err := json.Unmarshal(line, &rec)
	return rec, err
}

// History returns every record of history.jsonl in file order; no file is
// no history. Blank lines are skipped, and so is a final line without a
// newline that does not decode (a write torn by a crash). Any other line
// that does not decode is an error naming the file and line.
func (s *Store) History() ([]Record, error) {
	path := s.path(HistoryFile)
	f, err := s.fs().Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	defer f.Close()

	// bufio.Reader, not Scanner: a record's error text has no length limit.
	r := bufio.NewReader(f)
	var recs []Record
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return recs, fmt.Errorf("read history: %w", err)
		}
		torn := errors.Is(err, io.EOF) // no newline: possibly cut short
		if len(bytes.TrimSpace(line)) > 0 {
			rec, derr := decodeRecord(line)
			if derr != nil {
				if torn {
					break
				}
				return recs, fmt.Errorf("%s:%d: invalid history record: %w", path, n, derr)
			}
			recs = append(recs, rec)
		}
		if torn {
			break
		}
	}
	return recs, nil
}
