package vcs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
)

// AddWorktree checks out a new branch, made from HEAD, in a new worktree
// at dir, and returns that worktree.
func (g *Git) AddWorktree(ctx context.Context, dir, branch string) (*Git, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	if _, err := g.run(ctx, nil, "worktree", "add", "-q", "-b", branch, dir, "HEAD"); err != nil {
		return nil, err
	}
	// Open learns the worktree's own git directory and index; its commits
	// run their hooks in the same sandbox, its programs are the run's.
	wt, err := Open(proc.WithOutside(ctx, g.out), dir, g.Env)
	if wt != nil {
		wt.Hooks = g.Hooks
	}
	return wt, err
}

// RemoveWorktree removes the worktree at dir with whatever it holds, and
// forgets it; a directory git no longer knows is removed all the same.
func (g *Git) RemoveWorktree(ctx context.Context, dir string) error {
	_, err := g.run(ctx, nil, "worktree", "remove", "--force", "--force", dir)
	if err == nil {
		return nil
	}
	if rerr := os.RemoveAll(dir); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return errors.Join(err, rerr)
	}
	_, perr := g.run(ctx, nil, "worktree", "prune")
	return perr
}

// Branches lists the local branches whose names start with prefix.
func (g *Git) Branches(ctx context.Context, prefix string) ([]string, error) {
	out, err := g.run(ctx, nil, "for-each-ref", "--format=%(refname:short)", "refs/heads/")
	if err != nil {
		return nil, err
	}
	var names []string
	for name := range strings.FieldsSeq(out) {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	return names, nil
}

// DeleteBranch deletes a local branch, merged or not.
func (g *Git) DeleteBranch(ctx context.Context, name string) error {
	_, err := g.run(ctx, nil, "branch", "-q", "-D", name)
	return err
}

// RenameBranch renames a local branch; a worktree that has it checked out
// follows the new name.
func (g *Git) RenameBranch(ctx context.Context, from, to string) error {
	_, err := g.run(ctx, nil, "branch", "-m", from, to)
	return err
}

// SquashMerge brings branch's changes into this worktree, staged and not
// committed (git merge --squash), when they merge cleanly with HEAD. When
// they do not, nothing is touched and the conflicting files are returned.
// Files named in union (paths relative to the top, such as an append-only
// progress log) merge by keeping both sides' lines.
func (g *Git) SquashMerge(ctx context.Context, branch string, union []string) (conflicts []string, err error) {
	attrs, cleanup, err := g.mergeAttributes(ctx, union)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cfg := []string{"-c", "core.attributesFile=" + attrs}
	// merge-tree decides without touching the index or the files.
	out, err := g.run(ctx, nil, append(cfg, "merge-tree", "--write-tree", "--name-only", "--no-messages", "HEAD", branch)...)
	if err != nil {
		if exitCode(err) != 1 {
			return nil, err
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, l := range lines[1:] {
			if l = strings.TrimSpace(l); l != "" {
				conflicts = append(conflicts, l)
			}
		}
		if len(conflicts) == 0 {
			conflicts = []string{"(unknown)"}
		}
		return conflicts, nil
	}
	_, err = g.run(ctx, nil, append(cfg, "merge", "-q", "--squash", branch)...)
	return nil, err
}

// mergeAttributes writes a temporary attributes file that merges the union
// files line-wise, on top of the user's own global attributes, which the
// file replaces for the one command.
func (g *Git) mergeAttributes(ctx context.Context, union []string) (string, func(), error) {
	var b strings.Builder
	if user := g.userAttributesFile(ctx); user != "" {
		if data, err := os.ReadFile(user); err == nil {
			b.Write(data)
			b.WriteString("\n")
		}
	}
	for _, p := range union {
		b.WriteString("/" + filepath.ToSlash(p) + " merge=union\n")
	}
	f, err := os.CreateTemp("", "ralph-attributes-*")
	if err != nil {
		return "", nil, err
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", nil, err
	}
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}

// userAttributesFile is core.attributesFile, or git's default for it.
func (g *Git) userAttributesFile(ctx context.Context) string {
	if out, err := g.run(ctx, nil, "config", "--path", "core.attributesFile"); err == nil {
		return strings.TrimSpace(out)
	}
	if dir := userGitDir(environ(g.Env)); dir != "" {
		return filepath.Join(dir, "attributes")
	}
	return ""
}

// userGitDir is where git keeps the user's own files (config, ignore,
// attributes): $XDG_CONFIG_HOME/git, else $HOME/.config/git; "" with
// neither set.
func userGitDir(env []string) string {
	if x := lookupEnv(env, "XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git")
	}
	if h := lookupEnv(env, "HOME"); h != "" {
		return filepath.Join(h, ".config", "git")
	}
	return ""
}

func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
