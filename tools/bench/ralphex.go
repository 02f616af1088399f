package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// The ralphex scenario runs ralph and ralphex (github.com/umputun/ralphex)
// side by side on one plan in ralphex's format: tasks sections "### Task N:"
// of one checkbox each, an agent that answers at once (the fake agent,
// installed on PATH as claude), one commit per task in a fresh git
// repository.
//
//   - ralph, agent ownership: the agent writes a file, ticks its box and
//     commits, as ralphex's task prompt asks of it;
//   - ralph, runner ownership: the agent writes a file and says
//     TASK_DONE; ralph ticks the box and commits;
//   - ralphex --tasks-only: the agent writes a file, ticks its box and
//     commits, and says <<<RALPHEX:ALL_TASKS_DONE>>> after the last.
//
// Both runners are timed the same way: the wall time of the run minus the
// agent's own time, which the agent logs itself (tools/bench/timedagent:
// from its main's first line to its last), over the tasks. What is left is
// the runner's: its start and end, and per iteration what it does before,
// around and after the agent process (spawn, exit and reaping included).
// The gap from one agent's end to the next's start, also from the agent's
// log, is an iteration without the run's start and end. (ralph's history
// times the agent from spawn to exit; the overhead scenario's figure,
// printed too, is smaller by the agent process's start and exit.)
//
// ralphex is built from a clone given by -ralphex-src, at ralphexRev, with
// one line changed: its default pause between iterations, 2 s, made 0.
// Its config cannot say 0 itself: its embedded default config says
// iteration_delay_ms = 2000, and 0 (or less) there means the default. The
// config given to it says 0. Its config directory (RALPHEX_CONFIG_DIR) is
// the same for every run, installed by the first.
//
// Run 0 of each runner is not timed: it warms the caches and counts the
// git processes the runner starts itself (a stand-in for git on PATH logs
// the commands whose parent is the runner), cut into the run's start, its
// iterations and its end by the agent's own marks.

// ralphexRev is the ralphex commit the scenario builds unless
// -ralphex-rev says otherwise (2026-08-22, "docs: add backlog item for the
// unticked plan archived by worktree runs").
const ralphexRev = "c36bfdcec38c2b1785f3727d9016c440a3a06f4a"

// The line the build changes: ralphex's pause between iterations.
const (
	ralphexDelayFile = "pkg/processor/runner.go"
	ralphexDelayLine = "const DefaultIterationDelay = 2 * time.Second"
	ralphexDelayZero = "const DefaultIterationDelay = 0 * time.Second // ralph's bench: no pause between iterations"
)

// benchPlan is where every runner finds the plan (ralphex's plans
// directory); ralphex moves it to completed/ once done.
const benchPlan = "docs/plans/bench.md"

// peer is one runner of the ralphex scenario.
type peer struct {
	key, name string
	// tool is the process name: ralph or ralphex.
	tool string
	// ownership of ralph's runs; empty for ralphex.
	ownership string
	// ralph is the ralph binary of an -against build; empty: the one
	// measured.
	ralph string
}

// ralphexPeers are the scenario's runners: ralph in both ownerships and
// ralphex, and, when against names another build's directory, ralph from
// there in both ownerships too, interleaved with the others run by run
// (two builds side by side with ralphex in one run).
func ralphexPeers(against string) []peer {
	ps := slices.Clone(peers)
	if against == "" {
		return ps
	}
	for _, p := range peers {
		if p.tool == "ralph" {
			p.key += "-against"
			p.name += " (the build in " + against + ")"
			p.ralph = filepath.Join(against, "ralph")
			ps = append(ps, p)
		}
	}
	return ps
}

var peers = []peer{
	{key: "ralph-agent", name: "ralph, agent ownership: the agent ticks its box and commits", tool: "ralph", ownership: "agent"},
	{key: "ralph-runner", name: "ralph, runner ownership: ralph ticks the box and commits", tool: "ralph", ownership: "runner"},
	{key: "ralphex", name: "ralphex --tasks-only: the agent ticks its box and commits, as ralphex's prompt asks", tool: "ralphex"},
}

// peerRun is what one timed run of a runner measured.
type peerRun struct {
	// perIterMS is the runner's time per iteration outside the agent, as
	// the agent logs its own time; historyMS the same as ralph's history
	// has the agent's (spawn to exit), ralph only.
	perIterMS, historyMS float64
	// gapMS is the median time from one agent's end to the next's start,
	// as the agent logs them: an iteration without the run's start and
	// end.
	gapMS float64
	rssMB float64
}

