// Package durable writes files so that they are whole at once and on disk
// soon after: a write replaces its file by rename, or by swapping names
// with a spare file (or appends in one write(2)), before it returns, so a
// process killed with SIGKILL, or a reader, sees the old content or the
// new and never a part; the fsyncs that make it survive a power loss are
// left to a Syncer, which does them in the background, several at a time,
// until someone waits for them.
//
// It owns no process-wide state: each Syncer is one queue of fsyncs.
// It must not decide what to write or when to wait; its callers (the
// state store, the plan writer) and theirs (the loop) do.
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/google/renameio/v2"
)

// ErrClosed is the error of a write to a closed Syncer.
var ErrClosed = errors.New("durable: write after Close")

// Syncer does the fsyncs of the writes made through it in the background,
// off the writer's path. Writes are atomic when they return; Wait is the
// barrier that returns once every fsync queued before it is done.
//
// Replacing by rename before the new file's data is fsynced is what
// ext4's auto_da_alloc (on by default) makes safe against a power loss:
// a rename over an existing file forces the new file's blocks out with
// the transaction that commits the rename, so after a crash the name has
// the old content or the new one, never an empty file. After a swap of
// names (Spare) the queued fsync, which starts at once, writes the data
// out, well before a journal commits the swap.
//
// A spare is the file the last write replaced, written over from its
// start by the next one: a reader that opened the file before a write and
// reads it only after the following write began may see a part (readers
// of state.json read again a file that does not parse). On file systems
// without that guarantee the window is the short time until the queued
// fsync runs (or the next Wait). The order of the writes holds across a
// crash as well: a journaling file system (ext4, xfs) commits renames in
// the order they were made, so a rename that survives implies the ones
// before it did.
//
// Pending fsyncs of one file coalesce: a newer write of a path makes the
// older one's fsync needless (the old file is unlinked, or for an append,
// one fsync covers every write before it), and a directory is fsynced
// once for all the renames in it.
//
// The zero value is ready to use, and a nil *Syncer writes synchronously:
// fsync, then rename, then fsync of the directory, before the write
// returns (for one-shot commands, where the fsync is on nobody's path and
// no one would wait). Its methods are safe for concurrent use.
type Syncer struct {
	mu   sync.Mutex
	cond *sync.Cond // signalled when a batch is done; on mu
	// files are the open files with data to fsync, by the path they were
	// written to; dirs the directories whose entries changed.
	files map[string]*os.File
	dirs  map[string]bool
	// queued counts the writes queued, synced those whose fsyncs are done:
	// Wait waits for synced to reach queued as it was when Wait began.
	queued, synced uint64
	running        bool  // a goroutine is flushing
	err            error // the first fsync error nobody was told of yet
	closed         bool

	// fsync syncs one file or directory; nil is (*os.File).Sync. Tests
	// replace it to hold a flush or make it fail.
	fsync func(f *os.File) error

	// spares are the temporary files made ahead for the paths Spare
	// names, by path (nil while a write uses it), and spareDirs the
	// directories they are made in: creating a file is most of what a
	// write costs, and a spare is created off the writer's path. A write
	// swaps the names of the spare and the file where the system can
	// (exchange), and the file it replaced becomes the next spare: no
	// file is made and none freed. On ext4 without a journal each freed
	// file makes the creation of the next ones slower for minutes (the
	// allocator steps over recently freed inodes one by one).
	spares    map[string]*spare
	spareDirs map[string]string
	// noExchange: the system refused an exchange once; writes rename.
	noExchange bool
}

// spare is a temporary file created ahead for the next write of a path.
type spare struct {
	done chan struct{} // closed once f (or err) is set
	f    *os.File
	err  error
}

// spareSuffix marks the spare files in their directory, for the clean-up
// of those a killed process left.
const spareSuffix = ".spare-"

