package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/ralph-loop/ralph/internal/config"
	ghtracker "github.com/ralph-loop/ralph/internal/tracker/github"
)

// doctorGitHub checks what a github: plan, or --pr, needs: a token, and
// that it reaches the repository and may write there. It only reads:
// nothing on GitHub changes, and the token is named by where it came
// from, never shown.
func doctorGitHub(ctx context.Context, r *DoctorReport, f *Host, dir string, cfg config.Config) {
	const section = "github"
	repo := cfg.GitHub.Repo
	if IsTrackerPlan(cfg.Tasks) {
		repo = strings.TrimPrefix(cfg.Tasks, trackerPrefix)
	}
	if repo == "" && !cfg.GitHub.PR {
		return // GitHub is not used
	}
	if repo == "" {
		r.add(section, "repository", CheckWarn, "not checked: the repository comes from the remote's URL at the end of the run",
			"set github.repo = \"OWNER/REPO\" in ralph.toml to check it now")
		return
	}
	token, source := ghtracker.Token(ctx, f.Environ(), dir)
	if token == "" {
		r.add(section, "token", CheckFail, "no GitHub token", "set GITHUB_TOKEN or GH_TOKEN, or log in with gh auth login")
		return
	}
	r.add(section, "token", CheckOK, "from "+source, "")
	c, err := ghtracker.New(ghtracker.Options{Repo: repo, Token: token, BaseURL: cfg.GitHub.APIURL,
		CacheDir: cacheDir(dir), MaxWait: 1})
	if err != nil {
		r.add(section, "repository", CheckFail, err.Error(), "write the plan as github:OWNER/REPO")
		return
	}
	a, err := c.Access(ctx)
	if err != nil {
		r.add(section, "repository", CheckFail, err.Error(), "check the repository's name and the token's access to it")
		return
	}
	r.add(section, "repository", CheckOK, fmt.Sprintf("%s reached (default branch %s)", repo, a.DefaultBranch), "")
	scopes := ""
	if a.Scopes != "" {
		scopes = " (scopes: " + a.Scopes + ")"
	}
	if a.Unknown {
		r.add(section, "write", CheckWarn, "GitHub does not say whether this token may write (an app's token)",
			"make sure it has issues and pull requests write access")
	} else if a.Push {
		r.add(section, "write", CheckOK, "the token may write labels, comments and pull requests"+scopes, "")
	} else {
		r.add(section, "write", CheckFail, "the token cannot write to "+repo+scopes,
			"give the token the repo scope, or issues and pull requests write access")
	}
}
