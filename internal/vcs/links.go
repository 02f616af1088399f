package vcs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// refuseLinks checks, before a commit, that none of the files the commit
// writes in the git directories (the index, HEAD, the refs and their
// reflogs, COMMIT_EDITMSG, the object directories) is a symbolic link: git writes through them,
// and a sandboxed agent may write .git/ (for its own commits) but must not
// make ralph's commit append to a file outside the repository (a reflog
// linked to ~/.bashrc).
func (g *Git) refuseLinks() error {
	var files []string
	for _, dir := range []string{g.gitDir, g.commonDir} {
		if dir == "" {
			continue
		}
		for _, name := range []string{"index", "HEAD", "ORIG_HEAD", "COMMIT_EDITMSG", "packed-refs"} {
			files = append(files, filepath.Join(dir, name))
		}
		// The object directories git writes new objects into, one level.
		files = append(files, filepath.Join(dir, "objects"))
		if ents, err := os.ReadDir(filepath.Join(dir, "objects")); err == nil {
			for _, e := range ents {
				if e.Type()&fs.ModeSymlink != 0 {
					files = append(files, filepath.Join(dir, "objects", e.Name()))
				}
			}
		}
		// The trees themselves, and every link in them.
		for _, tree := range []string{"refs", "refs/heads", "logs"} {
			_ = filepath.WalkDir(filepath.Join(dir, filepath.FromSlash(tree)), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type()&fs.ModeSymlink != 0 {
					files = append(files, p)
				}
				return nil
			})
		}
	}
	for _, p := range files {
		info, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link: ralph does not commit through it (git would write where it points); "+
				"if you made it, replace it with the file itself", p)
		}
	}
	return nil
}
