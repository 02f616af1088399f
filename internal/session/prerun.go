package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
	"github.com/ralph-loop/ralph/internal/words"
)

// session is a run prepared by prerun: its repository, and how the loop
// runs with it.
type session struct {
	f        *Host
	repo     vcs.Repo // nil without version control
	dir      string
	store    *state.Store
	plan     *task.File
	parallel int
	// leftover: the working tree holds the changes the last run left.
	leftover bool
	// crashed: the last run died without recording its end, or ended
	// with an accepted task it could not commit.
	crashed bool
	// keepBranch: the run stays on the branch checked out (a --worker's
	// task worktree), whatever the plan's branchName says.
	keepBranch bool
	// from is the branch checked out when the run started.
	from string
}

// prerun checks the project before the loop starts, and refuses to start
// where a run would do harm: it finds the repository (Sapling, then git),
// refuses a detached HEAD and a dirty tree (state.CheckDirty, unless
// --allow-dirty). It changes nothing: begin does, once every precondition
// has passed. crashed says the last run died mid-run (kill -9, a crash):
// the changes it left in the tree are its unfinished work, which this run
// goes on with.
func prerun(ctx context.Context, f *Host, dir string, cfg config.Config, plan *task.File, crashed, keepBranch bool) (*session, error) {
	store, err := state.Open(dir)
	if err != nil {
		return nil, err
	}
	s := &session{f: f, dir: dir, store: store, plan: plan, parallel: cfg.Parallel, crashed: crashed, keepBranch: keepBranch}
	if err := checkParallel(cfg); err != nil {
		return nil, err
	}
	repo, err := vcs.Detect(ctx, dir, nil)
	if err == nil {
		s.repo = repo
	} else if cfg.Parallel > 1 {
		return nil, usageError(fmt.Errorf("--parallel needs a git repository: each task works in a git worktree of its own (%w)", err))
	}
	if g, ok := s.repo.(*vcs.Git); ok {
		// Under the run's lock no git of ralph's runs: one that left the
		// index locked was killed.
		msg, err := g.RemoveStaleLock()
		if err != nil {
			return nil, err
		}
		if msg != "" {
			fmt.Fprintln(f.IO.ErrOut, "ralph: "+msg)
		}
	}
	if s.repo != nil {
		if err := s.checkRepo(ctx, cfg); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// begin checks out or creates the plan's branch, and archives the last
// run when the branch changed (state.Archive): the first changes a run
// makes.
func (s *session) begin(ctx context.Context) error {
	if branch := s.plan.Plan().Branch; s.repo != nil && branch != "" && !s.keepBranch {
		if err := s.switchBranch(ctx, s.from, branch); err != nil {
			return err
		}
	}
	done, err := s.store.Archive(s.plan.Plan().Branch, s.plan.Path(), time.Now())
	if err != nil {
		return err
	}
	if done != nil {
		fmt.Fprintf(s.f.IO.ErrOut, "ralph: archived the last run (%s) to %s/\n", done.Branch, words.Rel(s.dir, done.Folder))
	}
	return nil
}

// commitSetup commits ralph's own setup files that git does not know yet
// (ralph.toml, the prompt, the plan, the files ralph init wrote, a
// .gitignore ralph made) in a commit of their own, before any task's:
// the user's history shows setup apart from work. Nothing without git,
// or when nothing of them changed.
func (s *session) commitSetup(ctx context.Context, cfg config.Config) error {
	g, ok := s.repo.(*vcs.Git)
	if !ok || cfg.NoCommit || s.keepBranch {
		return nil // a --worker's task worktree: the worker's own run committed them
	}
	changes, err := g.Status(ctx)
	if err != nil {
		return err
	}
	own := ownFiles(cfg, s.plan)
	var want []string
	for _, f := range slices.Concat(own.Files, own.Setup, []string{".gitignore"}) {
		if f == "" {
			continue
		}
		if !filepath.IsAbs(f) {
			f = filepath.Join(s.dir, f)
		}
		rel, err := filepath.Rel(g.Root, f)
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		rel = filepath.ToSlash(rel)
		for _, c := range changes {
			// New files only: a change to one already committed (the
			// plan's marks, an edit of the user's) is work, not setup.
			if c.Path == rel && c.Code == "??" && !slices.Contains(want, rel) {
				want = append(want, rel)
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	hash, err := g.CommitFiles(ctx, "ralph: setup ("+strings.Join(want, ", ")+")", want)
	if err != nil {
		return fmt.Errorf("committing ralph's setup files: %w", err)
	}
	if hash != "" {
		fmt.Fprintf(s.f.IO.ErrOut, "ralph: committed its setup apart from the work: %s (%s)\n", strings.Join(want, ", "), hash[:min(7, len(hash))])
	}
	return nil
}

// treeIsStart says whether the working tree now is the one the run will
// start from: no branch to check out, or one made from here. An existing
// branch elsewhere brings its own tree, which only the loop can check.
func (s *session) treeIsStart(ctx context.Context) bool {
	branch := s.plan.Plan().Branch
	if s.repo == nil || branch == "" || s.keepBranch || branch == s.from {
		return true
	}
	g, ok := s.repo.(*vcs.Git)
	return ok && !g.HasBranch(ctx, branch)
}

// checkRepo checks the repository's state.
func (s *session) checkRepo(ctx context.Context, cfg config.Config) error {
	if err := s.checkParallelRepo(ctx); err != nil {
		return err
	}
	from, err := s.repo.Branch(ctx)
	if errors.Is(err, vcs.ErrDetached) {
		return errors.New(detachedMessage(err))
	} else if err != nil {
		return err
	}
	branch := s.plan.Plan().Branch
	if run := cmp.Or(branch, from); s.parallel > 1 && reserved(run) != "" {
		return usageError(fmt.Errorf("--parallel keeps its tasks' branches under %s: run it on another branch than %s", reserved(run), run))
	}
	if !cfg.AllowDirty {
		leftover, err := checkTree(ctx, s.store, s.repo, cfg, s.plan, s.crashed)
		if err != nil {
			return err
		}
		if leftover {
			fmt.Fprintln(s.f.IO.ErrOut, "ralph: going on with the uncommitted changes the last run left")
		}
		s.leftover = leftover
	}
	s.from = from
	return nil
}

// switchBranch checks out the plan's branch, creating it when needed.
func (s *session) switchBranch(ctx context.Context, from, branch string) error {
	created, err := s.repo.SwitchBranch(ctx, branch)
	what := "branch"
	if s.repo.Kind() != "git" {
		what = "bookmark"
	}
	if err != nil {
		return fmt.Errorf("%s: cannot check out %s %s (the plan's branchName): %w", words.Rel(s.dir, s.plan.Path()), what, branch, err)
	}
	switch {
	case created && from != "":
		fmt.Fprintf(s.f.IO.ErrOut, "ralph: created %s %s from %s\n", what, branch, from)
	case created:
		fmt.Fprintf(s.f.IO.ErrOut, "ralph: created %s %s\n", what, branch)
	case from != branch:
		fmt.Fprintf(s.f.IO.ErrOut, "ralph: switched to %s %s\n", what, branch)
	}
	// The branch may hold another version of the plan.
	_, err = s.plan.Reload()
	return err
}

// run runs the loop, one task at a time or several in worktrees, and
// keeps the plan and the working tree as the run left them.
func (s *session) run(ctx context.Context, opts loop.Options, deps loop.Deps) error {
	var err error
	if g, ok := s.repo.(*vcs.Git); ok && s.parallel > 1 {
		err = loop.RunParallel(ctx, opts, deps, s.parallelConfig(g, deps))
	} else {
		err = loop.Run(ctx, opts, deps)
	}
	// Best effort, both: without them the next run archives the plan as
	// this run started it, or asks for --allow-dirty.
	if s.plan.Plan().Branch != "" {
		_ = s.store.SavePlan(s.plan.Path())
	}
	if s.repo != nil {
		_ = s.store.SaveTree(context.WithoutCancel(ctx), s.repo)
	}
	return err
}

// repoDep is the repository as the loop's Repo; nil without one.
func (s *session) repoDep() loop.Repo {
	if s.repo == nil {
		return nil
	}
	return s.repo
}

// tree is the repository as state's dirty check sees it.
type tree struct{ vcs.Repo }

func (t tree) Status(ctx context.Context) ([]state.Change, error) {
	changes, err := t.Repo.Status(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]state.Change, len(changes))
	for i, c := range changes {
		out[i] = state.Change{Code: c.Code, Path: c.Path}
	}
	return out, nil
}
