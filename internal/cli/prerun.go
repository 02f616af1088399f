package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// Files of a run that prerun knows about.
const (
	// progressFile is the progress log agents append to (snarktank's
	// progress.txt), in the project directory.
	progressFile = "progress.txt"
	// archiveDir holds earlier runs' plans and progress logs, one folder
	// per run: archive/YYYY-MM-DD-<feature>/.
	archiveDir = "archive"
	// lastBranchFile and lastPlanDir, under .ralph/, are the plan's branch
	// and the plan as the last run left them, for the next run's archive.
	lastBranchFile = "last-branch"
	lastPlanDir    = "last-plan"
	// lastTreeFile, under .ralph/, identifies the working tree as the
	// last run left it: uncommitted changes that are still exactly that
	// are the run's own (an interrupted iteration's work).
	lastTreeFile = "last-tree"
	// maxListed bounds the changes a dirty-tree refusal lists.
	maxListed = 10
)

// session is a run prepared by prerun: its repository, and how the loop
// runs with it.
type session struct {
	f        *Factory
	repo     vcs.Repo // nil without version control
	dir      string
	stateDir string
	plan     *task.File
	parallel int
}

// prerun gets the project ready before the loop starts, and refuses to
// start where a run would do harm: it finds the repository (Sapling, then
// git), refuses a detached HEAD and a tree with changes that are not
// ralph's own (unless --allow-dirty), checks out or creates the plan's
// branch, and archives the last run when the branch changed.
func prerun(ctx context.Context, f *Factory, dir string, cfg config.Config, plan *task.File) (*session, error) {
	s := &session{f: f, dir: dir, stateDir: filepath.Join(dir, state.Dir), plan: plan, parallel: cfg.Parallel}
	if cfg.Parallel > 1 {
		switch {
		case cfg.Ownership == loop.OwnerAgent:
			return nil, usageError(errors.New("--parallel needs --ownership runner: agents that pick their own tasks would collide"))
		case cfg.NoCommit:
			return nil, usageError(errors.New("--parallel merges each task's commit into the run branch: drop --no-commit"))
		}
	}
	repo, err := vcs.Detect(ctx, dir, nil)
	if err == nil {
		s.repo = repo
	} else if cfg.Parallel > 1 {
		return nil, usageError(fmt.Errorf("--parallel needs a git repository: each task works in a git worktree of its own (%w)", err))
	}
	if s.repo != nil {
		if err := s.prepareRepo(ctx, cfg); err != nil {
			return nil, err
		}
	}
	if err := s.archive(time.Now()); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return s, nil
}

