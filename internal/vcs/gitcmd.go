package vcs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/durable"
	"github.com/ralph-loop/ralph/internal/proc"
)

// This file is the one door through which ralph runs git: every command
// is built here, with what makes it obey the user and not the agent,
// whose files (the work tree, and what a sandbox lets it write in .git/)
// git would otherwise read as instructions:
//
//   - the executable is found once, before any agent runs, by the run's
//     lookup of ralph's own programs (proc.Outside): on PATH without its
//     entries inside the project (a virtualenv's bin/, a direnv PATH_add)
//     or another place the agent can write, never a git the agent could
//     have written; a command outside the sandbox runs with that PATH
//     too, for the programs git starts itself (ssh, credential helpers);
//   - no hook runs outside the sandbox: a hook may call a script the
//     agent edited (husky, lefthook, pre-commit). git commit's run in the
//     sandbox (Hooks), and so does a pull request's pre-push (Push); every
//     other command (worktrees, branches, checkouts, merges, pushes,
//     ralph's looks) runs with core.hooksPath=/dev/null, where git finds
//     none;
//   - the git directory and the work tree are the ones Open found, given
//     in the environment, so that a .git file the agent writes later moves
//     nothing; git reads a commondir file in the git directory whatever
//     the environment says, so one that is not as Open found it stops
//     every command (checkCommonDir);
//   - fsmonitor is off (it names a program git would start) and so is
//     submodule recursion (a nested repository's configuration is the
//     agent's to write).

// safeConfig is the configuration every git command of ralph's is given;
// hooks says whether git may run the user's hooks (git commit's, in the
// sandbox), or none.
func safeConfig(hooks bool) []string {
	cfg := []string{"-c", "core.fsmonitor=false", "-c", "submodule.recurse=false"}
	if !hooks {
		cfg = append(cfg, "-c", "core.hooksPath="+os.DevNull)
	}
	return cfg
}

// gitOutside finds the git executable with the run's lookup of ralph's
// own programs; without one, on env's PATH, leaving out the entries
// inside the repository that holds dir (or dir itself).
func gitOutside(ctx context.Context, dir string, env []string) (*proc.Outside, string, error) {
	out := proc.OutsideFrom(ctx, env, dir, repoTop(dir))
	bin, err := out.LookPath("git")
	if err != nil {
		return nil, "", fmt.Errorf("git is not installed (looked on PATH, but for the directories the agent can write): %w", err)
	}
	return out, bin, nil
}

// Top is the top of the working tree that holds dir, its real path,
// found without running git; dir itself outside any.
func Top(dir string) string { return repoTop(dir) }

// repoTop is the real path of the top of the working tree that holds dir,
// found by its .git entry without running git; dir itself outside any.
func repoTop(dir string) string {
	d := realOr(dir)
	for cur := d; ; {
		if _, err := os.Lstat(filepath.Join(cur, ".git")); err == nil {
			return cur
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return d
		}
		cur = parent
	}
}

// realOr is p with its symbolic links resolved, or p made absolute when
// they cannot be.
func realOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// run runs one git command in the working tree; a failure is a *CmdError
// carrying git's stderr.
func (g *Git) run(ctx context.Context, env []string, args ...string) (string, error) {
	out, err := g.output(ctx, env, nil, args...)
	return string(out), err
}

// output runs one git command in the working tree with stdin as its
// input (nil: none), and returns what it printed on stdout as bytes (file
// contents need not be text); a failure is a *CmdError carrying git's
// stderr.
func (g *Git) output(ctx context.Context, env []string, stdin []byte, args ...string) ([]byte, error) {
	return g.exec(ctx, gitCall{env: env, stdin: stdin}, args...)
}

// commit runs a git command that runs hooks (git commit) in g.Hooks, the
// sandbox, when there is one: from the project's directory (the sandbox's
// working directory must be in it), with the variables that say where
// the repository is let in.
func (g *Git) commit(ctx context.Context, env []string, args ...string) (string, error) {
	out, err := g.exec(ctx, gitCall{sandbox: g.Hooks, hooks: true, env: env}, args...)
	return string(out), err
}

