package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/session"
)

// testFactory is a Factory over buffers, a fixed environment and dir.
func testFactory(t *testing.T, dir string, env ...string) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &Factory{Host: &session.Host{
		IO: &IO{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut},
		// RALPH_TRUST: the ralph.toml these tests write is the user's.
		Environ: func() []string { return append([]string{"HOME=" + dir, "RALPH_TRUST=1"}, env...) },
		Dir:     dir,
	}}
	return f, &out, &errOut
}

// parseRun parses a `ralph run` command line and returns the layered
// config the run would use.
func parseRun(t *testing.T, f *Factory, dir string, args ...string) (config.Config, *runOptions, error) {
	t.Helper()
	var got *runOptions
	cmd := newCmdRun(f, func(o *runOptions) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(f.IO.Out)
	cmd.SetErr(f.IO.ErrOut)
	if err := cmd.Execute(); err != nil {
		return config.Config{}, nil, err
	}
	cfg, err := runConfig(got, dir)
	return cfg, got, err
}

func TestRunFlagsOverrideEnvAndFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ralph.toml"), []byte("max-iterations = 7\nmodel = \"from-file\"\nbudget = 2.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _, _ := testFactory(t, dir, "RALPH_MODEL=from-env", "RALPH_TIMEOUT=2m")
	cfg, opts, err := parseRun(t, f, dir, "--model", "from-flag", "-n", "9", "--completion", "promise-tag,relaxed-tag",
		"--once", "--no-commit", "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{
		"model": cfg.Model, "max-iterations": cfg.MaxIterations, "budget": cfg.Budget, "timeout": cfg.Timeout.D(),
		"completion": cfg.Completion, "no-commit": cfg.NoCommit, "tasks": cfg.Tasks, "once": opts.Once,
		"ownership": cfg.Ownership,
	}
	want := map[string]any{
		"model": "from-flag", "max-iterations": 9, "budget": 2.5, "timeout": 2 * time.Minute,
		"completion": []string{"promise-tag", "relaxed-tag"}, "no-commit": true, "tasks": "plan.json", "once": true,
		"ownership": "runner",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"a.json", "b.json"},
		{"--max-iterations", "ten"},
		{"--ownership", "nobody"},
		{"--completion", "psychic"},
	} {
		dir := t.TempDir()
		f, _, _ := testFactory(t, dir)
		root := newRootCmd(f)
		root.SetArgs(append([]string{"run", "--dry-run"}, args...))
		err := root.Execute()
		if code := exitCode(err); code != ExitUsage {
			t.Errorf("%v: exit %d (%v), want %d", args, code, err, ExitUsage)
		}
	}
}

func TestFlagErrorNamesFlagOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, _, _ := testFactory(t, dir)
	_, _, err := parseRun(t, f, dir, "--ownership", "nobody")
	if err == nil || err.Error() != `--ownership: want runner or agent, got "nobody"` {
		t.Errorf("err = %v", err)
	}
}
