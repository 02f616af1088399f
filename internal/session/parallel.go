package session

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// checkParallel refuses the settings --parallel cannot run with.
func checkParallel(cfg config.Config) error {
	if cfg.Parallel <= 1 {
		return nil
	}
	switch {
	case task.Ownership(cfg.Ownership) == task.OwnerAgent:
		return usageError(errors.New("--parallel needs --ownership runner: agents that pick their own tasks would collide"))
	case cfg.NoCommit:
		return usageError(errors.New("--parallel merges each task's commit into the run branch: drop --no-commit"))
	}
	return nil
}

// checkParallelRepo refuses a repository --parallel cannot work in: it
// needs git worktrees and a first commit to branch each task from.
func (s *session) checkParallelRepo(ctx context.Context) error {
	if s.parallel <= 1 {
		return nil
	}
	g, ok := s.repo.(*vcs.Git)
	if !ok {
		return usageError(fmt.Errorf("--parallel needs git worktrees; this is a %s checkout: run with --parallel 1", s.repo.Kind()))
	}
	if _, err := g.Head(ctx); err != nil {
		return fmt.Errorf("--parallel branches each task from the run branch's head: %w; make a first commit", err)
	}
	return nil
}

// reserved returns the prefix of --parallel's own branches that a branch
// name would clash with, "" when none.
func reserved(branch string) string {
	for _, prefix := range []string{loop.TaskBranchPrefix, loop.ConflictBranchPrefix} {
		if branch+"/" == prefix || strings.HasPrefix(branch, prefix) {
			return prefix
		}
	}
	return ""
}

// parallelConfig wires --parallel: worktrees under .ralph/worktrees, the
// gates run in each.
func (s *session) parallelConfig(g *vcs.Git, deps loop.Deps) loop.Parallel {
	union := []string{state.ProgressFile}
	if rel, err := state.RepoPath(g.Root, s.dir); err == nil {
		union = []string{path.Join(rel, state.ProgressFile)}
	}
	par := loop.Parallel{
		Workers:   s.parallel,
		Worktrees: worktrees{g: g, union: union},
		Root:      g.Root,
		Dir:       filepath.Join(s.store.Dir(), state.WorktreesDir),
	}
	if gt, ok := deps.Gate.(gates); ok {
		par.GateAt = func(dir string) loop.Gate {
			r := *gt.r
			r.Dir = dir
			return gates{r: &r}
		}
	}
	return par
}

// worktrees adapts git to the loop's Worktrees.
type worktrees struct {
	g *vcs.Git
	// union are the files merged line by line (the progress log).
	union []string
}

func (w worktrees) Add(ctx context.Context, dir, branch string) (loop.Repo, error) {
	wt, err := w.g.AddWorktree(ctx, dir, branch)
	if err != nil {
		return nil, err
	}
	return wt, nil
}

func (w worktrees) Merge(ctx context.Context, branch string) ([]string, error) {
	return w.g.SquashMerge(ctx, branch, w.union)
}

func (w worktrees) Remove(ctx context.Context, dir string) error { return w.g.RemoveWorktree(ctx, dir) }

func (w worktrees) Branches(ctx context.Context, prefix string) ([]string, error) {
	return w.g.Branches(ctx, prefix)
}

func (w worktrees) DeleteBranch(ctx context.Context, name string) error {
	return w.g.DeleteBranch(ctx, name)
}

func (w worktrees) RenameBranch(ctx context.Context, from, to string) error {
	return w.g.RenameBranch(ctx, from, to)
}
