package task

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/ralph-loop/ralph/internal/projectfs"
)

// File is a plan file on disk together with the bytes ralph last read or
// wrote, which are the baseline for noticing that someone else (usually the
// agent) changed it. Its methods are safe for concurrent use.
//
// Plan snapshots are never modified: SetStatus and Reload replace the plan,
// so a *Plan obtained earlier stays a consistent view.
type File struct {
	mu   sync.Mutex
	path string
	// root and name are where the plan is read and written: the project
	// and the path (links followed only while they stay in the project),
	// or, for a link out of the project trusted at load, the directory and
	// name of the file it led to then; pinned is that file ("" for none).
	root   projectfs.Root
	name   string
	pinned string
	format format
	mode   fs.FileMode // kept on every write; used if the file must be recreated
	// cur is what we last read or wrote, as the format read it: its bytes
	// are the baseline for noticing changes, and where its tasks sit lets
	// the next edit splice without reading the file again.
	cur parsed
	// writes counts the writes of the file made through f (Writes).
	writes uint64
}

// missingError is a plan file that is not there, said in the user's words
// (the path as given) rather than the system call's; it is still
// fs.ErrNotExist to errors.Is.
type missingError struct {
	path string
	err  error
}

func (e *missingError) Error() string {
	return fmt.Sprintf("plan file %s does not exist", e.path)
}

func (e *missingError) Unwrap() error { return e.err }

// Load reads and validates a plan file. Its format is detected from the
// content and name (see detect); a file in no known format gives an error
// wrapping ErrUnsupported. Validation problems are *Error values, joined
// when there are several.
//
// The plan stays beneath its own directory, except for a symbolic link
// out of it that is there now: the caller named the file (see LoadIn).
func Load(path string) (*File, error) {
	return LoadIn(filepath.Dir(path), path, true)
}

// LoadIn is Load for a plan inside project, which is all that its reads
// and writes may reach: a symbolic link on the way that leads out of the
// project is refused (an error wrapping projectfs.ErrOutside), unless
// trustLink is set, as for a shared plan the user linked before the run.
// Then the file the link leads to now is the plan until the File is
// dropped, and a link changed during the run to lead elsewhere is an
// error, not a new plan.
func LoadIn(project, path string, trustLink bool) (*File, error) {
	name, err := filepath.Abs(path) // a relative path is the working directory's, not project's
	if err != nil {
		return nil, err
	}
	root, pinned := projectfs.New(project), ""
	fh, err := root.Open(name)
	if errors.Is(err, projectfs.ErrOutside) && trustLink {
		if pinned, err = filepath.EvalSymlinks(path); err != nil {
			return nil, err
		}
		root, name = projectfs.New(filepath.Dir(pinned)), filepath.Base(pinned)
		fh, err = root.Open(name)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &missingError{path: path, err: err}
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(fh)
	if err != nil {
		return nil, err
	}
	fm, cur, err := detectAndRead(path, data)
	if err != nil {
		return nil, err
	}
	return &File{path: path, root: root, name: name, pinned: pinned, format: fm, mode: info.Mode().Perm(), cur: cur}, nil
}

// open opens the plan for reading, where Load found it: beneath the
// project, or the file a trusted link led to then, as long as the link
// still leads there.
func (f *File) open() (*os.File, error) {
	if err := f.linkMoved(); err != nil {
		return nil, err
	}
	return f.root.Open(f.name)
}

// read reads the plan whole, as open finds it.
func (f *File) read() ([]byte, error) {
	fh, err := f.open()
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(fh)
}

// linkMoved is an error when the plan was a link out of the project
// trusted at load and now leads elsewhere (someone replaced it during the
// run: ralph keeps to the file the user linked).
func (f *File) linkMoved() error {
	if f.pinned == "" {
		return nil
	}
	now, err := filepath.EvalSymlinks(f.path)
	if err == nil && now != f.pinned {
		return fmt.Errorf("%s led to %s when the run started and leads to %s now: ralph reads and writes only the first; put the link back",
			f.path, f.pinned, now)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Path returns the path the file was loaded from.
func (f *File) Path() string { return f.path }

// Plan returns the plan as last read or written. Treat it as read-only.
func (f *File) Plan() *Plan {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur.result()
}

// Bytes returns a copy of the content last read or written.
func (f *File) Bytes() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bytes.Clone(f.cur.source())
}

// Modified reports whether the file on disk differs from what was last read
// or written. A removed file counts as modified.
//
// It compares content, not size and mtime: plan files are small, and mtime
// granularity (a second or two on some filesystems) hides a same-size edit
// such as "[ ]" → "[x]" made just after we read, while a touch without an
// edit is no change.
func (f *File) Modified() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed, _, err := f.disk()
	return changed, err
}

// disk compares the file on disk with what we last read or wrote. It
// returns the disk content when it differs, or nil when the file is gone.
//
// The runner asks three times an iteration, so an unchanged file, the
// usual answer, is compared as it is read, a chunk at a time, instead of
// being read whole into memory first.
func (f *File) disk() (changed bool, data []byte, err error) {
	fh, err := f.open()
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	defer fh.Close()
	want := f.cur.source()
	size := int64(-1) // unknown: not a regular file
	if fi, err := fh.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	} else if err == nil && fi.IsDir() {
		return false, nil, fmt.Errorf("%s is a directory now, not the plan file: put the plan back and run again", f.path)
	}
	if size < 0 || size == int64(len(want)) {
		same, err := sameContent(fh, want)
		if err != nil || same {
			return false, nil, err
		}
		if _, err := fh.Seek(0, io.SeekStart); err != nil {
			return false, nil, err
		}
	}
	var buf bytes.Buffer
	buf.Grow(int(max(size, 0)) + bytes.MinRead)
	if _, err := buf.ReadFrom(fh); err != nil {
		return false, nil, err
	}
	data = buf.Bytes()
	return !bytes.Equal(data, want), data, nil
}

