package state

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Archived says where Archive put the last run.
type Archived struct {
	// Branch is the last run's plan branch.
	Branch string
	// Folder is archive/YYYY-MM-DD-<feature>, absolute.
	Folder string
}

// Archive does what snarktank's ralph.sh does when the plan's branch is
// not the last run's: the last run's plan (as that run left it, see
// SavePlan) and the progress log go to archive/YYYY-MM-DD-<feature>/ in
// the project (feature: the old branch without its ralph/ prefix), and the
// progress log starts fresh. The plan's branch becomes the last branch and
// the plan at planPath the last plan, so that a run that is killed keeps
// at least the plan it started with.
//
// A plan without a branch changes nothing. Archived is nil when nothing
// was archived.
func (s *Store) Archive(branch, planPath string, now time.Time) (*Archived, error) {
	if branch == "" {
		return nil, nil
	}
	last, err := s.LastBranch()
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	var done *Archived
	if last != "" && last != branch {
		if done, err = s.archiveRun(last, now); err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
	}
	if err := s.SaveLastBranch(branch); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if err := s.SavePlan(planPath); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return done, nil
}

// archiveRun copies the last run's plan and progress log into a new
// archive folder, and starts the progress log afresh.
func (s *Store) archiveRun(last string, now time.Time) (*Archived, error) {
	project := filepath.Dir(s.dir)
	files := s.lastPlans()
	progress := filepath.Join(project, ProgressFile)
	if _, err := s.fs().Stat(progress); err == nil {
		files = append(files, progress)
	}
	var done *Archived
	if len(files) > 0 {
		feature := strings.ReplaceAll(strings.TrimPrefix(last, "ralph/"), "/", "-")
		base := filepath.Join(project, ArchiveDir, now.Format(time.DateOnly)+"-"+feature)
		folder := base
		for n := 2; s.exists(folder); n++ {
			folder = fmt.Sprintf("%s-%d", base, n)
		}
		if err := s.fs().MkdirAll(folder, 0o700); err != nil {
			return nil, err
		}
		for _, src := range files {
			if err := s.copyFile(src, filepath.Join(folder, filepath.Base(src))); err != nil {
				return nil, err
			}
		}
		done = &Archived{Branch: last, Folder: folder}
	}
	fresh := fmt.Sprintf("# Ralph Progress Log\nStarted: %s\n---\n", now.Format(time.UnixDate))
	return done, writeFile(s.fs(), progress, []byte(fresh))
}

// archived reports whether the repository path p is in one of the archive
// folders Archive writes, archive/YYYY-MM-DD-<feature>/..., where
// archiveRel is the archive directory's repository path.
func archived(archiveRel, p string) bool {
	rest, ok := strings.CutPrefix(p, archiveRel+"/")
	if !ok {
		return false
	}
	folder, _, _ := strings.Cut(rest, "/")
	if len(folder) < len("2006-01-02-x") {
		return false
	}
	_, err := time.Parse(time.DateOnly, folder[:10])
	return err == nil && folder[10] == '-'
}

// copyFile copies src to dst, both in the project.
func (s *Store) copyFile(src, dst string) error {
	data, err := s.fs().ReadFile(src)
	if err != nil {
		return err
	}
	return writeFile(s.fs(), dst, data)
}
