package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/scaffold"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
	"github.com/ralph-loop/ralph/internal/words"
)

// The preflight is what a run needs, checked before anything changes: no
// branch is made, no state written and no agent called on a run that
// cannot work. `ralph run` stops on its problems, `ralph run --dry-run`
// shows the preview and then exits 1 with them, and `ralph doctor` lists
// them as its FAIL lines: one function, so that the three agree.

// problem is one precondition of a run that does not hold.
type problem struct {
	// section and name place it in doctor's report.
	section, name string
	// detail says what is wrong, fix what to do; fix may be "" when
	// detail says it.
	detail, fix string
}

// preflightError is a run that cannot start, and why.
type preflightError struct{ problems []problem }

func (e *preflightError) Error() string {
	lines := make([]string, 0, len(e.problems))
	for _, p := range e.problems {
		line := p.detail
		if p.fix != "" {
			line += "; " + p.fix
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// preflightCheck is what the preflight looks at.
type preflightCheck struct {
	dir  string
	cfg  config.Config
	plan *task.File
	// agent is the configured agent's adapter; nil when it could not be
	// made (doctor reports that itself). reviewer is the reviewers'
	// agent, nil without reviews.
	agent, reviewer agent.Adapter
	env             []string
	// keepBranch: the run stays on the branch checked out (a --worker's
	// task run), whatever the plan's branchName says.
	keepBranch bool
}

// preflight returns the problems that keep a run from starting, in the
// order a user fixes them; none: the run can start.
func preflight(ctx context.Context, c preflightCheck) []problem {
	var out []problem
	if c.agent != nil {
		if _, p := findAgent(c.agent, c.cfg, c.dir, agentEnv(c.agent, c.env)); p != nil {
			out = append(out, *p)
		}
	}
	if r := c.reviewer; r != nil && (c.agent == nil || r.Name() != c.agent.Name()) {
		if _, p := findAgent(r, c.cfg, c.dir, agentEnv(r, c.env)); p != nil {
			p.section, p.detail = "review", "review.agent: "+p.detail
			out = append(out, *p)
		}
	}
	if c.plan != nil {
		if p := planWritable(c.dir, c.plan.Path()); p != nil {
			out = append(out, *p)
		}
		out = append(out, repoProblems(ctx, c)...)
	}
	return out
}

// preflightErr is the preflight's problems as the run's error; nil when
// there are none.
func preflightErr(problems []problem) error {
	if len(problems) == 0 {
		return nil
	}
	return &preflightError{problems: problems}
}

// agentEnv is env with the agent's own variables, which count when its
// executable is looked for.
func agentEnv(ad agent.Adapter, env []string) []string {
	if inv, err := ad.Invocation(agent.Request{PromptFile: "prompt.md"}); err == nil {
		return append(env[:len(env):len(env)], inv.EnvSet...)
	}
	return env
}

// findAgent looks for the agent's executable as a run would start it,
// with env.
func findAgent(ad agent.Adapter, cfg config.Config, dir string, env []string) (string, *problem) {
	name := ad.Name()
	exe := agent.Executable(ad)
	path, err := agent.LookPath(exe, dir, env)
	if err == nil {
		return path, nil
	}
	fix := fmt.Sprintf("set agents.%s.command in ralph.toml to its path", name)
	if spec, _ := agent.Lookup(name); spec.Install != "" && cfg.Agents[name].Command == "" {
		fix = "install it (" + spec.Install + ") or " + fix
	}
	return "", &problem{section: "agent " + name + " (configured)", name: "executable",
		detail: agent.NotFound(exe, dir), fix: fix}
}

// planWritable checks that ralph can write the plan: a run marks its tasks
// there. A plan without a write bit is read-only on purpose; one in a
// directory ralph cannot write (a read-only mount, another user's) cannot
// be replaced, which is how ralph writes it.
func planWritable(dir, path string) *problem {
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	fi, err := os.Stat(target)
	if err != nil {
		return nil // the plan was just read: its loader says what is wrong
	}
	var why string
	switch {
	case fi.Mode().Perm()&0o222 == 0:
		why = fmt.Sprintf("is read-only (mode %04o)", fi.Mode().Perm())
	case syscall.Access(target, wOK) != nil:
		why = "is not writable: " + accessErr(target)
	case syscall.Access(filepath.Dir(target), wOK) != nil:
		why = "is in a directory ralph cannot write: " + accessErr(filepath.Dir(target))
	default:
		return nil
	}
	return &problem{section: "plan", name: "writable",
		detail: fmt.Sprintf("%s %s, and ralph marks its tasks there", words.Rel(dir, path), why),
		fix:    "make it writable (chmod u+w), or copy the plan somewhere writable and run that"}
}

// wOK asks access(2) whether a file may be written.
const wOK = 2

// accessErr says why path is not writable.
func accessErr(path string) string {
	err := syscall.Access(path, wOK)
	if errors.Is(err, syscall.EROFS) {
		return "a read-only file system"
	}
	return err.Error()
}

// repoProblems checks the repository as prerun will use it, reading
// only: none at all (unless allow-no-repo), a detached HEAD, changes
// that are not ralph's own, a branchName git cannot have. While another
// run holds the lock the tree is its own, and the lock says so.
func repoProblems(ctx context.Context, c preflightCheck) []problem {
	repo, err := vcs.Detect(ctx, c.dir, nil)
	if err != nil {
		if c.cfg.AllowNoRepo {
			return nil
		}
		return []problem{{section: "git", name: "repository", detail: noRepoMessage(err, "ralph commits each accepted task, "+
			"and its guard, its reviewer's diff and any rollback read git"),
			fix: "run `git init` and commit what is there, or run with --allow-no-repo (allow-no-repo = true) to go on without any of it"}}
	}
	if cl, ok := repo.(interface{ Close() error }); ok {
		defer func() { _ = cl.Close() }()
	}
	store, err := state.View(c.dir)
	if err != nil {
		return nil
	}
	if held, err := store.Held(); err != nil || held {
		return nil
	}
	var out []problem
	if tracked := trackedState(ctx, repo, c.dir); len(tracked) > 0 {
		out = append(out, problem{section: "git", name: "state dir",
			detail: fmt.Sprintf("%s/ holds files git tracks (%s), and it is where ralph keeps its own state, out of git: "+
				"its commits would leave them behind", state.Dir, strings.Join(tracked, ", ")),
			fix: fmt.Sprintf("move them out of %[1]s/ and commit (git mv %[1]s/fix_plan.md fix_plan.md), then run the plan from there", state.Dir)})
	}
	if _, err := repo.Branch(ctx); errors.Is(err, vcs.ErrDetached) {
		out = append(out, problem{section: "git", name: "branch", detail: detachedMessage(err)})
	}
	if !c.cfg.AllowDirty {
		if _, err := checkTree(ctx, store, repo, c.cfg, c.plan, crashedBefore(store)); err != nil {
			out = append(out, problem{section: "git", name: "tree", detail: err.Error()})
		}
	}
	if b := c.plan.Plan().Branch; b != "" && !c.keepBranch && repo.Kind() == "git" {
		if why := badBranchName(b); why != "" {
			out = append(out, problem{section: "plan", name: "branchName",
				detail: fmt.Sprintf("%s: branchName %q %s: git cannot make that branch", words.Rel(c.dir, c.plan.Path()), b, why),
				fix:    "name the branch as git allows (ralph/my-feature)"})
		}
	}
	return out
}

// noRepoMessage says that the project is in no repository (err, from
// vcs.Detect or vcs.Open), and what needs one.
func noRepoMessage(err error, needs string) string {
	return fmt.Sprintf("%v: %s", err, needs)
}

// maxTracked bounds the tracked files of .ralph/ a problem names.
const maxTracked = 5

// trackedState lists what the project's .ralph/ holds in HEAD's commit:
// a directory of the user's (ralph-claude-code keeps fix_plan.md and
// PROMPT.md there) that ralph's state would take over. git show of a
// directory lists its entries after a "tree REV:PATH" line.
func trackedState(ctx context.Context, repo vcs.Repo, dir string) []string {
	if repo.Kind() != "git" {
		return nil
	}
	rel, err := state.RepoPath(repo.Dir(), filepath.Join(dir, state.Dir))
	if err != nil {
		return nil
	}
	b, err := repo.Show(ctx, "HEAD", rel)
	if err != nil {
		return nil // not in HEAD, or no commit yet
	}
	header, entries, _ := strings.Cut(string(b), "\n")
	if !strings.HasPrefix(header, "tree ") {
		return nil // a file called .ralph
	}
	var out []string
	for name := range strings.SplitSeq(entries, "\n") {
		switch {
		case name == "":
		case len(out) == maxTracked:
			return append(out, "...")
		default:
			out = append(out, state.Dir+"/"+name)
		}
	}
	return out
}

// detachedMessage is the refusal of a detached HEAD.
func detachedMessage(err error) string {
	return fmt.Sprintf("%v: ralph commits each task to a branch, and commits on a detached HEAD are easily lost "+
		"(a rebase or bisect may be in progress); finish it, or check out a branch: git switch BRANCH, or git switch -c NEW-BRANCH", err)
}

// crashedBefore reports whether the last run died without recording its
// end (its state says it is running, and nobody holds the lock), or ended
// with a task accepted but not committed, or one whose commit git
// refused (held): either way what it left in the tree is its unfinished
// work (stopCrashed says the same under the lock).
func crashedBefore(store *state.Store) bool {
	prev, err := store.LoadState()
	return err == nil && prev.RunID != "" && (state.Live(prev.Status) || len(prev.Accepting) > 0 || prev.Held != "")
}

// checkTree is the dirty-tree check, before the run and under its lock:
// changes that are not ralph's own refuse the run, unless the last run
// died and left them (its unfinished work, which this run goes on with).
func checkTree(ctx context.Context, store *state.Store, repo vcs.Repo, cfg config.Config, plan *task.File, crashed bool) (leftover bool, err error) {
	leftover, err = store.CheckDirty(ctx, tree{repo}, ownFiles(cfg, plan))
	var dirty *state.DirtyError
	if errors.As(err, &dirty) && crashed {
		// A run that dies cannot record the tree it leaves: what it
		// left is taken as its own, like an interrupted run's.
		return true, nil
	}
	return leftover, err
}

// ownFiles are ralph's own files in the working tree: the plan, ralph.toml
// and the prompt file, and, until they are first committed, the other
// files `ralph init` writes for the plan's format (the tasks workflow's
// plan.md and activity.md).
func ownFiles(cfg config.Config, plan *task.File) state.Own {
	own := state.Own{Files: []string{plan.Path(), "ralph.toml", cfg.Prompt}}
	if files, err := scaffold.Files(plan.Plan().Format); err == nil {
		for _, f := range files {
			own.Setup = append(own.Setup, f.Name)
		}
	}
	return own
}

// badBranchName says why git would refuse name as a branch (the rules of
// git check-ref-format --branch); "" when it would not.
func badBranchName(name string) string {
	switch {
	case name == "@":
		return "is @"
	case strings.HasPrefix(name, "-"):
		return "starts with -"
	case strings.HasPrefix(name, "/"), strings.HasSuffix(name, "/"), strings.Contains(name, "//"):
		return "has an empty part between slashes"
	case strings.HasSuffix(name, "."):
		return "ends with ."
	case strings.Contains(name, ".."):
		return "contains .."
	case strings.Contains(name, "@{"):
		return "contains @{"
	}
	if i := strings.IndexFunc(name, func(r rune) bool {
		return r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r)
	}); i >= 0 {
		return fmt.Sprintf("contains %q", name[i])
	}
	for part := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(part, ".") {
			return "has a part that starts with ."
		}
		if strings.HasSuffix(part, ".lock") {
			return "has a part that ends with .lock"
		}
	}
	return ""
}
