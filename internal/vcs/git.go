// Package vcs drives the project's version control through the real git
// and sl (Sapling) binaries: snapshots of the working tree to tell whether
// an iteration changed anything, a commit per accepted task, the run's
// branch, and git worktrees for tasks that run in parallel.
//
// It never re-implements git or Sapling and never commits ralph's own
// .ralph/ files. It decides nothing about runs: the loop and the command
// line say what to do.
package vcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
)

// Git is a git working tree.
type Git struct {
	// Root is the top of the working tree.
	Root string
	// Env is the environment git runs with (nil: inherit).
	Env []string
}

// Open finds the git working tree that contains dir.
func Open(ctx context.Context, dir string, env []string) (*Git, error) {
	g := &Git{Root: dir, Env: env}
	out, err := g.run(ctx, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		if _, lookErr := proc.LookPath("git", "", environ(env)); lookErr != nil {
			return nil, fmt.Errorf("git is not installed: %w", lookErr)
		}
		return nil, fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	g.Root = strings.TrimSpace(out)
	return g, nil
}

// Snapshot returns the id of a tree object holding the working tree as it
// is now (tracked and untracked, ignored files excepted). It is written
// through a temporary index so the user's staging area is left alone.
func (g *Git) Snapshot(ctx context.Context) (string, error) {
	indexPath, err := g.run(ctx, nil, "rev-parse", "--git-path", "index")
	if err != nil {
		return "", err
	}
	indexPath = strings.TrimSpace(indexPath)
	if !filepath.IsAbs(indexPath) {
		indexPath = filepath.Join(g.Root, indexPath)
	}
	tmp, err := os.CreateTemp("", "ralph-index-*")
	if err != nil {
		return "", err
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath)
	// Starting from a copy of the real index lets git reuse its stat cache:
	// only files that changed are read again.
	if src, err := os.Open(indexPath); err == nil {
		_, err = io.Copy(tmp, src)
		src.Close()
		if err != nil {
			tmp.Close()
			return "", err
		}
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	env := []string{"GIT_INDEX_FILE=" + tmpPath}
	if err := g.addAll(ctx, env); err != nil {
		return "", err
	}
	out, err := g.run(ctx, env, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Changed counts the files that differ between two snapshots.
func (g *Git) Changed(ctx context.Context, from, to string) (int, error) {
	if from == to {
		return 0, nil
	}
	out, err := g.run(ctx, nil, "diff-tree", "-r", "--name-only", "--no-renames", from, to)
	if err != nil {
		return 0, err
	}
	return len(strings.Fields(out)), nil
}

// Commit stages every change except .ralph/ and commits it. It returns ""
// when there is nothing to commit.
func (g *Git) Commit(ctx context.Context, message string) (string, error) {
	if err := g.addAll(ctx, nil); err != nil {
		return "", err
	}
	if _, err := g.run(ctx, nil, "diff", "--cached", "--quiet"); err == nil {
		return "", nil
	}
	if _, err := g.run(ctx, nil, "commit", "-q", "-m", message); err != nil {
		// The message is in the history already; what the hook said is
		// what the user needs.
		var ce *CmdError
		if errors.As(err, &ce) {
			ce.Argv = []string{"git", "commit"}
		}
		return "", err
	}
	out, err := g.run(ctx, nil, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// addAll stages every change but ralph's own .ralph/, whatever the
// project's .gitignore says. An exclude pathspec cannot do it: git refuses
// a pathspec that names an ignored path, so .ralph/ is unstaged instead.
func (g *Git) addAll(ctx context.Context, env []string) error {
	if _, err := g.run(ctx, env, "add", "-A", "--", "."); err != nil {
		return err
	}
	_, err := g.run(ctx, env, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", ":(top).ralph")
	return err
}

// run runs one git command in the working tree; a failure is a *CmdError
// carrying git's stderr.
func (g *Git) run(ctx context.Context, env []string, args ...string) (string, error) {
	return command(ctx, g.Root, environ(g.Env), env, "git", args...)
}

// Kind implements Repo.
func (g *Git) Kind() string { return "git" }

// Dir implements Repo.
func (g *Git) Dir() string { return g.Root }

// Branch returns the checked-out branch, or an error wrapping ErrDetached
// that names the commit HEAD is at.
func (g *Git) Branch(ctx context.Context) (string, error) {
	out, err := g.run(ctx, nil, "symbolic-ref", "-q", "--short", "HEAD")
	if err == nil {
		return strings.TrimSpace(out), nil
	}
	if exitCode(err) != 1 {
		return "", err
	}
	at, _ := g.run(ctx, nil, "rev-parse", "--short", "HEAD")
	return "", fmt.Errorf("%w at %s", ErrDetached, strings.TrimSpace(at))
}

// SwitchBranch checks out branch name, creating it from HEAD when it does
// not exist. Uncommitted changes go along; git refuses (and says which
// files) when they would be overwritten.
func (g *Git) SwitchBranch(ctx context.Context, name string) (bool, error) {
	if _, err := g.run(ctx, nil, "check-ref-format", "--branch", name); err != nil {
		return false, fmt.Errorf("%q is not a valid branch name", name)
	}
	if cur, err := g.Branch(ctx); err == nil && cur == name {
		return false, nil
	}
	if g.hasBranch(ctx, name) {
		_, err := g.run(ctx, nil, "checkout", "-q", name)
		return false, err
	}
	_, err := g.run(ctx, nil, "checkout", "-q", "-b", name)
	return err == nil, err
}

func (g *Git) hasBranch(ctx context.Context, name string) bool {
	_, err := g.run(ctx, nil, "rev-parse", "--verify", "-q", "refs/heads/"+name)
	return err == nil
}

// Status lists changed and untracked files (each untracked file, not just
// its directory), as `git status --porcelain` names them.
func (g *Git) Status(ctx context.Context) ([]Change, error) {
	out, err := g.run(ctx, nil, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var changes []Change
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		code := strings.TrimSpace(f[:2])
		changes = append(changes, Change{Code: code, Path: f[3:]})
		if f[0] == 'R' || f[0] == 'C' {
			i++ // the rename's source follows
		}
	}
	return changes, nil
}

// Show returns path's content at rev.
func (g *Git) Show(ctx context.Context, rev, path string) ([]byte, error) {
	if rev == "." {
		rev = "HEAD"
	}
	out, err := g.run(ctx, nil, "show", rev+":"+filepath.ToSlash(path))
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// Head returns the commit HEAD is at.
func (g *Git) Head(ctx context.Context) (string, error) {
	out, err := g.run(ctx, nil, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return "", fmt.Errorf("the repository has no commit yet: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// Init creates a git repository in dir (on branch main) and returns it.
func Init(ctx context.Context, dir string, env []string) (*Git, error) {
	if _, err := proc.LookPath("git", "", environ(env)); err != nil {
		return nil, fmt.Errorf("git is not installed: %w", err)
	}
	g := &Git{Root: dir, Env: env}
	if _, err := g.run(ctx, nil, "-c", "init.defaultBranch=main", "init", "-q"); err != nil {
		return nil, err
	}
	return g, nil
}
