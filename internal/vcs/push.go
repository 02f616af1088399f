package vcs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
)

// Push pushes branch to the same branch of remote, the user's pre-push
// hook first: it runs in g.Hooks, the sandbox (it may run project code the
// agent wrote: tests, a linter), as git would run it, and one that fails
// stops the push (prePush); the push itself runs no hook (--no-verify).
// It never forces: a remote branch that moved since it was last fetched
// is left as it is, and the error wraps ErrStale.
func (g *Git) Push(ctx context.Context, remote, branch string) error {
	ref := "refs/heads/" + branch
	if err := g.prePush(ctx, remote, branch); err != nil {
		return err
	}
	out, err := g.run(ctx, nil, "push", "--porcelain", "--no-verify", remote, ref+":"+ref)
	if err == nil {
		return nil
	}
	var ce *CmdError
	if errors.As(err, &ce) && (strings.Contains(out, "[rejected]") || strings.Contains(ce.Stderr, "[rejected]") ||
		strings.Contains(ce.Stderr, "non-fast-forward") || strings.Contains(ce.Stderr, "fetch first")) {
		return fmt.Errorf("pushing %s to %s: %w (someone pushed to it): fetch, rebase %s on %s/%s, and push again",
			branch, remote, branchMoved{}, branch, remote, branch)
	}
	return fmt.Errorf("pushing %s to %s: %w", branch, remote, err)
}

// prePush runs the user's pre-push hook, when there is one, for a push of
// branch to the same branch of remote, as git push would: from the top of
// the working tree (the project's directory, which a sandbox needs), the
// remote's name and push URL its arguments, on its stdin a line "<local
// ref> <local object> <remote ref> <remote object>" (zeros for a branch
// the remote lacks; none when it is up to date). A hook that exits
// non-zero stops the push, with what it said.
func (g *Git) prePush(ctx context.Context, remote, branch string) error {
	hook, err := g.hook(ctx, "pre-push")
	if err != nil || hook == "" {
		return err
	}
	url, err := g.run(ctx, nil, "remote", "get-url", "--push", remote)
	if err != nil {
		url = remote // a URL, not a remote's name
	}
	ref := "refs/heads/" + branch
	local, err := g.run(ctx, nil, "rev-parse", "--verify", "-q", ref)
	if err != nil {
		return fmt.Errorf("pushing %s: %w", branch, err)
	}
	local = strings.TrimSpace(local)
	there, _, err := g.RemoteBranch(ctx, remote, branch)
	if err != nil {
		return fmt.Errorf("pushing %s to %s: %w", branch, remote, err)
	}
	var lines string
	if there != local {
		lines = fmt.Sprintf("%s %s %s %s\n", ref, local, ref, cmp.Or(there, strings.Repeat("0", len(local))))
	}
	sandbox := g.Hooks
	if p, ok := sandbox.(passer); ok {
		sandbox = p.Passing([]string{"GIT_DIR", "GIT_WORK_TREE"})
	}
	out := proc.NewTail(4 << 10)
	res, err := proc.Run(ctx, proc.Cmd{
		Path: hook, Argv: []string{hook, remote, strings.TrimSpace(url)}, Dir: g.project,
		Env: g.environ(nil), Stdin: strings.NewReader(lines), Stdout: out, Stderr: out,
		Grace: stopGrace, Sandbox: sandbox,
	})
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		return fmt.Errorf("pushing %s to %s: the pre-push hook (%s) refused it: %w: %s", branch, remote, hook, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// hook is the user's hook of that name, as git would run it (core.hooksPath
// honoured), "" when there is none or it is not executable (git skips
// it).
func (g *Git) hook(ctx context.Context, name string) (string, error) {
	out, err := g.exec(ctx, gitCall{hooks: true}, "rev-parse", "--git-path", "hooks/"+name)
	if err != nil {
		return "", err
	}
	p := absIn(g.Root, strings.TrimSpace(string(out)))
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", nil
	}
	return p, nil
}

// RemoteURL is remote's fetch URL.
func (g *Git) RemoteURL(ctx context.Context, remote string) (string, error) {
	out, err := g.run(ctx, nil, "remote", "get-url", remote)
	if err != nil {
		return "", fmt.Errorf("git remote %s: %w", remote, err)
	}
	return strings.TrimSpace(out), nil
}

// branchMoved is the ErrStale of a branch push, said as a user reads it.
type branchMoved struct{}

func (branchMoved) Error() string        { return "the remote branch moved" }
func (branchMoved) Is(target error) bool { return target == ErrStale }

// commitHooks are the hooks git commit may run: in ralph's commits they
// run in the sandbox, as the commit does.
func commitHooks() []string {
	return []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-index-change",
		"reference-transaction", "pre-auto-gc"}
}

// HookUse says which of the user's hooks a run runs and where: those git
// commit runs, at each commit, and pre-push, before a pull request's push
// (push), in the sandbox when sandboxed; the others never, as ralph's
// other git commands run none. "" when the repository has no hook.
func (g *Git) HookUse(ctx context.Context, sandboxed, push bool) string {
	out, err := g.exec(ctx, gitCall{hooks: true}, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return ""
	}
	dir := absIn(g.Root, strings.TrimSpace(string(out)))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var commit, pushed, never []string
	for _, e := range entries {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 || strings.HasSuffix(e.Name(), ".sample") {
			continue
		}
		switch name := e.Name(); {
		case slices.Contains(commitHooks(), name):
			commit = append(commit, name)
		case name == "pre-push" && push:
			pushed = append(pushed, name)
		default:
			never = append(never, name)
		}
	}
	where := "in the sandbox"
	if !sandboxed {
		where = "unconfined (no sandbox)"
	}
	var parts []string
	if len(commit) > 0 {
		parts = append(parts, strings.Join(commit, ", ")+" at each commit")
	}
	if len(pushed) > 0 {
		parts = append(parts, "pre-push before the pull request's push")
	}
	var b strings.Builder
	if len(parts) > 0 {
		fmt.Fprintf(&b, "git hooks %s, %s", strings.Join(parts, " and "), where)
	}
	if len(never) > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "git hooks %s never run (ralph's own git runs no hook)", strings.Join(never, ", "))
	}
	return b.String()
}
