package vcs

import (
	"context"
	"fmt"
	"strings"
)

// RemoteRefs asks remote, with one ls-remote and no fetch, what the refs
// matching patterns point at (git's tail match: "HEAD", "refs/heads/x",
// "refs/ralph/claims/k/*"), and which branch its HEAD names ("" when
// none: pass "HEAD" among the patterns to learn it). A ref the remote
// does not have is not in the map.
func (g *Git) RemoteRefs(ctx context.Context, remote string, patterns ...string) (refs map[string]string, head string, err error) {
	out, err := g.run(ctx, nil, append([]string{"ls-remote", "--symref", remote}, patterns...)...)
	if err != nil {
		return nil, "", err
	}
	refs = map[string]string{}
	for line := range strings.SplitSeq(out, "\n") {
		obj, name, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		if target, sym := strings.CutPrefix(obj, "ref: "); sym {
			if name == "HEAD" {
				head = strings.TrimPrefix(target, "refs/heads/")
			}
			continue
		}
		refs[name] = obj
	}
	return refs, head, nil
}

// RemoteBranch asks remote, with one ls-remote and no fetch, what its
// branch points at; ok is false when it has no such branch. Only the
// remote's branches are listed (--heads: the remote filters them), not
// all its refs, which on a forge include one or two per pull request.
func (g *Git) RemoteBranch(ctx context.Context, remote, branch string) (commit string, ok bool, err error) {
	out, err := g.run(ctx, nil, "ls-remote", "--heads", remote, "refs/heads/"+branch)
	if err != nil {
		return "", false, err
	}
	for line := range strings.SplitSeq(out, "\n") {
		if obj, name, found := strings.Cut(line, "\t"); found && name == "refs/heads/"+branch {
			return obj, true, nil
		}
	}
	return "", false, nil
}

// CreateRef creates ref on remote at object (a commit) only if the
// remote has no such ref, as PushRef with nothing expected: of pushes
// racing to create one ref exactly one creates it. created is false
// when the ref was there already at that very object: git then changes
// nothing and reports success, lease or not. A ref there at another
// object is ErrStale.
func (g *Git) CreateRef(ctx context.Context, remote, ref, object string) (created bool, err error) {
	out, err := g.pushPorcelain(ctx, []string{"push", "--porcelain", "--no-verify", "--force-with-lease=" + ref + ":", remote, object + ":" + ref})
	if err != nil {
		return false, err
	}
	// "<flag>\t<from>:<to>\t<summary>": "*" a new ref, "=" up to date.
	for line := range strings.SplitSeq(out, "\n") {
		if f := strings.Split(line, "\t"); len(f) >= 2 && strings.HasSuffix(f[1], ":"+ref) {
			return f[0] == "*", nil
		}
	}
	return false, fmt.Errorf("push of %s to %s: no report of the ref in %q", ref, remote, out)
}
