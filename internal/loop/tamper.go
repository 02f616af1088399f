package loop

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/guard"
	"github.com/ralph-loop/ralph/internal/projectfs"
)

// putBackTamper puts back, when a strict guard rejects a claim, the
// changes that carry its findings, as they were when the task started
// (guard.PutBack: the runs of changed lines, in JSON and TOML the lines
// of the values, a whole file where the finding is about the file), and
// leaves the rest of the attempt's work: the next attempt starts from
// the tree without the tamper, which a later accepted task would commit
// otherwise. The plan is not among them (its Validation Commands are
// fixed for the run, and the runner owns its marks). It returns what it
// put back, file:line, for the next prompt.
func (r *runner) putBackTamper(ctx context.Context, cl *claim, findings []guard.Finding) []string {
	if r.opts.RepoDir == "" || cl.from == "" || cl.err != nil {
		return nil
	}
	byFile := map[string][]guard.Finding{}
	var names []string
	plan := r.planName()
	for _, f := range findings {
		if f.File == "" || f.File == plan {
			continue
		}
		if _, ok := byFile[f.File]; !ok {
			names = append(names, f.File)
		}
		byFile[f.File] = append(byFile[f.File], f)
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	ctx = context.WithoutCancel(ctx)
	before, err := r.deps.Trees.Files(ctx, cl.from, names)
	if err != nil {
		r.warn("the tamper guard's findings could not be put back: %v", err)
		return nil
	}
	root := projectfs.New(r.opts.RepoDir)
	var put []string
	for _, name := range names {
		after, err := root.ReadFile(name)
		hadAfter := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.warn("the tamper guard's findings in %s could not be put back: %v", name, err)
			continue
		}
		old, hadBefore := before[name]
		content, remove := guard.PutBack(name, old, hadBefore, after, hadAfter, byFile[name])
		switch {
		case remove && !hadAfter, !remove && hadAfter && string(content) == string(after):
			continue
		case remove:
			err = root.Remove(name)
		default:
			perm := fs.FileMode(0o644)
			if fi, lerr := root.Lstat(name); lerr == nil && fi.Mode().IsRegular() {
				perm = fi.Mode().Perm() // a script stays executable
			}
			err = root.Replace(name, content, perm)
		}
		if err != nil {
			r.warn("the tamper guard's findings in %s could not be put back: %v", name, err)
			continue
		}
		put = append(put, where(name, byFile[name]))
	}
	if len(put) > 0 {
		r.warn("put back what the tamper guard rejected, as the task started: %s", strings.Join(put, ", "))
	}
	return put
}

// where names a file's findings: file:line,line, or the file alone for a
// finding about all of it.
func where(name string, fs []guard.Finding) string {
	var lines []string
	for _, f := range fs {
		if f.Line == 0 {
			return name
		}
		lines = append(lines, fmt.Sprint(f.Line))
	}
	return name + ":" + strings.Join(lines, ",")
}
