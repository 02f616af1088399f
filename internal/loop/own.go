package loop

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/durable"
)

// OwnFile is one of ralph's own files in the project: its configuration,
// the prompt files it reads for itself (DESIGN §9).
type OwnFile struct {
	// Repo is its path relative to the top of the repository, with
	// slashes, as diffs name it; Dir its path relative to Options.Dir,
	// where it is put back.
	Repo, Dir string
}

// putBackOwn puts ralph's own files that the claim's diff changes back as
// they were when the task started, whatever the guard's mode: they are
// the user's (the sandbox keeps them read-only; this is for an agent
// without one, or a file it made), a change to them is never the task's
// work, and a change left in the tree would be in every later claim of
// the task, so that a strict guard would reject its honest retries too.
// It reports whether it changed the working tree.
func (r *runner) putBackOwn(ctx context.Context, cl *claim) bool {
	if len(r.opts.OwnFiles) == 0 || cl.err != nil || cl.from == "" {
		return false
	}
	changed := map[string]OwnFile{}
	for _, p := range diffPaths(cl.diff) {
		if i := slices.IndexFunc(r.opts.OwnFiles, func(f OwnFile) bool { return f.Repo == p }); i >= 0 {
			changed[p] = r.opts.OwnFiles[i]
		}
	}
	if len(changed) == 0 {
		return false
	}
	names := make([]string, 0, len(changed))
	for p := range changed {
		names = append(names, p)
	}
	slices.Sort(names)
	before, err := r.deps.Trees.Files(context.WithoutCancel(ctx), cl.from, names)
	if err != nil {
		r.warn("the agent changed %s, ralph's own; it could not be put back: %v", strings.Join(names, ", "), err)
		return false
	}
	var put []string
	for _, p := range names {
		path := filepath.Join(r.opts.Dir, changed[p].Dir)
		if b, ok := before[p]; ok {
			err = durable.WriteFile(path, b, 0o644)
		} else if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		if err != nil {
			r.warn("the agent changed %s, ralph's own; it could not be put back: %v", p, err)
			continue
		}
		put = append(put, p)
	}
	if len(put) > 0 {
		r.warn("the agent changed %s, ralph's own; put back as the task started (ralph obeys only what the user writes and approves)",
			strings.Join(put, ", "))
	}
	return len(put) > 0
}
