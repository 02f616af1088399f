package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/fakemodel"
	"github.com/ralph-loop/ralph/internal/state"
)

// apiKey is what every CLI sends as its key. Not "fake": Copilot masks its
// key wherever it appears in its output, and the fake model's ids say fake.
const apiKey = "e2e-test-key"

// Set by TestMain.
var (
	toolsBin  string // the CLIs' executables (node_modules/.bin)
	ralphPath string // ralph, built for this test run
	nodeDir   string // where node is, for the CLIs written in JavaScript
	skipWhy   string // why every test skips, when it does
	// verbose logs ralph's output, the transcripts and the fake model's
	// requests of passing tests too (RALPH_E2E_VERBOSE=1).
	verbose = os.Getenv("RALPH_E2E_VERBOSE") != ""
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	tools := os.Getenv("RALPH_E2E_TOOLS")
	if tools == "" {
		skipWhy = "RALPH_E2E_TOOLS is not set: run .ci/agents.sh, or point it at e2e/agents after npm ci there"
		return m.Run()
	}
	bin, err := findBin(tools)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	toolsBin = bin
	if node, err := exec.LookPath("node"); err == nil {
		nodeDir = filepath.Dir(node)
	}
	dir, err := os.MkdirTemp("", "ralph-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ralphPath = filepath.Join(dir, "ralph")
	build := exec.Command("go", "build", "-o", ralphPath, "./cmd/ralph")
	build.Dir = ".." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/ralph: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// findBin accepts the install directory (holding node_modules/.bin) or
// the .bin directory itself.
func findBin(tools string) (string, error) {
	for _, dir := range []string{filepath.Join(tools, "node_modules", ".bin"), tools} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && filepath.Base(dir) == ".bin" {
			return filepath.Abs(dir)
		}
	}
	if fi, err := os.Stat(tools); err == nil && fi.IsDir() {
		return filepath.Abs(tools)
	}
	return "", fmt.Errorf("RALPH_E2E_TOOLS=%s: no such directory (want e2e/agents after npm ci, or its node_modules/.bin)", tools)
}

// project is one temporary git repository with a two-task prd.json, a
// HOME and a TMPDIR of its own, and a fake model server.
type project struct {
	t      *testing.T
	cli    agentCLI
	root   string // holds dir, home, tmp
	dir    string // the repository ralph runs in
	home   string
	tmp    string
	server *fakemodel.Server
	// env is the whole environment of ralph, and so of the CLI.
	env []string
	// toml is ralph.toml.
	toml strings.Builder
	// runID marks every process of this run (RALPH_E2E_RUN in their
	// environment), to find those that outlive ralph.
	runID string
	// keep are the processes of the run that outlive ralph on purpose:
	// the user's terminal and shell (readme_test.go).
	keep []int
}

const prdJSON = `{
  "project": "ralph-e2e",
  "branchName": "ralph/e2e",
  "description": "Two tiny tasks for the real-agent end-to-end test.",
  "userStories": [
    {
      "id": "US-001",
      "title": "Create done-1.txt",
      "description": "Create an empty file named done-1.txt in the project root.",
      "acceptanceCriteria": ["done-1.txt exists"],
      "priority": 1,
      "passes": false,
      "notes": ""
    },
    {
      "id": "US-002",
      "title": "Create done-2.txt",
      "description": "Create an empty file named done-2.txt in the project root.",
      "acceptanceCriteria": ["done-2.txt exists"],
      "priority": 2,
      "passes": false,
      "notes": ""
    }
  ]
}
`

// newProject sets up a project for cli, with the server scripted by
// turns. It skips the test when the CLI is not installed or ralph does not
// know the agent.
func newProject(t *testing.T, cli agentCLI, turns ...fakemodel.Turn) *project {
	t.Helper()
	return newProjectIn(t, cli, "", turns...)
}

// newProjectIn is newProject with its directories (project, HOME, TMPDIR)
// in root; "" is a temporary directory.
func newProjectIn(t *testing.T, cli agentCLI, root string, turns ...fakemodel.Turn) *project {
	t.Helper()
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
	if _, err := os.Stat(filepath.Join(toolsBin, cli.bin)); err != nil {
		t.Skipf("%s is not installed in %s", cli.bin, toolsBin)
	}
	p := newUser(t, cli, root, turns...)
	// The ralph.toml the harness writes is the user's, vouched for as CI
	// does (ralph trust). These tests are about the CLIs, with the
	// variables they are given (a sandbox would drop some):
	// sandbox_test.go runs them in the sandbox.
	p.setenv("RALPH_TRUST=1", "RALPH_SANDBOX_MODE=none")

	// The user turned off the reviewer review.when = "auto" brings to a
	// run without gates: the model's turns are scripted for the worker
	// alone. review_test.go turns reviewers on in ralph.toml.
	p.writeHome(".config/ralph/config.toml", "[review]\nwhen = \"off\"\n")
	p.write("prd.json", prdJSON)
	p.git("init", "-q", "-b", "main")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if dry := p.ralph(ctx, "run", "--dry-run", "--no-tui", "--agent", cli.name); strings.Contains(dry.stderr, "unknown agent") {
		t.Skipf("ralph has no %s adapter yet: %s", cli.name, firstLine(dry.stderr))
	}

	// A short grace: the hang test waits for it.
	p.toml.WriteString("grace = \"3s\"\n")
	cli.setup(p)
	// The fake model has a price, so that the CLIs that report tokens
	// only get an estimated cost (tables go last in ralph.toml).
	p.toml.WriteString("\n[prices.\"fake-model\"]\ninput = 1\noutput = 2\ncache-read = 0.1\ncache-write = 1.25\n")
	p.toml.WriteString("\n[prices.\"custom:FakeChat-0\"]\ninput = 1\noutput = 2\ncache-read = 0.1\ncache-write = 1.25\n")
	p.write("ralph.toml", p.toml.String())
	p.git("add", "prd.json", "ralph.toml")
	p.git("commit", "-q", "-m", "plan")
	return p
}

// newUser makes the directories of a project in root ("" is a temporary
// directory), an empty repository, HOME and TMPDIR, and starts the fake
// model server scripted by turns: a user's machine with ralph and the CLI
// on PATH, their environment, and nothing of ralph's in the project yet.
func newUser(t *testing.T, cli agentCLI, root string, turns ...fakemodel.Turn) *project {
	t.Helper()
	if root == "" {
		root = t.TempDir()
	}
	p := &project{t: t, cli: cli, root: root,
		dir: filepath.Join(root, "project"), home: filepath.Join(root, "home"), tmp: filepath.Join(root, "tmp")}
	for _, d := range []string{p.dir, p.home, p.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	p.runID = hex.EncodeToString(id)

	srv, err := fakemodel.Start(fakemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.server = srv
	t.Cleanup(func() {
		if t.Failed() || verbose {
			t.Logf("fake model requests:\n%s", srv.LogText())
		}
		_ = srv.Close()
	})
	srv.Script(turns...)

	path := []string{filepath.Dir(ralphPath), toolsBin}
	if nodeDir != "" {
		path = append(path, nodeDir)
	}
	path = append(path, "/usr/local/bin", "/usr/bin", "/bin")
	p.env = []string{
		"PATH=" + strings.Join(path, string(os.PathListSeparator)),
		"HOME=" + p.home,
		"TMPDIR=" + p.tmp,
		"XDG_CONFIG_HOME=" + filepath.Join(p.home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(p.home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(p.home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(p.home, ".local", "state"),
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"NO_PROXY=127.0.0.1,localhost",
		"no_proxy=127.0.0.1,localhost",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=ralph e2e", "GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=ralph e2e", "GIT_COMMITTER_EMAIL=e2e@example.invalid",
		"RALPH_E2E_RUN=" + p.runID,
	}
	return p
}

// setenv adds variables to the run's environment.
func (p *project) setenv(kv ...string) { p.env = append(p.env, kv...) }

// write writes a file relative to the repository.
func (p *project) write(name, content string) {
	p.t.Helper()
	p.writeAbs(filepath.Join(p.dir, name), content)
}

// writeHome writes a file relative to HOME.
func (p *project) writeHome(name, content string) {
	p.t.Helper()
	p.writeAbs(filepath.Join(p.home, name), content)
}

func (p *project) writeAbs(name, content string) {
	p.t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) git(args ...string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Env = p.dir, p.env
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

type result struct {
	code     int
	stdout   string
	stderr   string
	duration time.Duration
}

// ralph runs ralph in the project. A context deadline stops it with
// SIGTERM (ralph then stops its agent's process group), then SIGKILL.
func (p *project) ralph(ctx context.Context, args ...string) result {
	p.t.Helper()
	return p.command(ctx, ralphPath, args...)
}

// command runs a program in the project, with the run's environment,
// stopped as ralph is.
func (p *project) command(ctx context.Context, name string, args ...string) result {
	p.t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = p.dir, p.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), duration: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		p.t.Fatalf("%s %s: %v", filepath.Base(name), strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		p.t.Errorf("%s %s: still running after the test's deadline: stopped", filepath.Base(name), strings.Join(args, " "))
	}
	return r
}

// run runs `ralph run` with the given flags under a deadline, then checks
// that no process of the run outlived it.
func (p *project) run(deadline time.Duration, flags ...string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	args := append([]string{"run", "--no-tui", "--agent", p.cli.name}, flags...)
	r := p.ralph(ctx, args...)
	p.t.Logf("ralph %s: exit %d in %s", strings.Join(args, " "), r.code, r.duration.Round(time.Millisecond))
	p.t.Cleanup(func() {
		if p.t.Failed() || verbose {
			p.t.Logf("ralph stdout:\n%s\nralph stderr:\n%s", r.stdout, r.stderr)
			p.logTranscripts()
		}
	})
	p.checkNoOrphans()
	return r
}

// logTranscripts logs the tail of every iteration's raw agent output.
func (p *project) logTranscripts() {
	outs, _ := filepath.Glob(filepath.Join(p.dir, ".ralph", "runs", "*", "iter-*.out"))
	for _, o := range outs {
		b, _ := os.ReadFile(o)
		if len(b) > 4000 {
			b = append([]byte("…"), b[len(b)-4000:]...)
		}
		p.t.Logf("%s:\n%s", strings.TrimPrefix(o, p.dir+"/"), b)
	}
}

// checkNoOrphans fails the test if a process of this run is still alive
// once ralph has exited, and kills it: ralph must take its agent's whole
// process group down.
func (p *project) checkNoOrphans() {
	p.t.Helper()
	var left []int
	deadline := time.Now().Add(5 * time.Second)
	for {
		left = slices.DeleteFunc(processesWith("RALPH_E2E_RUN="+p.runID), func(pid int) bool { return slices.Contains(p.keep, pid) })
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, pid := range left {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		p.t.Errorf("process %d outlived ralph: %s", pid, strings.ReplaceAll(strings.TrimSpace(string(cmdline)), "\x00", " "))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processesWith lists the processes whose environment holds kv.
func processesWith(kv string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for v := range bytes.SplitSeq(env, []byte{0}) {
			if string(v) == kv {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// history reads .ralph/history.jsonl.
func (p *project) history() []state.Record {
	p.t.Helper()
	f, err := os.Open(filepath.Join(p.dir, ".ralph", "history.jsonl"))
	if err != nil {
		p.t.Fatalf("history: %v", err)
	}
	defer f.Close()
	var recs []state.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r state.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			p.t.Fatalf("history line %s: %v", sc.Bytes(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// passes reads each story's passes from prd.json.
func (p *project) passes() map[string]bool {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, "prd.json"))
	if err != nil {
		p.t.Fatal(err)
	}
	var prd struct {
		UserStories []struct {
			ID     string `json:"id"`
			Passes bool   `json:"passes"`
		} `json:"userStories"`
	}
	if err := json.Unmarshal(b, &prd); err != nil {
		p.t.Fatalf("prd.json: %v\n%s", err, b)
	}
	m := map[string]bool{}
	for _, s := range prd.UserStories {
		m[s.ID] = s.Passes
	}
	return m
}

func (p *project) exists(name string) bool {
	_, err := os.Stat(filepath.Join(p.dir, name))
	return err == nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func outcomes(recs []state.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Outcome))
	}
	return out
}
