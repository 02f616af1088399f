package demo

import (
	"context"
	"os"

	"github.com/ralph-loop/ralph/internal/vcs"
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

// InitRepo creates the demo's git repository.
func InitRepo(ctx context.Context, dir string, env []string) error {
	_, err := vcs.Init(ctx, dir, env)
	return err
}
