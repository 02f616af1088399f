package vcs

import (
	"os"
	"path/filepath"
	"strings"
)

// CommonDir is the git directory of the repository that holds dir, the
// one its worktrees share (objects, refs, hooks, config), found by
// reading the .git entries from dir upward, without running git; "" when
// dir is in no git repository. A sandbox lets the agent write it.
func CommonDir(dir string) string {
	for d := filepath.Clean(dir); ; {
		p := filepath.Join(d, ".git")
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				return p
			}
			return linkedCommonDir(d, p)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// linkedCommonDir reads a worktree's .git file ("gitdir: PATH") and the
// commondir file of the git directory it names.
func linkedCommonDir(top, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	gitDir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	gitDir = strings.TrimSpace(gitDir)
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(top, gitDir)
	}
	c, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return filepath.Clean(gitDir)
	}
	common := strings.TrimSpace(string(c))
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitDir, common)
	}
	return filepath.Clean(common)
}