// sameContent reports whether fh's content is want, reading no more than
// it must.
func sameContent(fh *os.File, want []byte) (bool, error) {
	buf := make([]byte, min(len(want)+1, 64<<10)) // +1: notice a longer file
	for off := 0; ; {
		n, err := fh.Read(buf)
		if n > 0 {
			if off+n > len(want) || !bytes.Equal(buf[:n], want[off:off+n]) {
				return false, nil
			}
			off += n
		}
		if err == io.EOF {
			return off == len(want), nil
		}
		if err != nil {
			return false, err
		}
	}
}

// Reload re-reads the file, for agent-ownership mode where the agent ticks
// tasks itself. It reports whether the content changed. When the new content
// is invalid it returns changed=true and the validation error, and keeps the
// last valid content, so Plan still answers and Restore can put it back.
func (f *File) Reload() (changed bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed, data, err := f.disk()
	if err != nil || !changed {
		return false, err
	}
	if data == nil {
		return true, fmt.Errorf("%s: %w: the file was removed; put the plan back and run again", f.path, ErrChanged)
	}
	cur, err := f.format.read(f.path, data)
	if err != nil {
		return true, err
	}
	f.cur = cur
	return true, nil
}

// Restore writes back the content last read or written, if the file on disk
// differs (or is gone). Runner mode uses it to undo an agent's edits to a
// plan the agent must not touch.
func (f *File) Restore() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed, _, err := f.disk()
	if err != nil || !changed {
		return err
	}
	return f.write(f.cur)
}

// SetStatus records a task's new status in the file, changing only the bytes
// that say it, and writes the file atomically. It writes nothing when the
// file already says so. Each format's doc says how it records failure.
//
// It never overwrites changes made by someone else: if the file changed on
// disk since it was last read or written, SetStatus re-reads it and applies
// the change to the new content when that content is valid and still has the
// task (a merge, which keeps the other writer's edits); otherwise it writes
// nothing and returns an error wrapping ErrChanged. A task known by its
// position (a checklist item, a tasks.json entry without "id") must also
// still have its title, or the merge would mark whatever task moved into
// its place. An id not in the plan gives an error wrapping ErrUnknownTask.
//
// In runner-ownership mode only the runner marks tasks, so the runner calls
// MergeEdits after each iteration, before SetStatus; otherwise SetStatus
// would keep another writer's status changes as part of the merge.
func (f *File) SetStatus(id string, st Status) error {
	not := fmt.Sprintf("not marking %s %s", id, st)
	return f.edit(not, func(theirs *Plan) error {
		t, ok := theirs.Task(id)
		if !ok {
			return fmt.Errorf("%s: %w and no longer has task %q; not marking it %s", f.path, ErrChanged, id, st)
		}
		if mine, ok := f.cur.result().Task(id); ok && isPosition(id) && mine.Title != t.Title {
			return fmt.Errorf("%s: %w and task %s is now %q, not %q (the tasks moved); not marking it %s",
				f.path, ErrChanged, id, t.Title, mine.Title, st)
		}
		return nil
	}, func(cur parsed) (parsed, error) {
		return f.format.setStatus(cur, id, st)
	}, func(after *Plan) error {
		// The edit is local, but a writer that corrupts a user's plan is the
		// one bug this package must not have: check before anyone writes.
		if t, ok := after.Task(id); !ok || t.Status != st {
			return fmt.Errorf("internal error: setting %s to %s in %s did not take; nothing written", id, st, f.path)
		}
		return nil
	})
}