// Spare makes the writes of path take a temporary file created ahead of
// time beside it, off the writer's path. It is for a file in a directory
// of the program's own (a spare left by a killed process is removed by
// the next Spare of the path; Close removes the current one); SpareIn
// keeps the spares of a user's file out of its directory. Unspare
// removes them too. A nil Syncer ignores it.
func (s *Syncer) Spare(path string) { s.SpareIn(path, filepath.Dir(path)) }

// SpareIn is Spare with the spares in dir, a directory of the program's
// own on the same file system as path (elsewhere, the writes go on
// without them).
func (s *Syncer) SpareIn(path, dir string) {
	if s == nil {
		return
	}
	base := filepath.Base(path)
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "."+base+spareSuffix) {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.spares == nil {
		s.spares, s.spareDirs = map[string]*spare{}, map[string]string{}
	}
	if s.spares[path] == nil {
		s.spareDirs[path] = dir
		s.spares[path] = makeSpare(dir, base)
	}
}

// makeSpare starts creating a spare for a file named base, in dir, in
// the background.
func makeSpare(dir, base string) *spare {
	sp := &spare{done: make(chan struct{})}
	go func() {
		defer close(sp.done)
		sp.f, sp.err = os.CreateTemp(dir, "."+base+spareSuffix+"*")
	}()
	return sp
}

// takeSpare returns the spare made for path, if any, for one write to
// use: the next is set up when it is done (respare). nil when path has
// none, it could not be made, or another write holds it.
func (s *Syncer) takeSpare(path string) *os.File {
	s.mu.Lock()
	sp := s.spares[path]
	if sp != nil {
		s.spares[path] = nil
	}
	s.mu.Unlock()
	if sp == nil {
		return nil
	}
	<-sp.done
	if sp.err != nil {
		s.respare(path, nil)
		return nil
	}
	return sp.f
}

// respare sets up the spare of path's next write: next, when the write
// left one, else a new one made in the background. When path no longer
// has spares (Unspare, Close), next is removed instead.
func (s *Syncer) respare(path string, next *os.File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir, ok := s.spareDirs[path]
	if !ok || s.closed || s.spares[path] != nil {
		if next != nil {
			_ = next.Close()
			_ = os.Remove(next.Name())
		}
		return
	}
	if next != nil {
		sp := &spare{done: make(chan struct{}), f: next}
		close(sp.done)
		s.spares[path] = sp
		return
	}
	s.spares[path] = makeSpare(dir, filepath.Base(path))
}

// exchanges reports whether writes may try to exchange names.
func (s *Syncer) exchanges() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.noExchange
}

// WriteFile replaces path with data atomically: a temporary file beside
// it, renamed over it before WriteFile returns. An existing file's
// permissions are kept; a new one gets perm (less the umask). The fsyncs
// (the file, then its directory) are queued. path must not be a symlink
// the caller wants to keep: resolve it first.
//
// An fsync that failed in the background since the last Wait is reported
// here, and then nothing is written.
func (s *Syncer) WriteFile(path string, data []byte, perm fs.FileMode) error {
	if s == nil {
		return writeNow(path, data, perm)
	}
	if err := s.ready(path); err != nil {
		return err
	}
	var f *os.File
	var err error
	if sf := s.takeSpare(path); sf != nil {
		f, err = s.replaceWith(sf, path, data, perm)
	} else {
		f, err = replace(path, data, perm)
	}
	if err != nil {
		return err
	}
	s.queue(path, f, filepath.Dir(path))
	return nil
}

