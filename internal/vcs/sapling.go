package vcs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ralph-loop/ralph/internal/proc"
)

// Sapling is a Sapling (sl) working tree. Sapling has no staging area and
// no index ralph could write a tree from, so a snapshot is the current
// commit plus a hash of every file that differs from it, kept in memory.
//
// The commands it runs, and nothing else: sl root, sl whereami, sl status,
// sl status --rev A --rev B, sl addremove -X path:.ralph, sl commit -m MSG
// -X path:.ralph, sl bookmark, sl bookmark NAME, sl goto NAME, sl cat -r
// REV PATH.
type Sapling struct {
	// Root is the top of the working tree.
	Root string
	// Env is the environment sl runs with (nil: inherit).
	Env []string
	// Bin is the sl executable.
	Bin string

	// mu serialises Changes, and guards last: what the previous one saw.
	mu   sync.Mutex
	last *slSnapshot
}

// slSnapshot is what a snapshot saw: the commit and the content hash of
// each file that differed from it ("" for a missing or removed file), and
// the id they make.
type slSnapshot struct {
	id     string
	commit string
	files  map[string]string
}

// OpenSapling finds the Sapling working tree that contains dir, through
// `sl root`.
func OpenSapling(ctx context.Context, dir string, env []string) (*Sapling, error) {
	// Found as ralph's own programs are: never one the agent wrote.
	bin, err := proc.OutsideFrom(ctx, environ(env), dir, repoTop(dir)).LookPath("sl")
	if err != nil {
		return nil, fmt.Errorf("sl is not installed: %w", err)
	}
	out, err := command(ctx, dir, environ(env), nil, bin, "root")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	return &Sapling{Root: strings.TrimSpace(out), Env: env, Bin: bin}, nil
}

func (s *Sapling) run(ctx context.Context, args ...string) (string, error) {
	return command(ctx, s.Root, environ(s.Env), nil, s.Bin, args...)
}

// Kind implements Repo.
func (s *Sapling) Kind() string { return "sapling" }

// Dir implements Repo.
func (s *Sapling) Dir() string { return s.Root }

// whereami is the working copy's commit (all zeros before the first one).
func (s *Sapling) whereami(ctx context.Context) (string, error) {
	out, err := s.run(ctx, "whereami")
	return strings.TrimSpace(out), err
}

// Snapshot implements Repo.
func (s *Sapling) Snapshot(ctx context.Context) (string, error) {
	snap, err := s.snapshot(ctx)
	return snap.id, err
}

func (s *Sapling) snapshot(ctx context.Context) (slSnapshot, error) {
	commit, err := s.whereami(ctx)
	if err != nil {
		return slSnapshot{}, err
	}
	changes, err := s.Status(ctx)
	if err != nil {
		return slSnapshot{}, err
	}
	snap := slSnapshot{commit: commit, files: map[string]string{}}
	for _, c := range changes {
		if ralphPath(c.Path) {
			continue
		}
		snap.files[c.Path] = hashFile(filepath.Join(s.Root, filepath.FromSlash(c.Path)))
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", commit)
	for _, p := range slices.Sorted(maps.Keys(snap.files)) {
		fmt.Fprintf(h, "%s\x00%s\n", p, snap.files[p])
	}
	snap.id = hex.EncodeToString(h.Sum(nil))
	return snap, nil
}

// Changes implements Repo: the files committed in between plus the files
// whose uncommitted content differs. The first call returns nothing.
func (s *Sapling) Changes(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	a := s.last
	s.last = &b
	if a == nil || a.id == b.id {
		return nil, nil
	}
	// Between the commits: what the current commit holds differs.
	between := map[string]string{}
	if a.commit != b.commit {
		out, err := s.run(ctx, "status", "--rev", a.commit, "--rev", b.commit)
		if err != nil {
			return nil, err
		}
		for _, c := range parseSlStatus(out) {
			between[c.Path] = c.Code
		}
	}
	var paths []string
	for _, p := range slices.Sorted(maps.Keys(unionKeys(a.files, b.files, between))) {
		if ralphPath(p) || !s.changed(p, a, &b, between[p] != "") {
			continue
		}
		paths = append(paths, filepath.Join(s.Root, filepath.FromSlash(p)))
	}
	return paths, nil
}

// changed tells whether p's content differs between snapshots a and b,
// knowing whether their commits hold different versions of it. A file
// that is clean in b is what b's commit holds and is hashed from the
// working tree, so the content a snapshot had uncommitted and a commit in
// between then took (ralph's own commit, say) is no change. A file
// uncommitted in b only and different between the commits counts: what a
// had, a's commit's version, is not hashed.
func (s *Sapling) changed(p string, a, b *slSnapshot, between bool) bool {
	ha, aDirty := a.files[p]
	hb, bDirty := b.files[p]
	switch {
	case aDirty && bDirty:
		return ha != hb
	case aDirty:
		return ha != hashFile(filepath.Join(s.Root, filepath.FromSlash(p)))
	case bDirty:
		return true
	}
	return between
}

func unionKeys(ms ...map[string]string) map[string]bool {
	u := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			u[k] = true
		}
	}
	return u
}

