// Package vcs drives the project's version control through the real git
// binary: snapshots of the working tree to tell whether an iteration
// changed anything, and a commit per accepted task.
//
// It never re-implements git and never touches ralph's own .ralph/ files.
package vcs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNotRepo is returned by Open outside a git repository.
var ErrNotRepo = errors.New("not a git repository")

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
		if _, lookErr := exec.LookPath("git"); lookErr != nil {
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

// run runs one git command in the working tree; a failure carries git's
// stderr, which says what went wrong better than an exit status.
func (g *Git) run(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = g.Root
	cmd.Env = append(g.environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return stdout.String(), fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return stdout.String(), nil
}

func (g *Git) environ() []string {
	if g.Env != nil {
		return g.Env
	}
	return os.Environ()
}
