package github

import (
	"bytes"
	"context"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
)

// Token finds the token: GITHUB_TOKEN, then GH_TOKEN, then what `gh auth
// token` prints when the gh CLI is installed and logged in. source names
// where it came from (never the token itself); both are empty when there
// is none.
func Token(ctx context.Context, env []string, dir string) (token, source string) {
	for _, name := range []string{"GITHUB_TOKEN", "GH_TOKEN"} {
		if v := lookup(env, name); strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), name
		}
	}
	// gh runs outside the sandbox: found as ralph's own programs are,
	// never one the agent wrote (proc.Outside).
	programs := proc.OutsideFrom(ctx, env, dir)
	gh, err := programs.LookPath("gh")
	if err != nil {
		return "", ""
	}
	var out bytes.Buffer
	res, err := proc.Run(ctx, proc.Cmd{Path: gh, Argv: []string{"gh", "auth", "token"}, Dir: dir, Env: programs.Environ(env),
		Stdout: &out, Timeout: 10 * time.Second})
	if err != nil || res.Err() != nil {
		return "", ""
	}
	if t := strings.TrimSpace(out.String()); t != "" {
		return t, "gh auth token"
	}
	return "", ""
}

func lookup(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