// Dirty implements Repo: sl status lists anything but .ralph/.
func (s *Sapling) Dirty(ctx context.Context) (bool, error) {
	changes, err := s.Status(ctx)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(changes, func(c Change) bool { return !ralphPath(c.Path) }), nil
}

// Commit implements Repo: new files are added and missing ones removed
// (sl addremove), ralph's .ralph/ excepted, then everything is committed.
func (s *Sapling) Commit(ctx context.Context, message string) (string, error) {
	// Not while Changes looks: it would see the commit half made.
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.run(ctx, "addremove", "-X", "path:.ralph"); err != nil {
		return "", err
	}
	changes, err := s.Status(ctx)
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(changes, func(c Change) bool { return c.Code != "?" && !ralphPath(c.Path) }) {
		return "", nil
	}
	out, err := s.run(ctx, "commit", "-m", message, "-X", "path:.ralph")
	if err != nil {
		var ce *CmdError
		if strings.Contains(out, "nothing changed") || errors.As(err, &ce) && strings.Contains(ce.Stderr, "nothing changed") {
			return "", nil
		}
		if errors.As(err, &ce) {
			ce.Argv = []string{"sl", "commit"}
		}
		return "", err
	}
	return s.whereami(ctx)
}

// Branch implements Repo: the active bookmark, "" when none is active
// (normal in Sapling, where bookmarks are optional).
func (s *Sapling) Branch(ctx context.Context) (string, error) {
	active, _, err := s.bookmarks(ctx)
	return active, err
}

// SwitchBranch implements Repo with bookmarks: sl goto an existing one,
// sl bookmark (which creates it at the current commit and activates it)
// otherwise.
func (s *Sapling) SwitchBranch(ctx context.Context, name string) (bool, error) {
	if name == "" || strings.ContainsAny(name, " \t\n:") {
		return false, fmt.Errorf("%q is not a valid bookmark name", name)
	}
	active, all, err := s.bookmarks(ctx)
	if err != nil {
		return false, err
	}
	switch {
	case active == name:
		return false, nil
	case slices.Contains(all, name):
		_, err := s.run(ctx, "goto", name)
		return false, err
	}
	_, err = s.run(ctx, "bookmark", name)
	return err == nil, err
}

// bookmarks lists the local bookmarks (sl bookmark): one per line, name
// first, the active one preceded by a star ("* my_feature 15de72785").
func (s *Sapling) bookmarks(ctx context.Context) (active string, all []string, err error) {
	out, err := s.run(ctx, "bookmark")
	if err != nil {
		return "", nil, err
	}
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(line, "no bookmarks") {
			continue
		}
		if f[0] == "*" && len(f) > 1 {
			active = f[1]
			all = append(all, f[1])
			continue
		}
		all = append(all, f[0])
	}
	return active, all, nil
}

// Status implements Repo: sl status prints "M path", "A path", "R path",
// "! path" (missing) and "? path" (untracked) for what differs.
func (s *Sapling) Status(ctx context.Context) ([]Change, error) {
	out, err := s.run(ctx, "status")
	if err != nil {
		return nil, err
	}
	return parseSlStatus(out), nil
}

func parseSlStatus(out string) []Change {
	var changes []Change
	for line := range strings.SplitSeq(out, "\n") {
		code, path, ok := strings.Cut(strings.TrimRight(line, "\r"), " ")
		if ok && code != "" && path != "" {
			changes = append(changes, Change{Code: code, Path: path})
		}
	}
	return changes
}

// Show implements Repo with sl cat.
func (s *Sapling) Show(ctx context.Context, rev, path string) ([]byte, error) {
	if rev == "HEAD" {
		rev = "."
	}
	out, err := s.run(ctx, "cat", "-r", rev, filepath.ToSlash(path))
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// hashFile hashes a file's content; "" when it is gone.
func hashFile(path string) string {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return "unreadable: " + err.Error()
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