// gitCount is the git processes a runner started itself in one run.
type gitCount struct {
	start, end []string
	// iters holds the commands of each iteration but the last, from the
	// end of its agent to the start of the next: the last one's are in end.
	iters [][]string
}

// ralphexSource is where the ralphex scenario finds ralphex: a git
// repository and the commit to build.
type ralphexSource struct{ dir, rev string }

func ralphexScenario(bin, tmp string, rx ralphexSource, runs, tasks int, against string) error {
	src, rev := rx.dir, rx.rev
	fmt.Printf("ralphex: ralph and ralphex on one plan of %d tasks in ralphex's format, %d runs each\n", tasks, runs)
	if _, err := os.Stat(src); src == "" || err != nil {
		if src != "" {
			src = " at " + src
		}
		fmt.Printf("  skipped: no ralphex source%s. Clone it (git clone https://github.com/umputun/ralphex DIR)\n"+
			"  and pass -ralphex-src DIR; the scenario builds commit %s of it.\n\n", src, rev)
		return nil
	}
	root := filepath.Join(tmp, "ralphex")
	agentBin := filepath.Join(root, "bin")
	if err := os.MkdirAll(agentBin, 0o755); err != nil {
		return err
	}
	ralphex, err := buildRalphex(src, rev, root)
	if errors.Is(err, errNoRev) {
		fmt.Printf("  skipped: %v\n\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(agentBin, "claude"), "./tools/bench/timedagent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build the timed agent: %w", err)
	}
	gitStandIn, err := writeGitStandIn(filepath.Join(root, "git"))
	if err != nil {
		return err
	}
	configDir := filepath.Join(root, "config")
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return err
	}
	// 0 is ralphex's default, which the build made 0.
	if err := os.WriteFile(filepath.Join(configDir, "config"), []byte("iteration_delay_ms = 0\n"), 0o600); err != nil {
		return err
	}
	env := peerEnv{ralph: filepath.Join(bin, "ralph"), ralphex: ralphex, agentBin: agentBin, configDir: configDir}
	if against != "" {
		if _, err := os.Stat(filepath.Join(against, "ralph")); err != nil {
			return fmt.Errorf("-against: %w", err)
		}
	}
	runners := ralphexPeers(against)

	measured := map[string][]peerRun{}
	counted := map[string]gitCount{}
	for i := range runs + 1 {
		for _, p := range runners { // interleaved: the machine's load hits each alike
			dir := filepath.Join(root, fmt.Sprintf("%s-%d", p.key, i))
			if i == 0 {
				c, err := env.count(p, dir, tasks, gitStandIn)
				if err != nil {
					return fmt.Errorf("ralphex scenario (%s, counting git): %w", p.key, err)
				}
				counted[p.key] = c
				continue
			}
			r, err := env.timed(p, dir, tasks)
			if err != nil {
				return fmt.Errorf("ralphex scenario (%s): %w", p.key, err)
			}
			measured[p.key] = append(measured[p.key], r)
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
		}
	}
	printPeers(rev, tasks, runners, measured, counted)
	return nil
}

var errNoRev = errors.New("no ralphex commit")

// buildRalphex extracts rev from the git repository src into root/src,
// sets ralphex's pause between iterations to 0 and builds it; it returns
// the binary's path.
func buildRalphex(src, rev, root string) (string, error) {
	out, err := exec.Command("git", "-C", src, "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("%w %s in %s (a clone of https://github.com/umputun/ralphex with that commit; git -C %s fetch gets it)",
			errNoRev, rev, src, src)
	}
	rev = strings.TrimSpace(string(out))
	dst := filepath.Join(root, "src")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "-C", src, "archive", "--format=tar", rev)
	untar := exec.Command("tar", "-x", "-C", dst)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr, untar.Stderr = &stderr, &stderr
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return "", fmt.Errorf("git archive %s: %w\n%s", rev, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("tar: %w\n%s", err, stderr.String())
	}

	file := filepath.Join(dst, ralphexDelayFile)
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	if n := bytes.Count(b, []byte(ralphexDelayLine+"\n")); n != 1 {
		return "", fmt.Errorf("%s at %s: %d lines %q, want 1: the patch needs redoing for this commit", ralphexDelayFile, rev, n, ralphexDelayLine)
	}
	b = bytes.Replace(b, []byte(ralphexDelayLine+"\n"), []byte(ralphexDelayZero+"\n"), 1)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return "", err
	}

	binary := filepath.Join(root, "ralphex-bin", "ralphex")
	start := time.Now()
	build := exec.Command("go", "build", "-trimpath", "-o", binary, "./cmd/ralphex")
	build.Dir = dst
	// Its modules are vendored (or come from the module proxy); no
	// workspace of ralph's applies.
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build ralphex %s: %w", rev, err)
	}
	fmt.Fprintf(os.Stderr, "bench: built ralphex %s (pause between iterations 0) in %.1f s\n", rev[:12], time.Since(start).Seconds())
	return binary, nil
}