// prepareRepo checks the repository's state and checks out the plan's
// branch.
func (s *session) prepareRepo(ctx context.Context, cfg config.Config) error {
	git := s.repo.Kind() == "git"
	if s.parallel > 1 {
		g, ok := s.repo.(*vcs.Git)
		if !ok {
			return usageError(fmt.Errorf("--parallel needs git worktrees; this is a %s checkout: run with --parallel 1", s.repo.Kind()))
		}
		if _, err := g.Head(ctx); err != nil {
			return fmt.Errorf("--parallel branches each task from the run branch's head: %w; make a first commit", err)
		}
	}
	from, err := s.repo.Branch(ctx)
	if errors.Is(err, vcs.ErrDetached) {
		return fmt.Errorf("%v: ralph commits each task to a branch, and commits on a detached HEAD are easily lost "+
			"(a rebase or bisect may be in progress); finish it, or check out a branch: git switch BRANCH, or git switch -c NEW-BRANCH", err)
	} else if err != nil {
		return err
	}
	branch := s.plan.Plan().Branch
	if run := cmp.Or(branch, from); s.parallel > 1 && reserved(run) != "" {
		return usageError(fmt.Errorf("--parallel keeps its tasks' branches under %s: run it on another branch than %s", reserved(run), run))
	}
	if !cfg.AllowDirty {
		if err := s.checkClean(ctx, cfg); err != nil {
			return err
		}
	}
	if branch != "" {
		created, err := s.repo.SwitchBranch(ctx, branch)
		what := "branch"
		if !git {
			what = "bookmark"
		}
		if err != nil {
			return fmt.Errorf("%s: cannot check out %s %s (the plan's branchName): %w", relOr(s.dir, s.plan.Path()), what, branch, err)
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
		if _, err := s.plan.Reload(); err != nil {
			return err
		}
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

// checkClean refuses a working tree with changes that are not ralph's
// own: they would end up in its commits. Its own are .ralph/, the plan,
// the progress log, ralph.toml and the prompt file, the archive folders it
// writes, and the .ralph/ line it adds to .gitignore.
func (s *session) checkClean(ctx context.Context, cfg config.Config) error {
	changes, err := s.repo.Status(ctx)
	if err != nil {
		return err
	}
	root := s.repo.Dir()
	relDir, err := relIn(root, s.dir)
	if err != nil {
		return err
	}
	own := map[string]bool{}
	for _, name := range []string{progressFile, "ralph.toml", cfg.Prompt} {
		if name != "" && !filepath.IsAbs(name) {
			own[path.Join(relDir, filepath.ToSlash(name))] = true
		}
	}
	for _, p := range []string{s.plan.Path(), cfg.Prompt} {
		if filepath.IsAbs(p) {
			if rel, err := relIn(root, p); err == nil {
				own[rel] = true
			}
		}
	}
	stateRel := path.Join(relDir, state.Dir)
	archiveRel := path.Join(relDir, archiveDir)
	gitignore := path.Join(relDir, ".gitignore")
	var foreign []vcs.Change
	for _, c := range changes {
		p := strings.TrimSuffix(c.Path, "/")
		switch {
		case own[p], p == stateRel, strings.HasPrefix(p, stateRel+"/"):
		case (c.Code == "??" || c.Code == "?") && archived(archiveRel, p):
		case p == gitignore && s.onlyRalphIgnored(ctx, p):
		default:
			foreign = append(foreign, c)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	if s.asLastRunLeftIt(ctx) {
		fmt.Fprintln(s.f.IO.ErrOut, "ralph: going on with the uncommitted changes the last run left")
		return nil
	}
	var b strings.Builder
	b.WriteString("the working tree has changes that are not ralph's own:\n")
	for i, c := range foreign {
		if i == maxListed {
			fmt.Fprintf(&b, "  ... and %d more\n", len(foreign)-maxListed)
			break
		}
		fmt.Fprintf(&b, "  %s %s\n", c.Code, c.Path)
	}
	b.WriteString("ralph commits each task's changes, and these would go into its commits. " +
		"Commit or stash them first, or run with --allow-dirty to take them along.")
	return errors.New(b.String())
}

// asLastRunLeftIt reports whether the working tree is exactly as the last
// run left it.
func (s *session) asLastRunLeftIt(ctx context.Context) bool {
	want, err := os.ReadFile(filepath.Join(s.stateDir, lastTreeFile))
	if err != nil {
		return false
	}
	got, err := s.repo.Snapshot(ctx)
	return err == nil && got != "" && got == strings.TrimSpace(string(want))
}

// saveTree records the working tree as this run leaves it.
func (s *session) saveTree(ctx context.Context) error {
	path := filepath.Join(s.stateDir, lastTreeFile)
	snap, err := s.repo.Snapshot(ctx)
	if err != nil {
		_ = os.Remove(path)
		return err
	}
	return os.WriteFile(path, []byte(snap+"\n"), 0o644)
}

// archived reports whether p is in one of the archive folders ralph
// writes: archive/YYYY-MM-DD-<feature>/...
func archived(archiveRel, p string) bool {
	rest, ok := strings.CutPrefix(p, archiveRel+"/")
	if !ok {
		return false
	}
	folder, _, _ := strings.Cut(rest, "/")
	if len(folder) < len("2006-01-02-x") {
		return false
	}
	_, err := time.Parse("2006-01-02", folder[:10])
	return err == nil && folder[10] == '-'
}

// onlyRalphIgnored reports whether a .gitignore differs from the committed
// one by nothing but ralph's .ralph/ entry (state.EnsureGitignore adds it).
func (s *session) onlyRalphIgnored(ctx context.Context, rel string) bool {
	cur, err := os.ReadFile(filepath.Join(s.repo.Dir(), filepath.FromSlash(rel)))
	if err != nil {
		return false
	}
	old, _ := s.repo.Show(ctx, "HEAD", rel) // none yet: a new file
	return slices.Equal(ignoreLines(old), ignoreLines(cur))
}

func ignoreLines(b []byte) []string {
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		switch l = strings.TrimSpace(l); l {
		case "", ".ralph", ".ralph/", "/.ralph", "/.ralph/":
		default:
			lines = append(lines, l)
		}
	}
	return lines
}

// archive does what snarktank's ralph.sh does when the plan's branch is
// not the last run's: the last run's plan (as that run left it) and
// progress.txt go to archive/YYYY-MM-DD-<feature>/ (feature: the old
// branch without its ralph/ prefix), and progress.txt starts fresh. The
// plan's branch becomes the last branch.
func (s *session) archive(now time.Time) error {
	branch := s.plan.Plan().Branch
	if branch == "" {
		return nil
	}
	lastPath := filepath.Join(s.stateDir, lastBranchFile)
	b, err := os.ReadFile(lastPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if last := strings.TrimSpace(string(b)); last != "" && last != branch {
		if err := s.archiveRun(last, now); err != nil {
			return err
		}
	}
	if err := os.WriteFile(lastPath, []byte(branch+"\n"), 0o644); err != nil {
		return err
	}
	// A run that is killed keeps at least the plan it started with.
	return s.savePlan()
}

func (s *session) archiveRun(last string, now time.Time) error {
	var files []string
	plans, _ := os.ReadDir(filepath.Join(s.stateDir, lastPlanDir))
	for _, e := range plans {
		files = append(files, filepath.Join(s.stateDir, lastPlanDir, e.Name()))
	}
	progress := filepath.Join(s.dir, progressFile)
	if _, err := os.Stat(progress); err == nil {
		files = append(files, progress)
	}
	if len(files) > 0 {
		feature := strings.ReplaceAll(strings.TrimPrefix(last, "ralph/"), "/", "-")
		base := filepath.Join(s.dir, archiveDir, now.Format("2006-01-02")+"-"+feature)
		folder := base
		for n := 2; exists(folder); n++ {
			folder = fmt.Sprintf("%s-%d", base, n)
		}
		if err := os.MkdirAll(folder, 0o755); err != nil {
			return err
		}
		for _, src := range files {
			if err := copyFile(src, filepath.Join(folder, filepath.Base(src))); err != nil {
				return err
			}
		}
		fmt.Fprintf(s.f.IO.ErrOut, "ralph: archived the last run (%s) to %s/\n", last, relOr(s.dir, folder))
	}
	fresh := fmt.Sprintf("# Ralph Progress Log\nStarted: %s\n---\n", now.Format(time.UnixDate))
	return os.WriteFile(progress, []byte(fresh), 0o644)
}

// savePlan keeps a copy of the plan file under .ralph/, for the archive
// of the next run on another branch.
func (s *session) savePlan() error {
	data, err := os.ReadFile(s.plan.Path())
	if err != nil {
		return err
	}
	dir := filepath.Join(s.stateDir, lastPlanDir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, filepath.Base(s.plan.Path())), data, 0o644)
}

// run runs the loop, one task at a time or several in worktrees, and
// keeps the plan as the run left it.
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
		_ = s.savePlan()
	}
	if s.repo != nil {
		_ = s.saveTree(context.WithoutCancel(ctx))
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

// parallelConfig wires --parallel: worktrees under .ralph/worktrees, the
// gates run in each.
func (s *session) parallelConfig(g *vcs.Git, deps loop.Deps) loop.Parallel {
	union := []string{progressFile}
	if rel, err := relIn(g.Root, s.dir); err == nil {
		union = []string{path.Join(rel, progressFile)}
	}
	par := loop.Parallel{
		Workers:   s.parallel,
		Worktrees: worktrees{g: g, union: union},
		Root:      g.Root,
		Dir:       filepath.Join(s.stateDir, "worktrees"),
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

// relIn is p relative to root with slashes; both are resolved through
// symlinks first, since git reports the real path of the repository.
func relIn(root, p string) (string, error) {
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

// relOr is p relative to dir when it is inside it, p otherwise.
func relOr(dir, p string) string {
	if rel, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return p
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
