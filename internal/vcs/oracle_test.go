package vcs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/gittest"
)

// The oracle test: ralph's looks and commits against git's own. Two
// repositories start alike; the same agent work is done in both, step
// after step (seeded, random); in one ralph commits (Commit), in the
// other `git add -A && git commit` does, at the same instant by the
// clock git is given. After every step both must agree on everything git
// can say: whether the commit was made, the commit's id (so its tree,
// parents, author and message), the index, the status, and the reflog;
// and ralph's look (Snapshot) before the commit must be the tree git
// commits. ralph's own .ralph/ exists only on its side: it must change
// nothing.
//
// The work covers what an in-process git once got wrong: CRLF files under
// core.autocrlf, .gitignore negations and a byte-order mark, paths git
// refuses (.GIT/config, a symlinked .gitmodules, ".git " components),
// long paths, reflog settings, and around them renames, unicode names,
// symlinks, exec bits, files becoming directories and back,
// .gitattributes, nested repositories and the agent's own git add.
//
// RALPH_ORACLE_STEPS=N runs N steps per seed (make test-oracle), and
// RALPH_ORACLE_SEED=S replays one seed.

func TestCommitsEqualGits(t *testing.T) {
	t.Parallel()
	steps := 12
	if s := os.Getenv("RALPH_ORACLE_STEPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("RALPH_ORACLE_STEPS: %v", err)
		}
		steps = n
	}
	seeds := []uint64{1, uint64(time.Now().UnixNano())}
	if s := os.Getenv("RALPH_ORACLE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RALPH_ORACLE_SEED: %v", err)
		}
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d (RALPH_ORACLE_SEED=%d replays it)", seed, seed)
			newOracle(t).run(t, rand.New(rand.NewPCG(seed, 0)), steps)
		})
	}
}

// TestCommitsEqualGitsCases: each case an in-process git once got wrong,
// alone, so that a failure names it.
func TestCommitsEqualGitsCases(t *testing.T) {
	t.Parallel()
	for name, work := range oracleCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := newOracle(t)
			o.step(t, name, work)
			// And once more, with nothing new: both make no commit.
			o.step(t, name+", again", func(string) {})
		})
	}
}

// oracle is the two repositories.
type oracle struct {
	home         string
	ours, theirs string
	g            *Git
	n            int
}

func newOracle(t *testing.T) *oracle {
	t.Helper()
	home := t.TempDir()
	o := &oracle{home: home, ours: filepath.Join(home, "ours"), theirs: filepath.Join(home, "theirs")}
	for _, dir := range []string{o.ours, o.theirs} {
		write(t, filepath.Join(dir, "README.md"), "# project\n")
		gittest.Git(t, home, "init", "-q", "-b", "main", dir)
		o.git(t, dir, "add", "-A")
		o.git(t, dir, "commit", "-q", "-m", "initial")
	}
	g, err := Open(t.Context(), o.ours, o.env())
	if err != nil {
		t.Fatal(err)
	}
	o.g = g
	return o
}

// env is git's environment at the current step: the clock stands still
// within a step and moves a second at each, so that both sides' commits
// can be the same object.
func (o *oracle) env() []string {
	when := fmt.Sprintf("%d +0000", 1_800_000_000+o.n)
	return append(gittest.Env(o.home), "GIT_AUTHOR_DATE="+when, "GIT_COMMITTER_DATE="+when, "LC_ALL=C")
}

// git runs git in dir; it fails the test on error.
func (o *oracle) git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := o.try(dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), filepath.Base(dir), err, out)
	}
	return out
}