// writeGitStandIn writes a git that logs each command whose parent is
// $BENCH_TOOL to $BENCH_GIT_LOG (one line, newlines made spaces) and runs
// the real git; it returns the directory to put first on PATH.
func writeGitStandIn(dir string) (string, error) {
	real, err := exec.LookPath("git")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	script := `#!/bin/sh
if [ "$(cat /proc/$PPID/comm 2>/dev/null)" = "$BENCH_TOOL" ]; then
	printf 'git %s\n' "$(printf '%s ' "$@" | tr '\n' ' ')" >>"$BENCH_GIT_LOG"
fi
exec ` + real + ` "$@"
`
	return dir, os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755)
}

// peerEnv is where the scenario's programs are.
type peerEnv struct {
	ralph, ralphex, agentBin, configDir string
}

// prepare writes the project of one run in dir/repo and the agent's
// scenario, and returns the runner's command, not started.
func (e peerEnv) prepare(p peer, dir string, tasks int) (*exec.Cmd, error) {
	repo := filepath.Join(dir, "repo")
	script := filepath.Join(dir, "scenario")
	if err := headingProject(repo, tasks); err != nil {
		return nil, err
	}
	if err := os.WriteFile(script, []byte(peerScenario(p, tasks)), 0o644); err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	if p.tool == "ralphex" {
		cmd = exec.Command(e.ralphex, "--tasks-only", "--no-color", "-m", fmt.Sprint(tasks+1), benchPlan)
	} else {
		cmd = exec.Command(cmp.Or(p.ralph, e.ralph), "run", "--no-tui", "-n", fmt.Sprint(tasks+1), "--ownership", p.ownership, benchPlan)
	}
	cmd.Dir = repo
	cmd.Env = append(gitEnv(repo), "PATH="+e.agentBin+":"+os.Getenv("PATH"), "FAKEAGENT_SCRIPT="+script,
		"BENCH_AGENT_LOG="+filepath.Join(dir, "agent.log"),
		// ralph's own cost, as in the overhead scenario (no sandbox, no
		// reviewer); ralphex has neither.
		"RALPH_SANDBOX_MODE=none", "RALPH_REVIEW_WHEN=off", "RALPHEX_CONFIG_DIR="+e.configDir)
	return cmd, nil
}

// timed runs p once and measures it.
func (e peerEnv) timed(p peer, dir string, tasks int) (peerRun, error) {
	cmd, err := e.prepare(p, dir, tasks)
	if err != nil {
		return peerRun{}, err
	}
	settle()
	wall, s, err := runSampled(cmd)
	if err != nil {
		return peerRun{}, err
	}
	if err := e.check(p, dir, tasks); err != nil {
		return peerRun{}, err
	}
	agent, n, gaps, err := loggedAgentTime(filepath.Join(dir, "agent.log"))
	if err != nil {
		return peerRun{}, err
	}
	if n != tasks {
		return peerRun{}, fmt.Errorf("%d agent runs, want %d", n, tasks)
	}
	gapMS := make([]float64, len(gaps))
	for i, g := range gaps {
		gapMS[i] = ms(g)
	}
	r := peerRun{perIterMS: ms(wall-agent) / float64(n), gapMS: median(gapMS), rssMB: float64(s.peakRSSKiB) / 1024}
	if p.tool == "ralph" {
		hist, n, err := agentTime(filepath.Join(cmd.Dir, ".ralph", "history.jsonl"))
		if err != nil {
			return peerRun{}, err
		}
		r.historyMS = ms(wall-hist) / float64(n)
	}
	return r, nil
}

