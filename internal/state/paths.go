package state

import (
	"fmt"
	"path/filepath"

	"github.com/ralph-loop/ralph/internal/projectfs"
)

// File names inside Dir.
const (
	StateFile   = "state.json"
	HistoryFile = "history.jsonl"
	LockFile    = "lock"
	RunsDir     = "runs"
	// WorktreesDir holds --parallel's per-task worktrees.
	WorktreesDir = "worktrees"
	// LastBranchFile and LastPlanDir are the plan's branch and the plan as
	// the last run left them, for the next run's archive.
	LastBranchFile = "last-branch"
	LastPlanDir    = "last-plan"
	// LastTreeFile identifies the working tree as the last run left it:
	// uncommitted changes that are still exactly that are the run's own
	// (an interrupted iteration's work), not the user's.
	LastTreeFile = "last-tree"
)

// Files ralph keeps in the project directory itself, beside Dir.
const (
	// ProgressFile is the progress log agents append to (snarktank's
	// progress.txt). Prompts name it; the archive moves it.
	ProgressFile = "progress.txt"
	// ArchiveDir holds earlier runs' plans and progress logs, one folder
	// per run: archive/YYYY-MM-DD-<feature>/.
	ArchiveDir = "archive"
)

// TranscriptFiles returns where iteration's transcript of run runID lives
// in projectDir: .ralph/runs/<runID>/iter-NNN.prompt.md for the exact
// prompt and iter-NNN.out for the raw agent output (NNN has three digits,
// more from 1000 on). With projectDir "" the paths are relative, as the
// dry run shows them. It only names the files; Store.IterationFiles
// checks the run id and creates the directory.
func TranscriptFiles(projectDir, runID string, iteration int) (promptPath, outPath string) {
	base := filepath.Join(projectDir, Dir, RunsDir, runID, fmt.Sprintf("iter-%03d", iteration))
	return base + ".prompt.md", base + ".out"
}

// RepoPath is p relative to the top of the repository root, with slashes,
// as git and Sapling name files. Both are resolved through symlinks first:
// the tools report the real path of the repository.
func RepoPath(root, p string) (string, error) {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || (!filepath.IsLocal(rel) && rel != ".") {
		return "", fmt.Errorf("%s is not inside the repository %s", p, root)
	}
	return filepath.ToSlash(rel), nil
}

// writeFile replaces path, beneath root, atomically: a reader, or a run
// killed halfway, sees the old content or the new, never a part.
func writeFile(root projectfs.Root, path string, data []byte) error {
	return root.WriteFile(path, data, 0o644)
}

// fs is the door to the store's files: the project, which holds .ralph/.
// The agent may have planted links in it (an earlier run without a
// sandbox, or a race), so every name is resolved beneath the project, and
// .ralph/ itself linked out of it is refused.
func (s *Store) fs() projectfs.Root { return projectfs.New(filepath.Dir(s.dir)) }

// exists reports whether anything is at p, in the project.
func (s *Store) exists(p string) bool {
	_, err := s.fs().Lstat(p)
	return err == nil
}
