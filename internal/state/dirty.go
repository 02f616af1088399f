package state

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The dirty-tree policy: ralph commits each task's changes, so it refuses
// to start on a working tree with changes that are not its own; they
// would go into its commits. --allow-dirty skips the check (the caller
// decides).

// maxListed bounds the changes a DirtyError lists.
const maxListed = 10

// Change is one entry of a working tree's status, as vcs.Change has it
// (state sits beside vcs, not above it, so it restates the shape).
type Change struct {
	// Code is the short status as git or Sapling prints it ("M", "??").
	Code string
	// Path is relative to the top of the working tree, with slashes.
	Path string
}

// Tree is a working tree under version control, as the dirty check sees
// it; the caller adapts its repository.
type Tree interface {
	Snapshotter
	// Dir is the top of the working tree.
	Dir() string
	// Status lists what differs from the current commit, untracked files
	// included and ignored files not.
	Status(ctx context.Context) ([]Change, error)
	// Show returns a file's content at a revision; path is relative to
	// Dir.
	Show(ctx context.Context, rev, path string) ([]byte, error)
}

// DirtyError is a working tree with changes that are not ralph's own.
type DirtyError struct {
	Changes []Change
}

func (e *DirtyError) Error() string {
	var b strings.Builder
	b.WriteString("the working tree has changes that are not ralph's own:\n")
	for i, c := range e.Changes {
		if i == maxListed {
			fmt.Fprintf(&b, "  ... and %d more\n", len(e.Changes)-maxListed)
			break
		}
		fmt.Fprintf(&b, "  %s %s\n", c.Code, c.Path)
	}
	b.WriteString("ralph commits each task's changes, and these would go into its commits. " +
		"Commit or stash them first, or run with --allow-dirty to take them along.")
	return b.String()
}

// Own names ralph's own files for CheckDirty: relative to the project
// directory, or absolute; "" is skipped.
type Own struct {
	// Files are ralph's whatever their change: the plan, ralph.toml, the
	// prompt file.
	Files []string
	// Setup are ralph's only while untracked: the files `ralph init`
	// wrote, which the first run commits with its first task.
	Setup []string
}

// CheckDirty refuses, with a *DirtyError, a working tree with changes that
// are not ralph's own. Its own are .ralph/, the progress log, the archive
// folders Archive writes, the .ralph/ line EnsureGitignore adds to
// .gitignore, and the files own names.
//
// Foreign changes are accepted when the tree is exactly as the last run
// left it (SaveTree): they are an interrupted iteration's work, and
// leftover says so.
func (s *Store) CheckDirty(ctx context.Context, t Tree, own Own) (leftover bool, err error) {
	changes, err := t.Status(ctx)
	if err != nil {
		return false, err
	}
	root := t.Dir()
	project := filepath.Dir(s.dir)
	relDir, err := RepoPath(root, project)
	if err != nil {
		return false, err
	}
	mine := repoPaths(root, relDir, append([]string{ProgressFile}, own.Files...))
	setup := repoPaths(root, relDir, own.Setup)
	stateRel := path.Join(relDir, Dir)
	archiveRel := path.Join(relDir, ArchiveDir)
	gitignore := path.Join(relDir, ".gitignore")
	var foreign []Change
	for _, c := range changes {
		p := strings.TrimSuffix(c.Path, "/")
		switch {
		case mine[p], p == stateRel, strings.HasPrefix(p, stateRel+"/"):
		case untracked(c.Code) && setup[p]:
		case untracked(c.Code) && archived(archiveRel, p):
		case p == gitignore && onlyRalphIgnored(ctx, t, p):
		default:
			foreign = append(foreign, c)
		}
	}
	if len(foreign) == 0 {
		return false, nil
	}
	if s.asLastRunLeftIt(ctx, t) {
		return true, nil
	}
	return false, &DirtyError{Changes: foreign}
}

// repoPaths are names, relative to the project directory relDir or
// absolute, as paths from the top of the working tree root.
func repoPaths(root, relDir string, names []string) map[string]bool {
	paths := map[string]bool{}
	for _, name := range names {
		switch {
		case name == "":
		case filepath.IsAbs(name):
			if rel, err := RepoPath(root, name); err == nil {
				paths[rel] = true
			}
		default:
			paths[path.Join(relDir, filepath.ToSlash(name))] = true
		}
	}
	return paths
}

// untracked reports whether a status code is git's or Sapling's for a file
// never committed.
func untracked(code string) bool { return code == "??" || code == "?" }

// onlyRalphIgnored reports whether a .gitignore differs from the committed
// one by nothing but ralph's .ralph/ entry.
func onlyRalphIgnored(ctx context.Context, t Tree, rel string) bool {
	cur, err := os.ReadFile(filepath.Join(t.Dir(), filepath.FromSlash(rel)))
	if err != nil {
		return false
	}
	old, _ := t.Show(ctx, "HEAD", rel) // none yet: a new file
	return slices.Equal(ignoreLines(old), ignoreLines(cur))
}

// ignoreLines are a .gitignore's patterns but ralph's own entry.
func ignoreLines(b []byte) []string {
	var lines []string
	for l := range strings.SplitSeq(string(b), "\n") {
		switch l = strings.TrimSpace(l); l {
		case "", ".ralph", ".ralph/", "/.ralph", "/.ralph/":
		default:
			lines = append(lines, l)
		}
	}
	return lines
}