// count runs p once with the git stand-in first on PATH and returns the
// git processes p started itself.
func (e peerEnv) count(p peer, dir string, tasks int, gitStandIn string) (gitCount, error) {
	cmd, err := e.prepare(p, dir, tasks)
	if err != nil {
		return gitCount{}, err
	}
	log := filepath.Join(dir, "git.log")
	cmd.Env = append(cmd.Env, "PATH="+gitStandIn+":"+e.agentBin+":"+os.Getenv("PATH"), "BENCH_GIT_LOG="+log, "BENCH_TOOL="+p.tool)
	if out, err := cmd.CombinedOutput(); err != nil {
		return gitCount{}, fmt.Errorf("%s in %s: %w\n%s", p.tool, cmd.Dir, err, out)
	}
	if err := e.check(p, dir, tasks); err != nil {
		return gitCount{}, err
	}
	b, err := os.ReadFile(log)
	if err != nil {
		return gitCount{}, err
	}
	// The agent marks its start: what comes before the first mark is the
	// run's start, between two marks an iteration's, after the last the
	// last iteration's and the run's end.
	segs := [][]string{nil}
	for line := range strings.SplitSeq(string(b), "\n") {
		switch line {
		case "":
		case "agent":
			segs = append(segs, nil)
		default:
			segs[len(segs)-1] = append(segs[len(segs)-1], line)
		}
	}
	if len(segs) != tasks+1 {
		return gitCount{}, fmt.Errorf("%s: %d agent runs, want %d", log, len(segs)-1, tasks)
	}
	c := gitCount{start: segs[0], iters: segs[1 : len(segs)-1], end: segs[len(segs)-1]}
	return c, nil
}

// check makes sure a run did what it was measured doing: every box
// ticked, one commit per task (and ralphex's move of the plan to
// completed/), a clean tree.
func (e peerEnv) check(p peer, dir string, tasks int) error {
	repo := filepath.Join(dir, "repo")
	plan, commits := filepath.Join(repo, benchPlan), tasks
	if p.tool == "ralphex" {
		plan, commits = filepath.Join(repo, filepath.Dir(benchPlan), "completed", filepath.Base(benchPlan)), tasks+1
	}
	b, err := os.ReadFile(plan)
	if err != nil {
		return err
	}
	if n := bytes.Count(b, []byte("\n- [x] ")); n != tasks {
		return fmt.Errorf("%s: %d boxes ticked, want %d", plan, n, tasks)
	}
	return checkCommitted(repo, commits)
}

// headingProject writes a plan of tasks "### Task N:" sections of one box
// each at benchPlan in dir, and makes dir a git repository with one commit
// holding it and a .gitignore of .ralph/ (ralphex ignores its own
// directory).
func headingProject(dir string, tasks int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Bench plan\n\n## Overview\n\n%d one-line tasks.\n", tasks)
	for i := 1; i <= tasks; i++ {
		fmt.Fprintf(&b, "\n### Task %d: Task %d\n\n- [ ] work-%03d\n", i, i, i)
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(benchPlan)), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, benchPlan), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return gitInit(dir)
}

// peerScenario is the fake agent's script for p: one block per task.
func peerScenario(p peer, tasks int) string {
	var b strings.Builder
	for i := 1; i <= tasks; i++ {
		if i > 1 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "touch work-%03d.txt\n", i)
		if p.ownership == "runner" {
			b.WriteString("final <promise>TASK_DONE</promise>\n")
			continue
		}
		fmt.Fprintf(&b, "exec sed -i 's/^- \\[ \\] work-%03d$/- [x] work-%03d/' %s && git add -A && git commit -q -m 'feat: task %d'\n",
			i, i, benchPlan, i)
		// ralphex reads assistant messages, not the result, for its signal.
		if p.tool == "ralphex" && i == tasks {
			b.WriteString("say <<<RALPHEX:ALL_TASKS_DONE>>>\n")
			continue
		}
		fmt.Fprintf(&b, "say Task %d done.\n", i)
	}
	return b.String()
}

// loggedAgentTime sums the agent's own times in the timed agent's log,
// counts its runs and returns the gaps between one's end and the next's
// start (the agents run one after the other, and log in that order).
func loggedAgentTime(log string) (total time.Duration, n int, gaps []time.Duration, err error) {
	var lastEnd int64
	total, n, err = sumLines(log, func(line []byte) (time.Duration, error) {
		var start, end int64
		if _, err := fmt.Sscanf(string(line), "%d %d", &start, &end); err != nil {
			return 0, fmt.Errorf("%s: %q: %w", log, line, err)
		}
		if lastEnd != 0 {
			gaps = append(gaps, time.Duration(start-lastEnd))
		}
		lastEnd = end
		return time.Duration(end - start), nil
	})
	return total, n, gaps, err
}

