package loop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

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
	// left counts those it left out by the pattern, else the path, that
	// matched them.
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
// toolchains' artefacts, and what it told: one for the run, its
// --parallel workers' included (their gates run at once, hence mu).
type leftOut struct {
	mu sync.Mutex
	// made are the untracked entries the gates' runs made, in order,
	// relative to the top of the tree (a worktree's are the same).
	made []string
	// told are the lines an EventLeftOut named: each is said once a run.
	told map[string]bool
}

// paths are the gates' entries so far.
func (l *leftOut) paths() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.made)
}

// add records entries the gates made.
func (l *leftOut) add(made []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range made {
		if !slices.Contains(l.made, p) {
			l.made = append(l.made, p)
		}
	}
}

// untold are the entries of left not said yet, patterns' first, each
// as its .gitignore line, now marked said.
func (l *leftOut) untold(patterns, made []string, left map[string]int) []LeftOut {
	l.mu.Lock()
	defer l.mu.Unlock()
	var news []LeftOut
	for i, key := range slices.Concat(patterns, made) {
		if n := left[key]; n > 0 && !l.told[key] {
			if l.told == nil {
				l.told = map[string]bool{}
			}
			// A gate's __pycache__/ at the top is a pattern's too: said once.
			l.told[key] = true
			line := key
			if i >= len(patterns) {
				line = ignoreLine(key)
			}
			news = append(news, LeftOut{Line: line, Files: n})
		}
	}
	return news
}

// ignoreLine is the .gitignore line that ignores the file or directory
// (ending in "/") at path, relative to the top of the tree: the
// characters git reads as a pattern's are escaped, and a leading # or !,
// so that it names no other file (a name at the top, as is usual for
// .gitignore, also names that name deeper down).
func ignoreLine(path string) string {
	var b strings.Builder
	for i, c := range path {
		if strings.ContainsRune(`*?[\`, c) || i == 0 && (c == '#' || c == '!') {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	line := b.String()
	if rest, ok := strings.CutSuffix(line, " "); ok {
		// git drops trailing spaces unless escaped.
		line = rest + "\\ "
	}
	return line
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
	r.left.add(madeBy(ctx, a, gates))
}

// madeBy runs gates and returns the untracked entries that were not
// there before; a tree it cannot list says none.
func madeBy(ctx context.Context, tree ArtefactRepo, gates func()) []string {
	before, err := tree.Untracked(ctx)
	gates()
	if err != nil {
		return nil
	}
	after, err := tree.Untracked(ctx)
	if err != nil {
		return nil
	}
	var made []string
	for _, p := range after {
		if !slices.Contains(before, p) {
			made = append(made, p)
		}
	}
	return made
}

// commitRepo commits the iteration's changes to the run's repository
// (commitIn).
func (r *runner) commitRepo(ctx context.Context, msg string) (string, error) {
	return r.commitIn(ctx, r.deps.Repo, msg)
}

// commitIn commits repo's changes, the untracked artefacts left out when
// it can, and says once which it left out.
func (r *runner) commitIn(ctx context.Context, repo Repo, msg string) (string, error) {
	a, ok := repo.(ArtefactRepo)
	made := r.left.paths()
	if !ok || !r.opts.Commit || (len(r.opts.Artefacts) == 0 && len(made) == 0) {
		return repo.Commit(ctx, msg)
	}
	hash, left, err := a.CommitLeaving(ctx, msg, r.opts.Artefacts, made)
	if err != nil && hash != "" {
		// The commit is made; only the account of what it left out is
		// missing.
		r.warn("could not list what the commit left out: %v", err)
		return hash, nil
	}
	if err == nil {
		r.tellLeftOut(made, left)
	}
	return hash, err
}

// tellLeftOut says, once a run for each line, what the commits left
// out and the .gitignore lines that would ignore it: the artefacts'
// patterns, and the paths the gates made.
func (r *runner) tellLeftOut(made []string, left map[string]int) {
	news := r.left.untold(r.opts.Artefacts, made, left)
	if len(news) == 0 {
		return
	}
	names := make([]string, len(news))
	for i, l := range news {
		names[i] = fmt.Sprintf("%s (%s)", l.Line, words.Count(l.Files, "file"))
	}
	r.emit(Event{Kind: EventLeftOut, Iteration: r.st.Iteration, LeftOut: news,
		Message: "left out of commits: " + strings.Join(names, ", ") + " — add to .gitignore:"})
}
