package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// GitEnv is what git runs with in the demo project, on top of the user's
// environment: an identity of its own (a fresh machine may have none), no
// commit signing (which could prompt for a passphrase) and none of the
// user's hooks (made for their own projects, not this one).
func GitEnv(environ []string) []string {
	return append(append([]string(nil), environ...),
		"GIT_AUTHOR_NAME=ralph demo", "GIT_AUTHOR_EMAIL=demo@ralph.invalid",
		"GIT_COMMITTER_NAME=ralph demo", "GIT_COMMITTER_EMAIL=demo@ralph.invalid",
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=commit.gpgsign", "GIT_CONFIG_VALUE_0=false",
		"GIT_CONFIG_KEY_1=core.hooksPath", "GIT_CONFIG_VALUE_1="+os.DevNull,
	)
}

// InitRepo runs `git init` in dir. It is the one process the demo starts:
// the vcs package opens existing repositories only. (It belongs in vcs as
// Init once that package has one.)
func InitRepo(ctx context.Context, dir string, env []string) error {
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("git is not installed: %w", err)
	}
	cmd := exec.CommandContext(ctx, "git", "-c", "init.defaultBranch=main", "init", "-q")
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git init: %s", strings.TrimSpace(stderr.String()+" "+err.Error()))
	}
	return nil
}
