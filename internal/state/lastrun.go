package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/ralph-loop/ralph/internal/projectfs"
)

// What a run leaves in .ralph/ for the next one: the plan's branch
// (last-branch) and the plan (last-plan/) for the archive, and the working
// tree's snapshot (last-tree) for the dirty check.

// LastBranch returns the plan's branch the last run recorded, "" when
// none did.
func (s *Store) LastBranch() (string, error) {
	b, err := s.fs().ReadFile(s.path(LastBranchFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("last branch: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// SaveLastBranch records the plan's branch of this run.
func (s *Store) SaveLastBranch(branch string) error {
	if err := writeFile(s.fs(), s.path(LastBranchFile), []byte(branch+"\n")); err != nil {
		return fmt.Errorf("last branch: %w", err)
	}
	return nil
}

// SavePlan keeps a copy of the plan file as .ralph/last-plan/<name>, for
// the archive of the next run on another branch. The copy is written
// before older ones under another name are removed: a run killed in
// between leaves one plan too many, never none.
func (s *Store) SavePlan(planPath string) error {
	data, err := projectfs.ReadNamed(filepath.Dir(s.dir), planPath)
	if err != nil {
		return fmt.Errorf("save plan: %w", err)
	}
	dir := s.path(LastPlanDir)
	if err := s.fs().MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save plan: %w", err)
	}
	name := filepath.Base(planPath)
	if err := writeFile(s.fs(), filepath.Join(dir, name), data); err != nil {
		return fmt.Errorf("save plan: %w", err)
	}
	entries, err := s.fs().ReadDir(dir)
	if err != nil {
		return fmt.Errorf("save plan: %w", err)
	}
	for _, e := range entries {
		if e.Name() != name {
			if err := s.fs().RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("save plan: %w", err)
			}
		}
	}
	return nil
}

// lastPlans returns the paths of the plans the last run left.
func (s *Store) lastPlans() []string {
	dir := s.path(LastPlanDir)
	entries, _ := s.fs().ReadDir(dir) // none: nothing to archive
	var paths []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return paths
}

// Snapshotter identifies a working tree's content; vcs.Repo is one.
type Snapshotter interface {
	// Snapshot is the same string for the same content, .ralph/ excepted.
	Snapshot(ctx context.Context) (string, error)
}

// SaveTree records the working tree as this run leaves it. Without a
// snapshot the record is removed: an old one would vouch for changes made
// since.
func (s *Store) SaveTree(ctx context.Context, t Snapshotter) error {
	path := s.path(LastTreeFile)
	snap, err := t.Snapshot(ctx)
	if err != nil {
		_ = s.fs().Remove(path)
		return fmt.Errorf("last tree: %w", err)
	}
	if err := writeFile(s.fs(), path, []byte(snap+"\n")); err != nil {
		return fmt.Errorf("last tree: %w", err)
	}
	return nil
}

// asLastRunLeftIt reports whether the working tree is exactly as the last
// run left it.
func (s *Store) asLastRunLeftIt(ctx context.Context, t Snapshotter) bool {
	want, err := s.fs().ReadFile(s.path(LastTreeFile))
	if err != nil {
		return false
	}
	got, err := t.Snapshot(ctx)
	return err == nil && got != "" && got == strings.TrimSpace(string(want))
}