// replaceWith is replace through a spare file made ahead (or left by the
// last write): written over from the start, given the permissions the
// file has, and swapped with path, the file it replaces becoming the next
// spare; renamed over path where names cannot be swapped. A new file
// goes through replace, as does a spare on another file system.
func (s *Syncer) replaceWith(f *os.File, path string, data []byte, perm fs.FileMode) (*os.File, error) {
	drop := func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
	fail := func(err error) (*os.File, error) {
		drop()
		s.respare(path, nil)
		return nil, err
	}
	info, err := os.Stat(path)
	if err != nil {
		// A new file: replace gives it perm less the umask; the spare,
		// untouched, waits for the next write.
		s.respare(path, f)
		return replace(path, data, perm)
	}
	if fi, err := f.Stat(); err != nil {
		return fail(err)
	} else if fi.Mode().Perm() != info.Mode().Perm() {
		if err := f.Chmod(info.Mode().Perm()); err != nil {
			return fail(err)
		}
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fail(err)
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return fail(err)
	}
	if s.exchanges() {
		// The data goes to the disk with the fsync queued right after
		// (the flusher starts at once), not before the swap as ext4
		// does for a rename over a file: the writer need not wait for
		// it, and the journal commits the swap later than that.
		err := exchange(f.Name(), path)
		if err == nil {
			// The spare's name holds what path held: the next spare.
			next, err := os.OpenFile(f.Name(), os.O_RDWR, 0)
			if err != nil {
				_ = os.Remove(f.Name())
				next = nil
			}
			s.respare(path, next)
			return f, nil
		}
		switch {
		case cannotExchange(err):
			s.mu.Lock()
			s.noExchange = true
			s.mu.Unlock()
		case !errors.Is(err, syscall.EXDEV): // EXDEV: the rename below says so, and is handled
			return fail(err)
		}
	}
	if err := os.Rename(f.Name(), path); err != nil {
		if errors.Is(err, syscall.EXDEV) {
			// The spares' directory is on another file system: the
			// writes of path go on without them.
			drop()
			s.mu.Lock()
			delete(s.spareDirs, path)
			delete(s.spares, path)
			s.mu.Unlock()
			return replace(path, data, perm)
		}
		return fail(err)
	}
	s.respare(path, nil)
	return f, nil
}

// cannotExchange reports whether err, from exchange, says the system
// cannot exchange names (there or at all).
func cannotExchange(err error) bool {
	return errors.Is(err, errors.ErrUnsupported) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.ENOTSUP)
}

// Append adds data to the end of path, creating it with perm (less the
// umask) when missing, in a single write(2) on an O_APPEND descriptor, so
// concurrent readers never see half of it unless the process dies inside
// that write. A write that fails part way is taken back (the file is
// truncated to its size before), so the next one does not follow a torn
// one. The fsync is queued, and the directory's too when the file was new.
// Errors are as for WriteFile.
func (s *Syncer) Append(path string, data []byte, perm fs.FileMode) error {
	if s != nil {
		if err := s.ready(path); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		// Part of it may be written (a disk that filled up in the middle).
		_ = f.Truncate(info.Size())
		_ = f.Close()
		return err
	}
	dir := ""
	if info.Size() == 0 {
		dir = filepath.Dir(path) // maybe created: its entry must last too
	}
	if s == nil {
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && dir != "" {
			err = syncDir(dir, (*os.File).Sync)
		}
		return err
	}
	s.queue(path, f, dir)
	return nil
}

// Wait returns once every fsync queued before it was called is done, and
// reports the first that failed since the last Wait (or the write that
// reported it instead). It is the barrier to call before the process
// exits or waits for a long time.
func (s *Syncer) Wait() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	target := s.queued
	for s.synced < target {
		s.cond.Wait()
	}
	err := s.err
	s.err = nil
	return err
}

// Close waits as Wait does and removes the spare files; every later
// write fails with ErrClosed.
func (s *Syncer) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.Unspare()
	return s.Wait()
}

// Unspare removes the spare files and makes no more: the writes after
// it create their temporary files themselves.
func (s *Syncer) Unspare() {
	if s == nil {
		return
	}
	s.mu.Lock()
	spares := s.spares
	s.spares, s.spareDirs = nil, nil // a write under way removes the spare it leaves
	s.mu.Unlock()
	for _, sp := range spares {
		if sp == nil {
			continue
		}
		<-sp.done
		if sp.f != nil {
			_ = sp.f.Close()
			_ = os.Remove(sp.f.Name())
		}
	}
}

