package loop

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/words"
)

// ArtefactRepo is a Repo that can leave untracked files out of a commit
// (git can): what the gates made, and what the project's toolchains
// leave (Options.Artefacts), whoever made it. Tracked files are
// committed wherever they are.
type ArtefactRepo interface {
	// Untracked lists the untracked files that are not ignored, relative
	// to the top of the tree, a directory holding nothing tracked as one
	// entry ending in "/".
	Untracked(ctx context.Context) ([]string, error)
	// CommitLeaving is Commit but for the untracked files matching
	// patterns (.gitignore lines) or at paths (Untracked's entries):
	// left counts those it left out by the .gitignore line that would
	// ignore them.
	CommitLeaving(ctx context.Context, message string, patterns, paths []string) (hash string, left map[string]int, err error)
}

// LeftOut is one .gitignore line that would ignore files the run's
// commits left out, for EventLeftOut.
type LeftOut struct {
	Line string `json:"line"`
	// Files counts the files it matched at the commit that first left
	// them out.
	Files int `json:"files"`
}

// leftOut is what the run leaves out of its commits beside the
// toolchains' artefacts, and what it told.
type leftOut struct {
	// made are the untracked entries the gates' runs made, in order.
	made []string
	// told are the lines an EventLeftOut named: each is said once a run.
	told map[string]bool
}

// artefactRepo is the repository as one that leaves artefacts out of
// commits, when the run commits and it can.
func (r *runner) artefactRepo() (ArtefactRepo, bool) {
	if !r.opts.Commit {
		return nil, false
	}
	a, ok := r.deps.Repo.(ArtefactRepo)
	return a, ok
}

// watchGates runs gates, a run of the gates, and records the untracked
// files it made: they are left out of the run's commits.
func (r *runner) watchGates(ctx context.Context, gates func()) {
	a, ok := r.artefactRepo()
	if !ok {
		gates()
		return
	}
	r.left.made = appendMade(ctx, a, r.left.made, gates)
}

// appendMade runs gates and appends to made the untracked entries that
// were not there before; a tree it cannot list adds nothing.
func appendMade(ctx context.Context, tree ArtefactRepo, made []string, gates func()) []string {
	before, err := tree.Untracked(ctx)
	gates()
	if err != nil {
		return made
	}
	after, err := tree.Untracked(ctx)
	if err != nil {
		return made
	}
	for _, p := range after {
		if !slices.Contains(before, p) && !slices.Contains(made, p) {
			made = append(made, p)
		}
	}
	return made
}

// commitRepo commits the iteration's changes, the untracked artefacts
// left out when the repository can, and says once which it left out.
func (r *runner) commitRepo(ctx context.Context, msg string) (string, error) {
	a, ok := r.artefactRepo()
	if !ok || (len(r.opts.Artefacts) == 0 && len(r.left.made) == 0) {
		return r.deps.Repo.Commit(ctx, msg)
	}
	hash, left, err := a.CommitLeaving(ctx, msg, r.opts.Artefacts, r.left.made)
	if err != nil && hash != "" {
		// The commit is made; only the account of what it left out is
		// missing.
		r.warn("could not list what the commit left out: %v", err)
		return hash, nil
	}
	if err == nil {
		r.tellLeftOut(left)
	}
	return hash, err
}

// tellLeftOut says, once a run for each line, what the commits left
// out and the .gitignore lines that would ignore it.
func (r *runner) tellLeftOut(left map[string]int) {
	var news []LeftOut
	for _, line := range slices.Concat(r.opts.Artefacts, r.left.made) {
		// A gate's __pycache__/ at the top is a pattern's too: one line.
		if n := left[line]; n > 0 && !r.left.told[line] && !slices.ContainsFunc(news, func(l LeftOut) bool { return l.Line == line }) {
			news = append(news, LeftOut{Line: line, Files: n})
		}
	}
	if len(news) == 0 {
		return
	}
	if r.left.told == nil {
		r.left.told = map[string]bool{}
	}
	names := make([]string, len(news))
	for i, l := range news {
		r.left.told[l.Line] = true
		names[i] = fmt.Sprintf("%s (%s)", l.Line, words.Count(l.Files, "file"))
	}
	r.emit(Event{Kind: EventLeftOut, Iteration: r.st.Iteration, LeftOut: news,
		Message: "left out of commits: " + strings.Join(names, ", ") + " — add to .gitignore:"})
}
