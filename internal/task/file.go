package task

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/renameio/v2"
)

// File is a plan file on disk together with the bytes ralph last read or
// wrote, which are the baseline for noticing that someone else (usually the
// agent) changed it. Its methods are safe for concurrent use.
//
// Plan snapshots are never modified: SetStatus and Reload replace the plan,
// so a *Plan obtained earlier stays a consistent view.
type File struct {
	mu     sync.Mutex
	path   string
	format format
	mode   fs.FileMode // kept on every write; used if the file must be recreated
	data   []byte      // what we last read or wrote
	plan   *Plan       // parsed data
}

// Load reads and validates a plan file. Its format is detected from the
// content and name; only prd.json is supported so far (other formats give an
// error wrapping ErrUnsupported). Validation problems are *Error values,
// joined when there are several.
func Load(path string) (*File, error) {
	fh, err := os.Open(path)
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
	fm, err := detect(path, data)
	if err != nil {
		return nil, err
	}
	plan, err := fm.parse(path, data)
	if err != nil {
		return nil, err
	}
	return &File{path: path, format: fm, mode: info.Mode().Perm(), data: data, plan: plan}, nil
}

// Path returns the path the file was loaded from.
func (f *File) Path() string { return f.path }

// Plan returns the plan as last read or written. Treat it as read-only.
func (f *File) Plan() *Plan {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.plan
}

// Bytes returns a copy of the content last read or written.
func (f *File) Bytes() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bytes.Clone(f.data)
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

// disk compares the file on disk with f.data. It returns the disk content,
// or nil when the file is gone.
func (f *File) disk() (changed bool, data []byte, err error) {
	data, err = os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	return !bytes.Equal(data, f.data), data, nil
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
		return true, fmt.Errorf("%s: %w: the file was removed", f.path, ErrChanged)
	}
	plan, err := f.format.parse(f.path, data)
	if err != nil {
		return true, err
	}
	f.data, f.plan = data, plan
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
	return f.write(f.data)
}

// SetStatus records a task's new status in the file, changing only the bytes
// that say it, and writes the file atomically. It writes nothing when the
// file already says so, or when the format has no place for the status
// (prd.json has no failed state: the runner keeps failed tasks in its own
// state).
//
// It never overwrites changes made by someone else: if the file changed on
// disk since it was last read or written, SetStatus re-reads it and applies
// the change to the new content when that content is valid and still has the
// task (a merge, which keeps the other writer's edits); otherwise it writes
// nothing and returns an error wrapping ErrChanged. An id not in the plan
// gives an error wrapping ErrUnknownTask.
//
// In runner-ownership mode the agent must not edit the plan, so the runner
// checks Modified and calls Restore after each iteration, before SetStatus;
// otherwise SetStatus would keep the agent's edit as a merge.
func (f *File) SetStatus(id string, st Status) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed, data, err := f.disk()
	if err != nil {
		return err
	}
	if changed {
		if data == nil {
			return fmt.Errorf("%s: %w: the file was removed; not marking %s %s", f.path, ErrChanged, id, st)
		}
		plan, err := f.format.parse(f.path, data)
		if err != nil {
			return fmt.Errorf("%s: %w and is no longer valid; not marking %s %s:\n%w", f.path, ErrChanged, id, st, err)
		}
		if _, ok := plan.Task(id); !ok {
			return fmt.Errorf("%s: %w and no longer has task %q; not marking it %s", f.path, ErrChanged, id, st)
		}
		f.data, f.plan = data, plan // merge: build on their edit
	}
	out, err := f.format.setStatus(f.path, f.data, id, st)
	if err != nil {
		return err
	}
	if bytes.Equal(out, f.data) {
		return nil
	}
	return f.write(out)
}

// write replaces the file atomically with data (temp file in the same
// directory, fsync, rename, fsync of the directory) and makes data the new
// baseline. A symlinked plan stays a symlink: the target is replaced.
func (f *File) write(data []byte) error {
	plan, err := f.format.parse(f.path, data)
	if err != nil {
		return err // never write what we could not read back
	}
	target := f.path
	if resolved, err := filepath.EvalSymlinks(f.path); err == nil {
		target = resolved
	}
	dir := filepath.Dir(target)
	pf, err := renameio.NewPendingFile(target,
		renameio.WithTempDir(dir),
		renameio.WithStaticPermissions(f.mode), // if the file is gone
		renameio.WithExistingPermissions())
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	defer func() { _ = pf.Cleanup() }() // a no-op once the file is replaced
	if _, err := pf.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	// Make the rename itself durable. Some filesystems refuse to sync a
	// directory; the file content is already synced, so that is not fatal.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	f.data, f.plan = data, plan
	return nil
}
