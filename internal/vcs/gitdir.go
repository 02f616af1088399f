package vcs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	b, err := readGitFile(file)
	if err != nil {
		return ""
	}
	gitDir, ok := gitFileDir(top, b)
	if !ok {
		return ""
	}
	if common, ok := commonDirIn(gitDir); ok {
		return common
	}
	return gitDir
}

// gitFileDir reads what a .git file holds ("gitdir: PATH", as git writes
// it for a submodule or a linked worktree) in the working tree top: the
// git directory it names, absolute; false when it names none.
func gitFileDir(top string, content []byte) (string, bool) {
	line, _, _ := strings.Cut(string(content), "\n")
	p, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", false
	}
	return filepath.Clean(absIn(top, strings.TrimSpace(p))), true
}

// commonDirIn is the directory the commondir file of the git directory
// gitDir names, absolute, which git takes the configuration, the hooks
// and the refs from; false when there is no such file.
func commonDirIn(gitDir string) (string, bool) {
	b, err := readGitFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return "", false
	}
	return filepath.Clean(absIn(gitDir, strings.TrimSpace(string(b)))), true
}

// maxGitFile bounds what readGitFile reads: git's small files (a .git
// file, commondir) hold one path.
const maxGitFile = 64 << 10

// readGitFile reads one of git's small files that the agent can write (a
// .git file in the working tree, a commondir file), as ralph, outside the
// sandbox: without waiting on a fifo or a device put in its place, which
// would hold ralph up for good; anything but a regular file is an error.
func readGitFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	return io.ReadAll(io.LimitReader(f, maxGitFile))
}
