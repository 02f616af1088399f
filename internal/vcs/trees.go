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
	"strconv"
	"strings"
)

// Diff is the patch between two trees or commits (Snapshot ids, say):
// `git diff --no-renames -U3`, with the a/ and b/ prefixes whatever the
// user's configuration says, no external diff driver and no textconv, so
// that it reads the same everywhere. exclude are files, absolute or
// relative to the top of the working tree, left out of it.
//
// An empty to is the working tree as the last look saw it: git
// diff-index reads ralph's index, so no tree need be written first.
func (g *Git) Diff(ctx context.Context, from, to string, exclude []string) ([]byte, error) {
	flags := []string{"--no-color", "--no-renames", "--no-ext-diff", "--no-textconv",
		"--src-prefix=a/", "--dst-prefix=b/", "-U3"}
	var args, env []string
	if to == "" {
		g.mu.Lock()
		scanned := g.scanned
		g.mu.Unlock()
		if !scanned {
			return nil, errors.New("diff against the last look: no look yet")
		}
		env = []string{"GIT_INDEX_FILE=" + g.index}
		args = append(append([]string{"--no-optional-locks", "diff-index", "--cached", "-p"}, flags...), from, "--")
	} else {
		args = append(append([]string{"diff"}, flags...), from, to, "--")
	}
	// Exclusions alone mean everything else.
	for _, p := range exclude {
		if rel, ok := g.repoPath(p); ok {
			args = append(args, ":(top,exclude,literal)"+rel)
		}
	}
	return g.output(ctx, env, nil, args...)
}

// Files returns the content of each path (relative to the top of the
// working tree, with slashes) in tree, in one `git cat-file --batch`; a
// path that is not a file there is missing from the map.
func (g *Git) Files(ctx context.Context, tree string, paths []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	var in bytes.Buffer
	var asked []string
	for _, p := range paths {
		if p == "" || strings.ContainsAny(p, "\n\r") {
			continue // cat-file reads one name a line
		}
		in.WriteString(tree + ":" + p + "\n")
		asked = append(asked, p)
	}
	if len(asked) == 0 {
		return out, nil
	}
	b, err := g.output(ctx, nil, in.Bytes(), "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	for _, p := range asked {
		// "<oid> <type> <size>\n<content>\n", or "<name> missing\n".
		header, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("git cat-file --batch: output ends early at %s", p)
		}
		fields := strings.Fields(string(header))
		if len(fields) != 3 {
			b = rest // missing, ambiguous or a directory without content
			continue
		}
		size, err := strconv.Atoi(fields[2])
		if err != nil || size < 0 || size+1 > len(rest) {
			return nil, fmt.Errorf("git cat-file --batch: bad header %q", header)
		}
		if fields[1] == "blob" {
			out[p] = rest[:size:size]
		}
		b = rest[size+1:]
	}
	return out, nil
}

// RestoreTree puts the working tree back to tree, a Snapshot taken
// earlier: files changed or deleted since are checked out as they were,
// files created since are removed (ignored files and .ralph/ are not
// looked at, as Snapshot does not see them). It goes through an index of
// its own, so the user's staging area is left as it is, and touches only
// the files that differ. It returns those files, relative to the top of
// the working tree.
func (g *Git) RestoreTree(ctx context.Context, tree string) ([]string, error) {
	now, err := g.Snapshot(ctx)
	if err != nil || now == tree {
		return nil, err
	}
	out, err := g.output(ctx, nil, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-status", tree, now)
	if err != nil {
		return nil, err
	}
	var checkout, created []string
	fields := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		status, p := fields[i], fields[i+1]
		if status == "A" {
			created = append(created, p)
		} else {
			checkout = append(checkout, p)
		}
	}
	if len(checkout) > 0 {
		if err := g.checkoutFrom(ctx, tree, checkout); err != nil {
			return nil, err
		}
	}
	for _, p := range created {
		full := filepath.Join(g.Root, filepath.FromSlash(p))
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("removing %s: %w", p, err)
		}
		removeEmptyParents(g.Root, filepath.Dir(full))
	}
	return slices.Concat(checkout, created), nil
}

// checkoutFrom writes paths as tree has them, through a temporary index.
func (g *Git) checkoutFrom(ctx context.Context, tree string, paths []string) error {
	tmp, err := os.CreateTemp("", "ralph-restore-index-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_ = tmp.Close()
	_ = os.Remove(name) // git makes it; an empty file is not an index
	defer os.Remove(name)
	env := []string{"GIT_INDEX_FILE=" + name}
	if _, err := g.output(ctx, env, nil, "read-tree", tree); err != nil {
		return err
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p + "\x00")
	}
	_, err = g.output(ctx, env, in.Bytes(), "checkout-index", "-f", "-z", "--stdin")
	return err
}

// removeEmptyParents removes dir and its parents while they are empty,
// up to (not including) root.
func removeEmptyParents(root, dir string) {
	for dir != root && strings.HasPrefix(dir, root+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// repoPath is p relative to the top of the working tree, with slashes;
// ok is false for a path outside it.
func (g *Git) repoPath(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p)), filepath.IsLocal(p)
	}
	root := g.Root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	} else if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(d, filepath.Base(p))
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
