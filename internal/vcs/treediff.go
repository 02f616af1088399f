package vcs

import (
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// This file answers Diff and Files without a git process when it can
// vouch that git's answer would be the same: both trees read as loose
// objects, no attributes or diff configuration that change the output,
// nothing git would print in a way the writer here does not (patch.go).
// Anything else answers errCannot and the git process answers.

// plainDiff reports whether the user's git configuration leaves
// `git diff` as it is by default where this package's flags do not set it
// (diff.algorithm, diff.indentHeuristic, diff.interHunkContext,
// diff.orderFile, diff.relative, diff.suppressBlankEmpty, core.quotePath,
// core.abbrev, core.attributesFile): only then is the diff made in
// process. The configuration is the one the look read (fast.go), read
// here when no look has yet.
func (g *Git) plainDiff() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	// A look reads it first nearly always; the background context only
	// serves a diff asked for before any look, and git config returns at
	// once.
	c, err := g.config(context.Background())
	if err != nil {
		return false
	}
	switch c.values["diff.algorithm"] {
	case "", "myers", "default":
	default:
		return false
	}
	if !c.bool("diff.indentheuristic", true) {
		return false
	}
	for _, k := range []string{"diff.interhunkcontext", "diff.orderfile", "diff.relative",
		"diff.suppressblankempty", "core.quotepath", "core.abbrev", "core.attributesfile"} {
		if _, set := c.values[k]; set {
			return false
		}
	}
	return true
}

// diffInProcess is Diff between two trees (or commits) read in process.
func (g *Git) diffInProcess(from, to string, exclude []string) ([]byte, error) {
	if !g.plainDiff() || g.attributesOutside() || lookupEnv(environ(g.Env), "GIT_DIFF_OPTS") != "" {
		// GIT_DIFF_OPTS changes the context even against -U3.
		return nil, errCannot
	}
	s, ok := g.looseStore()
	if !ok {
		return nil, errCannot
	}
	var excluded []string
	for _, p := range exclude {
		rel, ok := g.repoPath(p)
		if !ok {
			continue // git is given no pathspec for it either
		}
		if rel == "." || rel == "" {
			return nil, errCannot
		}
		excluded = append(excluded, rel)
	}
	keep := func(p string) bool {
		for _, x := range excluded {
			if p == x || strings.HasPrefix(p, x+"/") {
				return false
			}
		}
		return true
	}
	a, err := s.rootTree(from)
	if err != nil {
		return nil, err
	}
	b, err := s.rootTree(to)
	if err != nil {
		return nil, err
	}
	fromFiles, toFiles := map[string]fileEntry{}, map[string]fileEntry{}
	if err := s.changedFiles(fromFiles, toFiles, "", a, b, 0); err != nil {
		return nil, err
	}
	return s.treePatch(fromFiles, toFiles, keep)
}

// attributeFiles are the attributes files outside the working tree: the
// repository's info/attributes, the system's, the user's.
func (g *Git) attributeFiles() []string {
	files := []string{filepath.Join(g.commonDir, "info", "attributes"), "/etc/gitattributes"}
	if dir := userGitDir(environ(g.Env)); dir != "" {
		files = append(files, filepath.Join(dir, "attributes"))
	}
	return files
}

// attributesOutside reports whether attributes that change a diff may
// apply from outside the trees: the repository's info/attributes, the
// user's or the system's attributes file.
func (g *Git) attributesOutside() bool {
	for _, f := range g.attributeFiles() {
		if b, err := os.ReadFile(f); err == nil && diffAttributes(b) {
			return true
		}
	}
	return false
}

// diffAttributes reports whether an attributes file may change what a
// diff between two trees prints: a diff driver or -diff (binary), a
// funcname pattern through a driver, or a macro that could say either.
// End-of-line and text attributes apply to the working tree only.
func diffAttributes(b []byte) bool {
	return bytes.Contains(b, []byte("diff")) || bytes.Contains(b, []byte("binary")) ||
		bytes.Contains(b, []byte("[attr]"))
}

// rootTree is the tree id that id names: id itself for a tree, a
// commit's tree.
func (s *looseObjects) rootTree(id string) (string, error) {
	if id == emptyTree {
		return id, nil
	}
	typ, body, err := s.read(id)
	if err != nil {
		return "", err
	}
	switch typ {
	case "tree":
		return id, nil
	case "commit":
		line, _, _ := strings.Cut(string(body), "\n")
		tree, ok := strings.CutPrefix(line, "tree ")
		if !ok || objectID(tree) == "" {
			return "", errCannot
		}
		return tree, nil
	}
	return "", errCannot
}

