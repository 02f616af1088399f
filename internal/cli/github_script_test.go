package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ralph-loop/ralph/internal/fakegithub"
	"github.com/ralph-loop/ralph/internal/gittest"
)

// ghToken is the scripts' GitHub token; a test checks it never shows.
const ghToken = "ghp_script_secret_0123456789"

// TestGitHubScripts runs testdata/github/*.txtar: GitHub issues as the
// plan and a pull request as the finish, against the fake GitHub API
// (the ghfake command) with real git pushing to a bare remote.
func TestGitHubScripts(t *testing.T) {
	t.Parallel()
	fakes := &ghFakes{servers: map[*testscript.TestScript]*ghFake{}}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "github"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			work := env.WorkDir
			env.Setenv("HOME", work)
			if err := stateHome(env); err != nil {
				return err
			}
			if err := userConfigHome(env); err != nil {
				return err
			}
			env.Setenv("FAKEAGENT_SCRIPT", filepath.Join(work, "scenario"))
			for k, v := range gittest.Vars(work) {
				env.Setenv(k, v)
			}
			env.Setenv("NO_COLOR", "1")
			env.Setenv("RALPH_SANDBOX_MODE", "none")
			// The scripts write the ralph.toml they are about (trust.go).
			env.Setenv("RALPH_TRUST", "1")
			// Many work in a directory without git, which a run refuses
			// unless asked (no_repo_refused.txtar unsets it).
			env.Setenv("RALPH_ALLOW_NO_REPO", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"ghfake":   fakes.cmd,
			"waitfile": cmdWaitFile,
			"exits":    cmdExits,
		},
	})
}

type ghFakes struct {
	mu      sync.Mutex
	servers map[*testscript.TestScript]*ghFake
}

type ghFake struct {
	srv    *fakegithub.Server
	repo   *fakegithub.Repo
	remote string
}