// runSampled runs cmd, sampling its own peak RSS and CPU, and returns its
// wall time.
func runSampled(cmd *exec.Cmd) (time.Duration, self, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, self{}, err
	}
	done := make(chan struct{})
	sampled := make(chan self)
	go func() { sampled <- sample(cmd.Process.Pid, done) }()
	err := cmd.Wait()
	wall := time.Since(start)
	close(done)
	s := <-sampled
	if err != nil {
		return 0, s, fmt.Errorf("%s in %s: %w\n%s", filepath.Base(cmd.Path), cmd.Dir, err, out.String())
	}
	return wall, s, nil
}

func printPeers(rev string, tasks int, runners []peer, measured map[string][]peerRun, counted map[string]gitCount) {
	fmt.Printf("  ralphex %s built with its 2 s pause between iterations made 0; the agent answers at once (it writes a file,\n", rev[:12])
	fmt.Printf("  and where it owns the plan ticks its box with sed and commits with git add -A and git commit: one sh, three processes)\n")
	fmt.Printf("  outside the agent: wall time minus the agent's own time as it logs it (its main's first line to its last), over %d iterations\n\n", tasks)
	fmt.Println("| runner | per iteration outside the agent (the run's start and end shared out): median (min–max) | from one agent's end to the next's start: median (min–max) | peak RSS: median (max) | git processes the runner starts: run start / per iteration / run end |")
	fmt.Println("|---|---|---|---|---|")
	for _, p := range runners {
		rs := measured[p.key]
		per, gap := field(rs, func(r peerRun) float64 { return r.perIterMS }), field(rs, func(r peerRun) float64 { return r.gapMS })
		rss := field(rs, func(r peerRun) float64 { return r.rssMB })
		c := counted[p.key]
		fmt.Printf("| %s | %.2f ms (%.2f–%.2f) | %.2f ms (%.2f–%.2f) | %.1f MB (%.1f) | %d / %s / %d |\n", p.name,
			median(per), slices.Min(per), slices.Max(per), median(gap), slices.Min(gap), slices.Max(gap),
			median(rss), slices.Max(rss), len(c.start), perIteration(c), len(c.end))
	}
	fmt.Println()
	for _, p := range runners {
		rs := measured[p.key]
		fmt.Printf("  %s runs: %s ms\n", p.key, formatMS(field(rs, func(r peerRun) float64 { return r.perIterMS })))
		if p.tool == "ralph" {
			fmt.Printf("    as the overhead scenario measures it (the agent's time spawn to exit, from history): median %.2f ms\n",
				median(field(rs, func(r peerRun) float64 { return r.historyMS })))
		}
		c := counted[p.key]
		fmt.Printf("    git at the start: %s\n", gitSummary(c.start))
		if len(c.iters) > 0 {
			fmt.Printf("    git after iteration 1's agent: %s\n", gitSummary(c.iters[0]))
		}
		fmt.Printf("    git after the last agent (its iteration and the run's end): %s\n", gitSummary(c.end))
	}
	fmt.Println()
}

func field(rs []peerRun, f func(peerRun) float64) []float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return v
}

// perIteration is the git processes per iteration but the last: the
// median and, when the iterations differ, their range.
func perIteration(c gitCount) string {
	if len(c.iters) == 0 {
		return "–"
	}
	n := make([]float64, len(c.iters))
	for i, it := range c.iters {
		n[i] = float64(len(it))
	}
	if slices.Min(n) == slices.Max(n) {
		return fmt.Sprint(n[0])
	}
	return fmt.Sprintf("%g (%g–%g)", median(n), slices.Min(n), slices.Max(n))
}

// gitSummary counts git's subcommands: "rev-parse ×3, status ×1".
func gitSummary(cmds []string) string {
	if len(cmds) == 0 {
		return "none"
	}
	count := map[string]int{}
	for _, c := range cmds {
		f := strings.Fields(c)
		sub := "?"
		for i := 1; i < len(f); i++ {
			if f[i] == "-C" || f[i] == "-c" {
				i++ // and its value
				continue
			}
			if !strings.HasPrefix(f[i], "-") {
				sub = f[i]
				break
			}
		}
		count[sub]++
	}
	subs := make([]string, 0, len(count))
	for s := range count {
		subs = append(subs, s)
	}
	sort.Strings(subs)
	parts := make([]string, len(subs))
	for i, s := range subs {
		parts[i] = fmt.Sprintf("%s ×%d", s, count[s])
	}
	return fmt.Sprintf("%d: %s", len(cmds), strings.Join(parts, ", "))
}