// try runs git in dir and returns its output and error.
func (o *oracle) try(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, o.env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// step does work in both repositories, commits on each side, and
// compares.
func (o *oracle) step(t *testing.T, what string, work func(dir string)) {
	t.Helper()
	o.n++
	o.g.Env = o.env()
	work(o.ours)
	work(o.theirs)
	msg := fmt.Sprintf("step %d: %s", o.n, what)

	look, lookErr := o.g.Snapshot(t.Context())
	hash, err := o.g.Commit(t.Context(), msg)
	out, addErr := o.try(o.theirs, "add", "-A")
	theirErr := addErr
	if addErr == nil {
		out, theirErr = o.try(o.theirs, "commit", "-q", "-m", msg)
	}
	_, staged := o.try(o.theirs, "diff", "--cached", "--quiet")
	theirNothing := addErr == nil && theirErr != nil && staged == nil
	ourHead, theirHead := o.head(t, o.ours), o.head(t, o.theirs)
	ctx := fmt.Sprintf("step %d (%s)", o.n, what)
	switch {
	case (err != nil) != (theirErr != nil && !theirNothing):
		t.Fatalf("%s: ralph's commit: %q, %v; git's: %v\n%s", ctx, hash, err, theirErr, out)
	case ourHead != theirHead:
		t.Fatalf("%s: HEAD is %s after ralph's commit, %s after git's:\n%s\n%s", ctx, ourHead, theirHead,
			o.git(t, o.ours, "show", "--stat", "--format=%H %s", "HEAD"), o.git(t, o.theirs, "show", "--stat", "--format=%H %s", "HEAD"))
	case hash != "" && hash != ourHead:
		t.Fatalf("%s: Commit returned %s, HEAD is %s", ctx, hash, ourHead)
	case err == nil && (hash == "") != theirNothing:
		t.Fatalf("%s: ralph made commit %q; git made one: %v", ctx, hash, !theirNothing)
	}
	if lookErr == nil && err == nil && hash != "" {
		if tree := o.git(t, o.ours, "rev-parse", "HEAD^{tree}"); strings.TrimSpace(tree) != look {
			t.Fatalf("%s: ralph's look saw tree %s, git committed %s", ctx, look, tree)
		}
	}
	for _, args := range [][]string{
		{"ls-files", "-s"},
		{"status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignored"},
		{"reflog", "--format=%H %gs"},
		{"for-each-ref"},
	} {
		a, b := o.git(t, o.ours, args...), o.git(t, o.theirs, args...)
		if args[0] == "status" {
			a = withoutRalph(a)
		}
		if a != b {
			t.Fatalf("%s: git %s differs\nralph's side:\n%q\ngit's side:\n%q", ctx, strings.Join(args, " "), a, b)
		}
	}
}

// head is the commit HEAD names.
func (o *oracle) head(t *testing.T, dir string) string {
	t.Helper()
	return strings.TrimSpace(o.git(t, dir, "rev-parse", "HEAD"))
}

// withoutRalph drops ralph's own .ralph/ from a status -z listing: it is
// on ralph's side only, and ignored there.
func withoutRalph(status string) string {
	var keep []string
	for f := range strings.SplitSeq(status, "\x00") {
		if f == "! .ralph/" || strings.HasPrefix(f, "! .ralph/") {
			continue
		}
		keep = append(keep, f)
	}
	return strings.Join(keep, "\x00")
}

// run does steps random steps.
func (o *oracle) run(t *testing.T, rng *rand.Rand, steps int) {
	t.Helper()
	cases := oracleCases()
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	// Map order is random: sort for the seed to replay.
	slices.Sort(names)
	for range steps {
		var what string
		var work func(string)
		if rng.IntN(4) == 0 {
			what = names[rng.IntN(len(names))]
			work = cases[what]
		} else {
			what, work = randomWork(rng, o.n)
		}
		o.step(t, what, work)
	}
}

// names are the files random work picks from: plain, nested, unicode,
// with spaces, and long.
func names() []string {
	long := strings.Repeat("d", 200) + "/" + strings.Repeat("e", 200)
	return []string{"a.txt", "b.go", "dir/c.txt", "dir/sub/d.md", "ünïcödé/ñ.txt", "with space/x y.txt",
		"logs/app.log", "only/keep.txt", "only/other.txt", "keep", "z.log", "x.bin", "crlf.txt",
		long + "/f.txt", "dir", "swap"}
}

// randomWork is one random change an agent could make.
func randomWork(rng *rand.Rand, n int) (string, func(string)) {
	all := names()
	p := all[rng.IntN(len(all))]
	q := all[rng.IntN(len(all))]
	content := fmt.Sprintf("content %d %d\n", n, rng.IntN(3))
	switch rng.IntN(9) {
	case 0:
		return "remove " + p, func(dir string) { _ = os.RemoveAll(filepath.Join(dir, p)) }
	case 1:
		return "rename " + p + " to " + q, func(dir string) {
			_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, q)), 0o755)
			_ = os.Rename(filepath.Join(dir, p), filepath.Join(dir, q))
		}
	case 2:
		return "chmod +x " + p, func(dir string) { _ = os.Chmod(filepath.Join(dir, p), 0o755) }
	case 3:
		return "chmod -x " + p, func(dir string) { _ = os.Chmod(filepath.Join(dir, p), 0o644) }
	case 4:
		return "symlink " + p + " to " + q, func(dir string) {
			_ = os.RemoveAll(filepath.Join(dir, p))
			_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
			_ = os.Symlink(q, filepath.Join(dir, p))
		}
	case 5:
		return "make " + p + " a directory", func(dir string) {
			_ = os.RemoveAll(filepath.Join(dir, p))
			writeQuiet(filepath.Join(dir, p, "inner.txt"), content)
		}
	case 6:
		return "the agent's own git add of " + p, func(dir string) {
			writeQuiet(filepath.Join(dir, p), content)
			cmd := exec.Command("git", "add", "--", p)
			cmd.Dir, cmd.Env = dir, gittest.Env(filepath.Dir(dir))
			_ = cmd.Run()
		}
	case 7:
		return "write " + p + " with CRLF", func(dir string) {
			writeQuiet(filepath.Join(dir, p), strings.ReplaceAll(content, "\n", "\r\n"))
		}
	default:
		return "write " + p, func(dir string) {
			_ = os.RemoveAll(filepath.Join(dir, p))
			writeQuiet(filepath.Join(dir, p), content)
		}
	}
}

// writeQuiet writes a file, making its directory; random work may find a
// file where a directory should be, and then does nothing, on both sides.
func writeQuiet(path, body string) {
	if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = os.WriteFile(path, []byte(body), 0o644)
	}
}