// gitCall is how one git command runs.
type gitCall struct {
	// sandbox, when set, confines it.
	sandbox proc.Wrapper
	// hooks leaves git to find the user's hooks: git commit's, which run
	// in the sandbox (and a rev-parse asking where they are). Every other
	// command runs none.
	hooks bool
	env   []string
	// stdin is its input; nil for none.
	stdin []byte
}

// exec runs one git command as c says.
func (g *Git) exec(ctx context.Context, c gitCall, args ...string) ([]byte, error) {
	if g.bin == "" {
		return nil, errors.New("git: not opened (vcs.Open)")
	}
	if err := g.checkCommonDir(); err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := proc.Cmd{
		Path: g.bin, Argv: slices.Concat([]string{"git"}, safeConfig(c.hooks), args), Dir: g.Root,
		Env:    g.environ(c.env),
		Stdout: &stdout, Stderr: &stderr,
		Grace: stopGrace,
		// git's own daemons (gc --auto) are meant to outlive it.
		KeepDaemons: true,
	}
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	switch sandbox := c.sandbox; {
	case sandbox != nil:
		if p, ok := sandbox.(passer); ok {
			sandbox = p.Passing([]string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "LC_ALL", "LANGUAGE"})
		}
		cmd.Sandbox, cmd.Dir = sandbox, g.project
	case !c.hooks && g.out != nil:
		// Outside the sandbox, what git starts itself is found where git
		// was. (Hooks that run as ralph, without a sandbox, keep the
		// user's PATH: the agent runs unconfined too.)
		cmd.Env = g.out.Environ(cmd.Env)
	}
	res, err := g.runRecorded(ctx, cmd)
	if slices.Contains(c.env, "GIT_INDEX_FILE="+g.index) {
		g.privateIndex()
	}
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		code := res.ExitCode
		if res.Signal != 0 {
			code = -1 // killed: no exit code
		}
		return stdout.Bytes(), &CmdError{Argv: append([]string{"git"}, args...), Code: code,
			Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return stdout.Bytes(), nil
}

// privateIndex makes ralph's own index 0600: git writes an index anew
// (a lock file renamed) with the umask's mode, world-writable under
// umask 000, and what ralph keeps is the user's alone whatever the umask.
// Its directory is private too; this is for the file's own mode.
func (g *Git) privateIndex() {
	if fi, err := os.Lstat(g.index); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() != 0o600 {
		_ = os.Chmod(g.index, 0o600)
	}
}

// passer is a sandbox that lets in variables a command sets itself
// (sandbox.Box): git must know where the repository is.
type passer interface {
	Passing(names []string) proc.Wrapper
}

// environ is git's environment: g.Env (or ralph's), the directories Open
// found, and extra.
// found, and extra. Before Open found them, the user's own GIT_DIR and
// GIT_WORK_TREE, if any, say where the repository is.
func (g *Git) environ(extra []string) []string {
	env := slices.Clip(environ(g.Env))
	if g.gitDir != "" {
		env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return k == "GIT_DIR" || k == "GIT_WORK_TREE" || k == "GIT_COMMON_DIR"
		})
		env = append(env, "GIT_DIR="+g.gitDir, "GIT_WORK_TREE="+g.Root)
	}
	return append(env, extra...)
}