// Add appends a task to the plan, written the way the plan's other tasks
// are, and returns it as read back from the file. Without an id, t gets the
// next one: the next position, or the next number after the last id (US-004
// after US-003). Its status is open unless t says otherwise.
func (f *File) Add(t Task) (Task, error) {
	t.Title = strings.TrimSpace(t.Title)
	if t.Title == "" {
		return Task{}, errors.New("a task needs a title")
	}
	if t.Status == "" {
		t.Status = StatusOpen
	}
	var added Task
	err := f.edit("not adding "+strconv.Quote(t.Title), nil, func(cur parsed) (parsed, error) {
		p, data := cur.result(), cur.source()
		nt := t
		if nt.ID == "" {
			switch f.format.name() {
			case FormatPRD:
				nt.ID = newTaskID(p, false, "US-001")
			case FormatHeadingPlan:
				nt.ID = newTaskID(p, false, "1")
			default: // tasks by position
				nt.ID = newTaskID(p, true, "1")
			}
		} else if _, dup := p.Task(nt.ID); dup {
			return nil, fmt.Errorf("%s: id %q is already used; pick another or leave it out", f.path, nt.ID)
		}
		for _, dep := range nt.DependsOn {
			if _, ok := p.Task(dep); !ok {
				return nil, fmt.Errorf("%s: depends on %q: %w", f.path, dep, ErrUnknownTask)
			}
		}
		out, err := f.format.add(f.path, data, nt)
		if err != nil {
			return nil, err
		}
		next, err := f.format.read(f.path, out)
		if err != nil {
			return nil, fmt.Errorf("internal error: adding a task to %s made it invalid: %w", f.path, err)
		}
		np := next.result()
		added = np.Tasks[len(np.Tasks)-1]
		return next, nil
	}, nil)
	return added, err
}

// KeepsLog reports whether the file's format keeps a log of its own, which
// RecordIteration writes.
func (f *File) KeepsLog() bool {
	_, ok := f.format.(recorder)
	return ok
}

// RecordIteration notes an iteration in a plan file that keeps a log of its
// own: progress.md's Completed This Iteration (replaced), Recent Attempts
// (the last few) and Iteration Log (one row per iteration). Other formats
// have no log: it does nothing. Like SetStatus, it merges with an edit made
// on disk meanwhile (the agent's, in agent-ownership mode) and never
// overwrites an invalid one.
func (f *File) RecordIteration(r IterationRecord) error {
	rec, ok := f.format.(recorder)
	if !ok {
		return nil
	}
	return f.edit(fmt.Sprintf("not recording iteration %d", r.Iteration), nil, func(cur parsed) (parsed, error) {
		return rec.record(cur, r)
	}, nil)
}

// edit applies change to the file's content and writes the result
// atomically. When the file changed on disk since it was last read or
// written, the change is applied to the new content (a merge), provided it
// is valid and check, when set, accepts its plan; otherwise nothing is
// written and the error wraps ErrChanged. not says what was not done, for
// errors. change returns the parse of the new content (see format), which
// is what makes it safe to write; verify, when set, checks its plan before
// it is written.
func (f *File) edit(not string, check func(theirs *Plan) error, change func(cur parsed) (parsed, error), verify func(after *Plan) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	next, err := f.prepare(not, check, change, verify)
	if err != nil || next == nil {
		return err
	}
	return f.write(next)
}

// prepare is edit up to the write: it returns the parse of what to write,
// or nil when there is nothing to write. It is edit's in-memory part, which
// BenchmarkSetStatusEdit50 measures alone. f.mu is held.
func (f *File) prepare(not string, check func(theirs *Plan) error, change func(cur parsed) (parsed, error), verify func(after *Plan) error) (parsed, error) {
	changed, data, err := f.disk()
	if err != nil {
		return nil, err
	}
	if changed {
		if data == nil {
			return nil, fmt.Errorf("%s: %w: the file was removed; %s", f.path, ErrChanged, not)
		}
		theirs, err := f.format.read(f.path, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w and is no longer valid; %s:\n%w", f.path, ErrChanged, not, err)
		}
		if check != nil {
			if err := check(theirs.result()); err != nil {
				return nil, err
			}
		}
		f.cur = theirs // merge: build on their edit
	} else if check != nil {
		if err := check(f.cur.result()); err != nil {
			return nil, err
		}
	}
	next, err := change(f.cur)
	if err != nil {
		return nil, err
	}
	if next == f.cur || bytes.Equal(next.source(), f.cur.source()) {
		return nil, nil
	}
	if verify != nil {
		if err := verify(next.result()); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// isPosition reports an id that is a task's position (1, 2, ...) rather
// than a name written in the file.
func isPosition(id string) bool {
	n, err := strconv.Atoi(id)
	return err == nil && n > 0 && strconv.Itoa(n) == id
}

// write replaces the file atomically with next's content (a temporary
// file beside it, fsynced and renamed over it) and makes
// next the new baseline. next is a parse of that content, so nothing is
// written that does not read back. A symlinked plan stays a symlink: the
// target is replaced, if it is in the project (or is the file a trusted
// link led to at load). The file's permissions are kept (f.mode, should
// it be gone).
func (f *File) write(next parsed) error {
	if err := f.linkMoved(); err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	if err := f.root.WriteFile(f.name, next.source(), f.mode); err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	f.cur = next
	f.writes++
	return nil
}

// Writes counts the times f wrote the file: while the count stays the
// same, f has not changed the file since.
func (f *File) Writes() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}