// ready refuses a write to a closed Syncer, or after an fsync failed that
// nobody has been told of: the caller learns that what it wrote before is
// not safe, and can stop.
func (s *Syncer) ready(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("writing %s: %w", path, ErrClosed)
	}
	if err := s.err; err != nil {
		s.err = nil
		return fmt.Errorf("not writing %s: an earlier write did not reach the disk: %w", path, err)
	}
	return nil
}

func (s *Syncer) init() {
	if s.cond == nil {
		s.cond = sync.NewCond(&s.mu)
	}
}

// queue hands f (written as path) and dir ("" for none) to the flusher,
// starting it when it is idle.
func (s *Syncer) queue(path string, f *os.File, dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if s.files == nil {
		s.files, s.dirs = map[string]*os.File{}, map[string]bool{}
	}
	if old := s.files[path]; old != nil {
		// Overtaken: the old file is unlinked, or f's fsync covers it.
		_ = old.Close()
	}
	s.files[path] = f
	if dir != "" {
		s.dirs[dir] = true
	}
	s.queued++
	if !s.running {
		s.running = true
		go s.flush()
	}
}

// flush fsyncs what is queued, a batch at a time, until nothing is.
func (s *Syncer) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	fsync := s.fsync
	if fsync == nil {
		fsync = (*os.File).Sync
	}
	for s.synced < s.queued {
		files, dirs, upto := s.files, s.dirs, s.queued
		s.files, s.dirs = nil, nil
		s.mu.Unlock()
		err := syncAll(files, dirs, fsync)
		s.mu.Lock()
		if err != nil && s.err == nil {
			s.err = err
		}
		s.synced = upto
		s.cond.Broadcast()
	}
	s.running = false
	s.cond.Broadcast()
}

// syncAll fsyncs and closes files, then fsyncs dirs: a rename is made
// durable after the data it names. It returns the first error.
func syncAll(files map[string]*os.File, dirs map[string]bool, fsync func(*os.File) error) error {
	var first error
	for path, f := range files {
		err := fsync(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil && first == nil {
			first = fmt.Errorf("fsync %s: %w", path, unwrapPath(err))
		}
	}
	for dir := range dirs {
		if err := syncDir(dir, fsync); err != nil && first == nil {
			first = fmt.Errorf("fsync %s: %w", dir, unwrapPath(err))
		}
	}
	return first
}

// syncDir fsyncs a directory so that the entries created, renamed or
// removed in it last. A file system that cannot sync a directory (EINVAL)
// is not an error: there is nothing more to do there.
func syncDir(dir string, fsync func(*os.File) error) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = fsync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}

// unwrapPath drops an *fs.PathError's own path (a temporary file's name,
// for a replaced file) so the caller's names the file.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// replace writes data to a temporary file beside path and renames it over
// path; it returns the file, still open, for its fsync.
func replace(path string, data []byte, perm fs.FileMode) (*os.File, error) {
	pf, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)),
		renameio.WithPermissions(perm), renameio.WithExistingPermissions())
	if err != nil {
		return nil, err
	}
	if _, err := pf.Write(data); err != nil {
		_ = pf.Cleanup()
		return nil, err
	}
	// Renamed here rather than by CloseAtomicallyReplace, which fsyncs
	// first: that fsync is what the Syncer takes off the caller's path.
	if err := os.Rename(pf.Name(), path); err != nil {
		_ = pf.Cleanup()
		return nil, err
	}
	return pf.File, nil
}

// writeNow is WriteFile without a Syncer: fsync, rename, fsync of the
// directory, all before it returns.
func writeNow(path string, data []byte, perm fs.FileMode) error {
	pf, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)),
		renameio.WithPermissions(perm), renameio.WithExistingPermissions())
	if err != nil {
		return err
	}
	defer func() { _ = pf.Cleanup() }() // a no-op once the file is replaced
	if _, err := pf.Write(data); err != nil {
		return err
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path), (*os.File).Sync)
}