// entries reads tree id's entries ("" or the empty tree: none).
func (s *looseObjects) entries(id string) ([]treeEntry, error) {
	if id == "" || id == emptyTree {
		return nil, nil
	}
	typ, body, err := s.read(id)
	if err != nil {
		return nil, err
	}
	if typ != "tree" {
		return nil, errCannot
	}
	return parseTree(body)
}

// changedFiles walks trees a and b ("" for none) under prefix, as git's
// diff-tree does: a subtree with the same id on both sides is skipped; the
// files that differ go into from and to. A directory that holds a
// .gitattributes on either side that could change the diff makes it
// errCannot, as its attributes would apply to the files that changed in
// it.
func (s *looseObjects) changedFiles(from, to map[string]fileEntry, prefix, a, b string, depth int) error {
	if a == b {
		return nil
	}
	if depth > maxDepth {
		return errCannot
	}
	ea, err := s.entries(a)
	if err != nil {
		return err
	}
	eb, err := s.entries(b)
	if err != nil {
		return err
	}
	type pair struct{ a, b treeEntry }
	byName := map[string]*pair{}
	for _, e := range ea {
		byName[e.name] = &pair{a: e}
	}
	for _, e := range eb {
		if p, ok := byName[e.name]; ok {
			p.b = e
		} else {
			byName[e.name] = &pair{b: e}
		}
	}
	for name, p := range byName {
		if name == ".gitattributes" {
			if err := s.checkAttributes(p.a, p.b); err != nil {
				return err
			}
		}
		full := path.Join(prefix, name)
		var subA, subB string
		if p.a.mode == "40000" {
			subA = p.a.id
		} else if p.a.mode != "" {
			from[full] = fileEntry{mode: p.a.mode, id: p.a.id}
		}
		if p.b.mode == "40000" {
			subB = p.b.id
		} else if p.b.mode != "" {
			to[full] = fileEntry{mode: p.b.mode, id: p.b.id}
		}
		if subA != "" || subB != "" {
			if err := s.changedFiles(from, to, full, subA, subB, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// filesInProcess is Files from loose objects: each path is looked up
// through its directories.
func (g *Git) filesInProcess(tree string, paths []string) (map[string][]byte, error) {
	s, ok := g.looseStore()
	if !ok {
		return nil, errCannot
	}
	root, err := s.rootTree(tree)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	dirs := map[string][]treeEntry{}
	for _, p := range paths {
		if p == "" || strings.ContainsAny(p, "\n\r") {
			continue // as the git process does
		}
		if path.Clean(p) != p || strings.HasPrefix(p, "/") || p == "." {
			return nil, errCannot
		}
		e, found, err := s.lookup(dirs, root, p)
		if err != nil {
			return nil, err
		}
		if !found || e.mode == "40000" || e.mode == "160000" {
			continue
		}
		body, err := s.blobOrEmpty(e.id)
		if err != nil {
			return nil, err
		}
		out[p] = body
	}
	return out, nil
}

// lookup finds the entry p (a clean slash path) names in tree root,
// keeping the trees it reads in dirs for the next path.
func (s *looseObjects) lookup(dirs map[string][]treeEntry, root, p string) (treeEntry, bool, error) {
	id, dir := root, ""
	parts := strings.Split(p, "/")
	for i, name := range parts {
		entries, ok := dirs[dir]
		if !ok {
			var err error
			if entries, err = s.entries(id); err != nil {
				return treeEntry{}, false, err
			}
			dirs[dir] = entries
		}
		var e treeEntry
		for _, c := range entries {
			if c.name == name {
				e = c
				break
			}
		}
		if e.mode == "" {
			return treeEntry{}, false, nil
		}
		if i == len(parts)-1 {
			return e, true, nil
		}
		if e.mode != "40000" {
			return treeEntry{}, false, nil
		}
		id, dir = e.id, path.Join(dir, name)
	}
	return treeEntry{}, false, nil
}

// checkAttributes is errCannot when either side of a .gitattributes entry
// may change the diff (or is not a plain file to read).
func (s *looseObjects) checkAttributes(sides ...treeEntry) error {
	for _, e := range sides {
		if e.mode == "" {
			continue
		}
		if e.mode != "100644" && e.mode != "100755" {
			return errCannot
		}
		b, err := s.blobOrEmpty(e.id)
		if err != nil {
			return err
		}
		if diffAttributes(b) {
			return errCannot
		}
	}
	return nil
}
