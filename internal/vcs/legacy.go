package vcs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Versions of ralph before 0.1 made their looks and commits in process
// and kept files of their own in the git directory: an index
// (ralph-index), and spare files that took git's locks by a second name
// (ralph-index.spare, ralph-ref.spare, and their .next). None is used
// now; removeLegacy removes them, and a lock of git's that is still a
// second name of one of those spares: only a ralph killed while it held
// it can have left such a lock, and no git would ever take it.

// removeLegacy removes what earlier versions left in the worktree's git
// directory and the shared one, and ralph's index where 0.1 kept it
// (.ralph/git-index, now in LookDir).
func (g *Git) removeLegacy() {
	state := filepath.Join(g.project, ralphDir)
	_ = os.Remove(filepath.Join(state, "git-index"))
	_ = os.Remove(filepath.Join(state, "git-index.lock"))
	for _, dir := range []string{g.gitDir, g.commonDir} {
		if dir == "" {
			continue
		}
		if spare, err := os.Lstat(filepath.Join(dir, "ralph-index.spare")); err == nil {
			removeIfSame(g.realIndex+".lock", spare)
		}
		if spare, err := os.Lstat(filepath.Join(dir, "ralph-ref.spare")); err == nil {
			removeLocksLike(filepath.Join(g.commonDir, "refs", "heads"), spare)
		}
		for _, name := range []string{"ralph-index", "ralph-index.lock", "ralph-index.spare",
			"ralph-index.spare.next", "ralph-ref.spare", "ralph-ref.spare.next"} {
			_ = os.Remove(filepath.Join(dir, name))
		}
		if tmps, err := filepath.Glob(filepath.Join(dir, "ralph-index.tmp-*")); err == nil {
			for _, p := range tmps {
				_ = os.Remove(p)
			}
		}
	}
}

// removeIfSame removes path when it is another name of the file spare
// describes.
func removeIfSame(path string, spare fs.FileInfo) {
	if info, err := os.Lstat(path); err == nil && os.SameFile(info, spare) {
		_ = os.Remove(path)
	}
}

// removeLocksLike removes the branch locks under dir that are other names
// of the file spare describes.
func removeLocksLike(dir string, spare fs.FileInfo) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".lock") {
			removeIfSame(p, spare)
		}
		return nil
	})
}