// gitConfig sets a configuration value in the repository at dir.
func gitConfig(dir, key, value string) {
	cmd := exec.Command("git", "config", key, value)
	cmd.Dir, cmd.Env = dir, gittest.Env(filepath.Dir(dir))
	_ = cmd.Run()
}

// oracleCases are the cases an in-process git once got wrong, by name.
func oracleCases() map[string]func(dir string) {
	bom := "\xef\xbb\xbf"
	return map[string]func(dir string){
		"core.autocrlf=input and a CRLF file": func(dir string) {
			gitConfig(dir, "core.autocrlf", "input")
			writeQuiet(filepath.Join(dir, "crlf.txt"), "one\r\ntwo\r\n")
		},
		"core.autocrlf=true": func(dir string) {
			gitConfig(dir, "core.autocrlf", "true")
			writeQuiet(filepath.Join(dir, "crlf2.txt"), "one\r\ntwo\n")
		},
		".gitattributes: eol and text": func(dir string) {
			writeQuiet(filepath.Join(dir, ".gitattributes"), "*.txt text eol=lf\n*.bin binary\n")
			writeQuiet(filepath.Join(dir, "attr.txt"), "a\r\nb\r\n")
			writeQuiet(filepath.Join(dir, "x.bin"), "\x00\r\n")
		},
		"ignore everything but directories and .go": func(dir string) {
			writeQuiet(filepath.Join(dir, ".gitignore"), "*\n!*/\n!*.go\n!.gitignore\n")
			writeQuiet(filepath.Join(dir, "pkg", "a.go"), "package a\n")
			writeQuiet(filepath.Join(dir, "pkg", "a.txt"), "ignored\n")
		},
		"*.log but logs/": func(dir string) {
			writeQuiet(filepath.Join(dir, ".gitignore"), "*.log\n!logs/\n")
			writeQuiet(filepath.Join(dir, "logs", "app.log"), "log\n")
			writeQuiet(filepath.Join(dir, "z.log"), "log\n")
		},
		"*.log but keep": func(dir string) {
			writeQuiet(filepath.Join(dir, ".gitignore"), "*.log\n!keep\n")
			writeQuiet(filepath.Join(dir, "keep", "a.log"), "log\n")
			writeQuiet(filepath.Join(dir, "keep.log"), "log\n")
		},
		"only/** but only/keep.txt": func(dir string) {
			writeQuiet(filepath.Join(dir, ".gitignore"), "only/**\n!only/keep.txt\n")
			writeQuiet(filepath.Join(dir, "only", "keep.txt"), "kept\n")
			writeQuiet(filepath.Join(dir, "only", "other.txt"), "ignored\n")
		},
		"a byte-order mark in .gitignore": func(dir string) {
			writeQuiet(filepath.Join(dir, ".gitignore"), bom+"secret.txt\n")
			writeQuiet(filepath.Join(dir, "secret.txt"), "ignored\n")
		},
		".GIT/config": func(dir string) {
			writeQuiet(filepath.Join(dir, ".GIT", "config"), "[core]\n")
		},
		"a symlinked .gitmodules": func(dir string) {
			_ = os.Symlink("README.md", filepath.Join(dir, ".gitmodules"))
		},
		"a '.git ' component": func(dir string) {
			writeQuiet(filepath.Join(dir, "a", ".git ", "x"), "x\n")
		},
		"a path of about 4 KB": func(dir string) {
			// Long, but within PATH_MAX on both sides.
			var b bytes.Buffer
			for b.Len() < 3800 {
				b.WriteString(strings.Repeat("p", 200) + "/")
			}
			writeQuiet(filepath.Join(dir, b.String()+"f.txt"), "deep\n")
		},
		"core.logAllRefUpdates=false with a reflog": func(dir string) {
			gitConfig(dir, "core.logAllRefUpdates", "false")
			writeQuiet(filepath.Join(dir, "reflog.txt"), "x\n")
		},
		"a nested repository": func(dir string) {
			nested := filepath.Join(dir, "nested")
			writeQuiet(filepath.Join(nested, "n.txt"), "n\n")
			for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "n"}} {
				cmd := exec.Command("git", args...)
				cmd.Dir = nested
				cmd.Env = append(gittest.Env(filepath.Dir(dir)), "GIT_AUTHOR_DATE=1800000000 +0000", "GIT_COMMITTER_DATE=1800000000 +0000")
				_ = cmd.Run()
			}
		},
		"an executable script and a symlink": func(dir string) {
			writeQuiet(filepath.Join(dir, "run.sh"), "#!/bin/sh\n")
			_ = os.Chmod(filepath.Join(dir, "run.sh"), 0o755)
			_ = os.Symlink("run.sh", filepath.Join(dir, "run"))
		},
		"unicode and spaces": func(dir string) {
			writeQuiet(filepath.Join(dir, "ünïcödé", "ñ.txt"), "u\n")
			writeQuiet(filepath.Join(dir, "with space", "x y.txt"), "s\n")
			writeQuiet(filepath.Join(dir, "quote\"and\\back.txt"), "q\n")
		},
	}
}