// cmd is ghfake SUBCOMMAND ...:
//
//	ghfake start [SCOPE...]           start the fake (acme/app), export GITHUB_TOKEN and RALPH_GITHUB_API_URL
//	ghfake issue TITLE BODYFILE [LABEL...]
//	ghfake bigissue TITLE BYTES        an issue labelled ralph whose body is BYTES of log
//	ghfake failcheck BRANCH NAME LOGFILE   a failing check on the branch's head
//	ghfake pendingcheck BRANCH NAME READS  a check running for READS reads, then green
//	ghfake review PR PATH LINE TEXT        a review comment
//	ghfake secondary N SECONDS            the next N requests hit a secondary limit
//	ghfake secondary-writes N SECONDS     the next N writes hit a secondary limit
//	ghfake down|up                    drop every connection (the network is gone), or not
//	ghfake dump                       the fake's state, stable, on stdout
//	ghfake leaked                     succeed when the token was written anywhere in $WORK but bin/
func (g *ghFakes) cmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: ghfake start|issue|failcheck|review|secondary|dump|leaked ...")
	}
	g.mu.Lock()
	f := g.servers[ts]
	g.mu.Unlock()
	if args[0] != "start" && args[0] != "leaked" && f == nil {
		ts.Fatalf("ghfake start first")
	}
	switch args[0] {
	case "start":
		scopes := args[1:]
		if len(scopes) == 0 {
			scopes = []string{"repo"}
		}
		remote := ts.MkAbs("remote.git")
		srv, err := fakegithub.Start(fakegithub.Options{
			Tokens: map[string][]string{ghToken: scopes},
			// The pull request's head is the bare remote's branch.
			HeadSHA: func(branch string) string {
				out, err := exec.Command("git", "--git-dir", remote, "rev-parse", "-q", "--verify", "refs/heads/"+branch).Output()
				if err != nil {
					return ""
				}
				return strings.TrimSpace(string(out))
			},
			// CI passes on every commit nobody set a check for.
			DefaultChecks: func(string) []fakegithub.CheckRun {
				return []fakegithub.CheckRun{{Name: "ci", Status: "completed", Conclusion: "success"}}
			},
		})
		ts.Check(err)
		ts.Defer(func() { _ = srv.Close() })
		f = &ghFake{srv: srv, repo: srv.AddRepo("acme", "app"), remote: remote}
		g.mu.Lock()
		g.servers[ts] = f
		g.mu.Unlock()
		ts.Setenv("GITHUB_TOKEN", ghToken)
		ts.Setenv("RALPH_GITHUB_API_URL", srv.APIURL())
	case "issue":
		if len(args) < 3 {
			ts.Fatalf("usage: ghfake issue TITLE BODYFILE [LABEL...]")
		}
		body := ""
		if args[2] != "-" {
			body = ts.ReadFile(args[2])
		}
		f.srv.AddIssue(f.repo, args[1], body, args[3:]...)
	case "bigissue":
		if len(args) != 3 {
			ts.Fatalf("usage: ghfake bigissue TITLE BYTES")
		}
		n, err := strconv.Atoi(args[2])
		ts.Check(err)
		line := "2026-11-24T20:00:00Z ERROR the pasted log of a failing build, line after line\n"
		f.srv.AddIssue(f.repo, args[1], strings.Repeat(line, n/len(line)+1), "ralph")
	case "failcheck":
		if len(args) != 4 {
			ts.Fatalf("usage: ghfake failcheck BRANCH NAME LOGFILE")
		}
		out, err := exec.Command("git", "--git-dir", f.remote, "rev-parse", "refs/heads/"+args[1]).Output()
		ts.Check(err)
		f.srv.SetChecks(f.repo, strings.TrimSpace(string(out)), fakegithub.CheckRun{Name: args[2], Status: "completed",
			Conclusion: "failure", Summary: "1 test failed", Log: ts.ReadFile(args[3])})
	case "pendingcheck":
		if len(args) != 4 {
			ts.Fatalf("usage: ghfake pendingcheck BRANCH NAME READS")
		}
		reads, err := strconv.Atoi(args[3])
		ts.Check(err)
		out, err := exec.Command("git", "--git-dir", f.remote, "rev-parse", "refs/heads/"+args[1]).Output()
		ts.Check(err)
		f.srv.SetChecks(f.repo, strings.TrimSpace(string(out)), fakegithub.CheckRun{Name: args[2], Status: "completed",
			Conclusion: "success", PendingReads: reads})
	case "review":
		if len(args) != 5 {
			ts.Fatalf("usage: ghfake review PR PATH LINE TEXT")
		}
		pr, err := strconv.Atoi(args[1])
		ts.Check(err)
		line, err := strconv.Atoi(args[3])
		ts.Check(err)
		f.srv.AddReviewComment(f.repo, pr, "alice", args[2], line, args[4])
	case "secondary":
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		secs, err := strconv.Atoi(args[2])
		ts.Check(err)
		f.srv.SecondaryLimit(n, time.Duration(secs)*time.Second)
	case "secondary-writes":
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		secs, err := strconv.Atoi(args[2])
		ts.Check(err)
		f.srv.SecondaryLimitWrites(n, time.Duration(secs)*time.Second)
	case "down":
		f.srv.SetDown(true)
	case "up":
		f.srv.SetDown(false)
	case "dump":
		_, _ = ts.Stdout().Write([]byte(f.dump()))
	case "leaked":
		leaked := false
		_ = filepath.Walk(ts.Getenv("WORK"), func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() || info.Size() > 64<<20 {
				return nil
			}
			if filepath.Base(filepath.Dir(path)) == "bin" {
				return nil // a script's fake gh, which prints the token
			}
			data, err := os.ReadFile(path)
			if err == nil && strings.Contains(string(data), ghToken) {
				ts.Logf("the token is in %s", path)
				leaked = true
			}
			return nil
		})
		if leaked == neg {
			ts.Fatalf("leaked = %v", leaked)
		}
	default:
		ts.Fatalf("ghfake: unknown subcommand %q", args[0])
	}
}

// dump prints the fake's state in a stable form for cmp and grep.
func (f *ghFake) dump() string {
	var b strings.Builder
	f.srv.Do(func() {
		for _, is := range f.repo.Issues {
			labels := slices.Clone(is.Labels)
			slices.Sort(labels)
			fmt.Fprintf(&b, "issue #%d %s [%s]\n", is.Number, is.Title, strings.Join(labels, ","))
			for _, c := range f.repo.Comments {
				if c.Issue == is.Number {
					fmt.Fprintf(&b, "  comment: %s\n", strings.ReplaceAll(strings.TrimSpace(c.Body), "\n", "\n  | "))
				}
			}
		}
		for _, p := range f.repo.Pulls {
			fmt.Fprintf(&b, "pull #%d %s -> %s draft=%v title=%q closes=%v\n", p.Number, p.Head, p.Base, p.Draft, p.Title, p.ClosesIssues())
			fmt.Fprintf(&b, "  body: %s\n", strings.ReplaceAll(strings.TrimSpace(p.Body), "\n", "\n  | "))
		}
		for _, c := range f.repo.Review {
			fmt.Fprintf(&b, "review %d reply-to=%d by %s on %s:%d: %s\n", c.ID, c.InReplyTo, c.User, c.Path, c.Line,
				strings.ReplaceAll(strings.TrimSpace(c.Body), "\n", " "))
		}
		fmt.Fprintf(&b, "counts: %s\n", f.repo.Counts())
	})
	return b.String()
}