// ConfigFiles lists what git reads as configuration or runs as hooks in
// the repository that holds dir, as a sandbox must hold them still for
// the agent: read-only are the config files (the repository's, the
// worktree's, and every file they include, wherever it is), the hooks
// directory (core.hooksPath honoured), info/, modules/ and a linked
// worktree's .git file; writable again
// inside modules/ are the submodules' git directories, each but its own
// config, hooks, info/ and modules/. The directories are made when
// missing, so that a sandbox has something to bind read-only whether or
// not they existed: a hook the agent could create where none was would
// run at ralph's next commit, a submodule it could add would come with a
// configuration of its own. Nil outside a git repository.
func ConfigFiles(ctx context.Context, dir string, env []string) (readOnly, writable []string) {
	g, err := Open(ctx, dir, env)
	if err != nil {
		return nil, nil
	}
	// Where the user's hooks are: asked with hooks on (rev-parse runs none).
	out, err := g.exec(ctx, gitCall{hooks: true}, "rev-parse", "--git-path", "hooks", "--git-path", "info")
	if err != nil {
		return nil, nil
	}
	// The hooks git runs (core.hooksPath honoured), the default ones (a
	// hooksPath can be unset), and info/.
	dirs := append(strings.Split(strings.TrimSpace(string(out)), "\n"), filepath.Join(g.commonDir, "hooks"))
	for _, p := range dirs {
		p = absIn(g.Root, p)
		_ = os.MkdirAll(p, 0o755)
		readOnly = append(readOnly, p)
	}
	worktreeConfig := filepath.Join(g.gitDir, "config.worktree")
	readOnly = append(readOnly, filepath.Join(g.commonDir, "config"), worktreeConfig)
	// Included files, by origin: "file:PATH\tkey=value" lines, then
	// "key\nvalue" ones.
	if origins, err := g.run(ctx, nil, "config", "--local", "--includes", "--show-origin", "--list", "-z"); err == nil {
		for rec := range strings.SplitSeq(origins, "\x00") {
			if p, ok := strings.CutPrefix(rec, "file:"); ok && !strings.Contains(p, "\n") {
				readOnly = append(readOnly, absIn(g.Root, p))
			}
		}
	}
	// git reads config.worktree once the repository says so (a boolean
	// as git reads one: asked of git); one the agent would make where
	// none is must be bound read-only too, so it is made: empty, as git
	// config --worktree would.
	if on, err := g.run(ctx, nil, "config", "--local", "--includes", "--type=bool", "--get", "extensions.worktreeConfig"); err == nil &&
		strings.TrimSpace(on) == "true" {
		if f, err := os.OpenFile(worktreeConfig, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			_ = f.Close()
		}
	}
	// A linked worktree's .git file names its git directory: git, the
	// user's after the run too, would go wherever one the agent rewrote
	// says, and take that directory's hooks and configuration.
	if fi, err := os.Lstat(filepath.Join(g.Root, ".git")); err == nil && fi.Mode().IsRegular() {
		readOnly = append(readOnly, filepath.Join(g.Root, ".git"))
	}
	ro, w := moduleFiles(filepath.Join(g.commonDir, "modules"))
	readOnly, writable = append(readOnly, ro...), w
	slices.Sort(readOnly)
	return slices.Compact(readOnly), writable
}

// moduleFiles lays out a modules/ directory for a sandbox: itself
// read-only (made when missing), so that no submodule is added with a
// configuration of the agent's, and each submodule's git directory in it
// writable (its objects, refs and index are the agent's work), but its
// config, config.worktree, hooks, info/ and, recursively, modules/.
// Symbolic links are not followed: a sandbox binds the real paths.
func moduleFiles(modules string) (readOnly, writable []string) {
	_ = os.MkdirAll(modules, 0o755)
	readOnly = []string{modules}
	_ = filepath.WalkDir(modules, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == modules {
			return nil
		}
		if fi, err := os.Lstat(filepath.Join(p, "HEAD")); err != nil || !fi.Mode().IsRegular() {
			return nil // a directory holding submodules by path: a/b
		}
		writable = append(writable, p)
		for _, name := range []string{"hooks", "info"} {
			_ = os.MkdirAll(filepath.Join(p, name), 0o755)
			readOnly = append(readOnly, filepath.Join(p, name))
		}
		readOnly = append(readOnly, filepath.Join(p, "config"), filepath.Join(p, "config.worktree"))
		r, w := moduleFiles(filepath.Join(p, "modules")) // its own submodules
		readOnly, writable = append(readOnly, r...), append(writable, w...)
		return fs.SkipDir
	})
	return readOnly, writable
}

