package vcs

import (
	"context"
	"path"
	"strings"
)

// Untracked lists the files git status calls untracked, ignored ones and
// .ralph/ excepted, relative to the top of the working tree: a directory
// that holds nothing tracked is one entry, its path ending in "/" (git
// ls-files --directory). Cheap to compare before and after a command to
// see what it made.
func (g *Git) Untracked(ctx context.Context) ([]string, error) {
	if err := g.ensureIgnored(false); err != nil {
		return nil, err
	}
	out, err := g.run(ctx, nil, "ls-files", "-z", "--others", "--exclude-standard", "--directory", "--full-name", "--", ":(top)")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range splitNul(out) {
		// With --directory git names a directory without reading the
		// ignore rules inside it: .ralph/'s own.
		if !ralphPath(strings.TrimSuffix(p, "/")) {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// CommitLeaving is Commit but for the untracked files that match one of
// patterns (.gitignore lines naming a file or a directory at any depth:
// "*.pyc", "__pycache__/") or are, or are under, one of paths (relative
// to the top, a directory's ending in "/"): those are left out,
// whoever made them. A tracked file is committed wherever it is, and a
// pattern that matches one is the project's to commit: a project that
// commits its target/ keeps doing so, new files in it included. left
// counts the files left out by the first pattern that matched them,
// else their path.
func (g *Git) CommitLeaving(ctx context.Context, message string, patterns, paths []string) (hash string, left map[string]int, err error) {
	if len(patterns) == 0 && len(paths) == 0 {
		hash, err = g.Commit(ctx, message)
		return hash, nil, err
	}
	if err := g.refuseLinks(); err != nil {
		return "", nil, err
	}
	patterns, left, err = g.leaving(ctx, patterns, paths)
	if err != nil {
		return "", nil, err
	}
	// Tracked files first, all of them (git add -u stages changes and
	// deletions, nothing new); then what is new, but for what is left
	// out: an exclude pathspec would leave out a tracked file's change too.
	if err := g.addTracked(ctx); err != nil {
		return "", nil, err
	}
	var exclude []string
	for _, p := range patterns {
		exclude = append(exclude, ":(top,exclude,glob)"+artefactGlob(p))
	}
	for _, p := range paths {
		exclude = append(exclude, ":(top,exclude,literal)"+strings.TrimSuffix(p, "/"))
	}
	if _, err := g.addAll(ctx, g.Hooks, nil, exclude...); err != nil {
		return "", nil, err
	}
	if hash, err = g.commitStaged(ctx, message); err != nil {
		return "", nil, err
	}
	return hash, left, nil
}

// leaving reads, in one git ls-files, the tracked and untracked files
// patterns and paths match: it returns the patterns that match no
// tracked file, and counts the untracked files they and paths leave out
// (staging adds none of them: the count holds for the commit).
func (g *Git) leaving(ctx context.Context, patterns, paths []string) (kept []string, left map[string]int, err error) {
	args := []string{"ls-files", "-z", "--cached", "--others", "--exclude-standard", "-t", "--full-name", "--"}
	for _, p := range patterns {
		args = append(args, ":(top,glob)"+artefactGlob(p))
	}
	for _, p := range paths {
		args = append(args, ":(top,literal)"+strings.TrimSuffix(p, "/"))
	}
	out, err := g.run(ctx, nil, args...)
	if err != nil {
		return nil, nil, err
	}
	// "? PATH" is untracked; any other tag ("H PATH", ...) tracked.
	var untracked []string
	tracked := map[string]bool{}
	for _, rec := range splitNul(out) {
		tag, f, ok := strings.Cut(rec, " ")
		switch {
		case !ok:
		case tag == "?":
			untracked = append(untracked, f)
		default:
			for _, p := range patterns {
				if matchArtefact(p, f) {
					tracked[p] = true
				}
			}
		}
	}
	for _, p := range patterns {
		if !tracked[p] {
			kept = append(kept, p)
		}
	}
	for _, f := range untracked {
		if line := leftBy(f, kept, paths); line != "" {
			if left == nil {
				left = map[string]int{}
			}
			left[line]++
		}
	}
	return kept, left, nil
}

// addTracked stages every change to a tracked file (git add -u), in the
// sandbox when addAll's would be.
func (g *Git) addTracked(ctx context.Context) error {
	sandbox := g.Hooks
	if sandbox != nil && !g.nestedRepos(ctx) {
		sandbox = nil
	}
	if _, err := g.exec(ctx, gitCall{sandbox: sandbox}, "add", "-u", "--", ":(top)"); err != nil {
		return refused(err)
	}
	return nil
}

// artefactGlob is the glob pathspec of a .gitignore line with no slash
// but a trailing one: the files it names at any depth ("**/*.pyc"), or
// everything under the directories it names ("**/target/**").
func artefactGlob(line string) string {
	if dir, ok := strings.CutSuffix(line, "/"); ok {
		return "**/" + dir + "/**"
	}
	return "**/" + line
}

// leftBy is the .gitignore line that left the file f out: the first
// pattern that matches it, else the path it is or is under; "" for none.
func leftBy(f string, patterns, paths []string) string {
	for _, p := range patterns {
		if matchArtefact(p, f) {
			return p
		}
	}
	for _, p := range paths {
		if f == strings.TrimSuffix(p, "/") || strings.HasPrefix(f, strings.TrimSuffix(p, "/")+"/") {
			return p
		}
	}
	return ""
}

// matchArtefact reports whether the file f (relative, slash-separated)
// matches the .gitignore line as artefactGlob's pathspec does: a
// directory line matches a directory above f, at any depth; another, f's
// own name.
func matchArtefact(line, f string) bool {
	parts := strings.Split(f, "/")
	if dir, ok := strings.CutSuffix(line, "/"); ok {
		for _, d := range parts[:len(parts)-1] {
			if ok, _ := path.Match(dir, d); ok {
				return true
			}
		}
		return false
	}
	ok, _ := path.Match(line, parts[len(parts)-1])
	return ok
}

// splitNul splits -z output into its records.
func splitNul(out string) []string {
	var recs []string
	for r := range strings.SplitSeq(out, "\x00") {
		if r != "" {
			recs = append(recs, r)
		}
	}
	return recs
}
