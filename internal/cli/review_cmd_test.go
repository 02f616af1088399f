package cli

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// parseReview parses a `ralph review` command line and returns the
// layered config the review would use.
func parseReview(t *testing.T, dir string, args ...string) (*reviewOptions, error) {
	t.Helper()
	f, _, _ := testFactory(t, dir)
	var got *reviewOptions
	cmd := newCmdReview(f, func(o *reviewOptions) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(f.IO.Out)
	cmd.SetErr(f.IO.ErrOut)
	if err := cmd.Execute(); err != nil {
		return nil, err
	}
	return got, nil
}

// --agent, --model, --focus and --timeout of ralph review set the
// reviewers' keys over ralph.toml, never the worker's.
func TestReviewFlagsSetTheReviewKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	toml := "agent = \"claude\"\nmodel = \"worker-model\"\n[review]\nagent = \"gemini\"\nfocus = [\"tests\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "ralph.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := parseReview(t, dir, "--agent", "codex", "--model", "gpt-x", "--focus", "security,tests", "--timeout", "2m",
		"--since", "HEAD~2", "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := reviewConfig(opts, dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{"review.agent": cfg.Review.Agent, "review.model": cfg.Review.Model, "review.focus": cfg.Review.Focus,
		"review.timeout": cfg.Review.Timeout.D(), "agent": cfg.Agent, "model": cfg.Model, "tasks": cfg.Tasks, "since": opts.Since}
	want := map[string]any{"review.agent": "codex", "review.model": "gpt-x", "review.focus": []string{"security", "tests"},
		"review.timeout": 2 * time.Minute, "agent": "claude", "model": "worker-model", "tasks": "plan.json", "since": "HEAD~2"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}

	// Without flags, ralph.toml's review keys stand.
	opts, err = parseReview(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = reviewConfig(opts, dir); err != nil || cfg.Review.Agent != "gemini" || len(cfg.Review.Focus) != 1 {
		t.Errorf("review config %+v, %v", cfg.Review, err)
	}
}

func TestReviewBadFlagsAreUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts, err := parseReview(t, dir, "--agent", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	_, err = reviewConfig(opts, dir)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitUsage {
		t.Errorf("--agent nobody: %v, want a usage error", err)
	}
	if _, err := parseReview(t, dir, "a.json", "b.json"); !errors.As(err, &ee) || ee.Code != ExitUsage {
		t.Errorf("two plans: %v, want a usage error", err)
	}
}