// commonDirFile reads the git directory's commondir file: its content,
// and whether it exists. One that cannot be read (a fifo the agent put
// there) exists, and its content says why, which no file of git's holds.
func commonDirFile(gitDir string) (string, bool) {
	path := filepath.Join(gitDir, "commondir")
	if _, err := os.Lstat(path); err != nil {
		return "", false
	}
	b, err := readGitFile(path)
	if err != nil {
		return "(unreadable: " + err.Error() + ")", true
	}
	return string(b), true
}

// checkCommonDirFile refuses a commondir file git never writes: only a
// linked worktree's git directory (COMMON/worktrees/NAME) has one, and it
// names COMMON. Anything else was written by someone else, maybe an
// agent in an earlier run, for git to take the configuration, the hooks
// and the refs from elsewhere.
func checkCommonDirFile(gitDir, content string) error {
	want := ""
	if filepath.Base(filepath.Dir(gitDir)) == "worktrees" {
		want = filepath.Dir(filepath.Dir(gitDir))
	}
	got := strings.TrimSpace(content)
	if !filepath.IsAbs(got) {
		got = filepath.Join(gitDir, got)
	}
	if want != "" && filepath.Clean(got) == filepath.Clean(want) {
		return nil
	}
	return fmt.Errorf("%s names %q, which git never writes there: git would take its configuration, hooks and "+
		"branches from it, so ralph runs no git command while it is there (remove it if you did not make it)",
		filepath.Join(gitDir, "commondir"), strings.TrimSpace(content))
}

// checkCommonDir refuses to go on when the git directory's commondir file
// is not as Open found it: git would take the configuration, the hooks
// and the refs from wherever it now points. It puts the file back as it
// was (removes one that was not there), so that the user's own git, which
// would obey it too, never does; every later command of this Git fails
// the same way, so that the run stops and says why, and the next run
// finds the file as it should be.
func (g *Git) checkCommonDir() error {
	if g.gitDir == "" {
		return nil
	}
	if err := g.moved.Load(); err != nil {
		return *err
	}
	if fi, err := os.Lstat(g.gitDir); err != nil || !os.SameFile(fi, g.gitDirInfo) {
		// A linked worktree's git directory lies in the common one, which
		// the agent writes: one it swapped for its own (a link) would
		// give git its configuration; nothing is written there either.
		err := fmt.Errorf("%s is not the directory it was when the run started: git would take its configuration, "+
			"hooks and branches from there, so ralph runs no more git command in this run: %w", g.gitDir, errCommonDirMoved)
		g.moved.CompareAndSwap(nil, &err)
		return *g.moved.Load()
	}
	now, exists := commonDirFile(g.gitDir)
	if now == g.commonFile && exists == g.commonFileExists {
		return nil
	}
	path := filepath.Join(g.gitDir, "commondir")
	var err error
	if g.commonFileExists {
		err = durable.WriteFile(path, []byte(g.commonFile), 0o644)
	} else if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("%s changed since the run started (it names %q): git would take its configuration, hooks "+
			"and branches from there, so ralph runs no git command until it is as it was, and could not put it back: %w",
			path, strings.TrimSpace(now), errors.Join(err, errCommonDirMoved))
	} else {
		err = fmt.Errorf("%s changed since the run started (it named %q): git would have taken its configuration, "+
			"hooks and branches from there; ralph put it back as it was, and runs no more git command in this run: %w",
			path, strings.TrimSpace(now), errCommonDirMoved)
	}
	g.moved.CompareAndSwap(nil, &err)
	return *g.moved.Load()
}

// errCommonDirMoved: a git command of ralph's did not run, as the
// commondir file was not as the run found it (checkCommonDir).
var errCommonDirMoved = errors.New("no git command ran")
