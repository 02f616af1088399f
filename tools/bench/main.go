// Command bench is ralph's whole-process benchmark: it builds ralph and the
// fake agent, runs real loops, and prints the figures that go in
// BENCHMARKS.md.
//
//   - overhead: a 50-task plan with an agent that answers at once; ralph's
//     time per iteration outside the agent process (wall time minus the
//     agent durations history records): without git, with git and agent
//     ownership (the agent commits), with git and runner ownership (ralph
//     commits).
//   - plansize (not run by default): the overhead loop without git on
//     plans of 50, 500 and 5,000 tasks.
//   - stream: one task whose agent streams 200 MB, including one 20 MB
//     line; ralph's peak RSS and CPU time.
//   - stream-mix: three tasks whose agent streams about 201 MB each in
//     Claude Code's stream-json: one 20 MB tool-result line, then Bash
//     tool calls whose results are 64 KiB lines of source code (printed
//     twice, as Claude Code does); ralph's peak RSS and its CPU time per
//     MB of stream read, decoded, written to the transcripts and shown.
//   - dialects: stream-mix in every other agent's own dialect, built
//     from its recorded sample (fakeagent's mix directive).
//   - sandbox: the overhead loop without git, with --sandbox none and
//     --sandbox bwrap; what the sandbox adds per iteration (wall time per
//     iteration, and the agent's own time, spawn to exit).
//   - leak (not run by default): 2,000 iterations; ralph's RSS and open
//     file descriptors from iteration 100 on.
//   - ralphex (not run by default): ralph (agent and runner ownership)
//     and ralphex, built from -ralphex-src with its pause between
//     iterations made 0, on one plan in ralphex's format: each one's time
//     per iteration outside the agent, peak RSS and git processes.
//
// Overhead, sandbox, leak and ralphex are in overhead.go, sandbox.go,
// leak.go and ralphex.go.
//
// Usage: go run ./tools/bench [-scenario overhead,plansize,stream,stream-mix,dialects,sandbox,leak,ralphex] [-modes nogit,agent,runner] [-runs 5] [-tasks 50] [-stream-mb 200] [-ralphex-src DIR]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	runs := flag.Int("runs", 5, "repetitions of each scenario")
	tasks := flag.Int("tasks", 50, "tasks in the overhead scenario")
	modes := flag.String("modes", "", "the overhead scenario's modes to run, comma-separated: nogit, agent, runner (all when empty)")
	streamMB := flag.Int("stream-mb", 200, "MB the agent streams in the stream scenario")
	lineMB := flag.Int("line-mb", 20, "MB of the single long line in the stream scenario")
	scenarios := flag.String("scenario", "overhead,stream,stream-mix,dialects,sandbox", "scenarios to run, comma-separated: overhead, plansize, stream, stream-mix, dialects, sandbox, leak, ralphex")
	leakIters := flag.Int("leak-iterations", 2000, "iterations of the leak scenario")
	prebuilt := flag.String("bin", "", "use the ralph and claude (the fake agent) built in this directory, to compare builds")
	against := flag.String("against", "", "with the ralphex scenario: also run the ralph built in this directory, interleaved run by run, to compare two builds side by side with ralphex")
	rx := ralphexSource{}
	flag.StringVar(&rx.dir, "ralphex-src", "", "a git clone of github.com/umputun/ralphex, for the ralphex scenario")
	flag.StringVar(&rx.rev, "ralphex-rev", ralphexRev, "the ralphex commit the ralphex scenario builds")
	flag.Parse()
	// The runs start in their projects' directories: the builds' must
	// not depend on where bench was started.
	for _, dir := range []*string{prebuilt, against} {
		if *dir == "" {
			continue
		}
		abs, err := filepath.Abs(*dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		*dir = abs
	}
	if err := run(*scenarios, *modes, *prebuilt, *against, rx, *leakIters, *runs, *tasks, *streamMB, *lineMB); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(scenarios, modes, prebuilt, against string, rx ralphexSource, leakIters, runs, tasks, streamMB, lineMB int) error {
	tmp, err := os.MkdirTemp("", "ralph-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := prebuilt
	if bin == "" {
		bin = filepath.Join(tmp, "bin")
		if err := build(bin); err != nil {
			return err
		}
	}
	fmt.Printf("machine: %s/%s, %d CPUs, %s\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())

	if want(scenarios, "overhead") {
		if err := overheadAll(bin, tmp, runs, tasks, modes); err != nil {
			return err
		}
	}
	if want(scenarios, "plansize") {
		if err := planSizes(bin, tmp, runs); err != nil {
			return err
		}
	}
	if want(scenarios, "sandbox") {
		if err := sandboxScenario(bin, runs, tasks); err != nil {
			return err
		}
	}
	if want(scenarios, "ralphex") {
		if err := ralphexScenario(bin, tmp, rx, runs, tasks, against); err != nil {
			return err
		}
	}
	if want(scenarios, "leak") {
		if err := leak(bin, tmp, leakIters); err != nil {
			return err
		}
	}
	if want(scenarios, "stream-mix") {
		if err := streamMixScenario(bin, tmp, runs); err != nil {
			return err
		}
	}
	if want(scenarios, "dialects") {
		if err := dialectsScenario(bin, tmp, runs); err != nil {
			return err
		}
	}
	if !want(scenarios, "stream") {
		return nil
	}

	var rss, cpu, wall []float64
	for i := range runs {
		dir := filepath.Join(tmp, fmt.Sprintf("stream-%d", i))
		r, c, w, err := stream(bin, dir, streamMB, lineMB)
		if err != nil {
			return err
		}
		rss, cpu, wall = append(rss, r), append(cpu, c), append(wall, w)
	}
	fmt.Printf("stream: agent writes %d MB including one %d MB line, %d runs\n", streamMB, lineMB, runs)
	fmt.Printf("  ralph peak RSS (VmHWM, ralph alone): median %.1f MB, max %.1f MB\n", median(rss), slices.Max(rss))
	fmt.Printf("  ralph CPU (user+sys, ralph alone): median %.2f s (%.0f MB/s); wall: median %.2f s\n",
		median(cpu), float64(streamMB)/median(cpu), median(wall))
	return nil
}

// The stream-mix scenario: per task, one 20 MB tool-result line, then
// 64 KiB tool-result lines to about 201 MB.
const (
	mixTasks     = 3
	mixTaskBytes = 201 << 20
	mixLineBytes = 20 << 20
	mixToolLine  = 64 << 10
)

func streamMixScenario(bin, tmp string, runs int) error {
	var rss, cpu, wall, rate []float64
	var streamed int64
	// Run 0 warms up and is not counted. Each run's 600 MB of transcripts
	// is removed once measured: on a virtual machine the kernel's first
	// touch of page-cache memory the host has not backed yet costs more
	// than the write itself (600 MB to fresh pages: 1.4 s of system time
	// here, to pages freed a moment ago: 0.2 s), and which runs paid it
	// would otherwise depend on what ran before.
	for i := range runs + 1 {
		dir := filepath.Join(tmp, fmt.Sprintf("stream-mix-%d", i))
		r, c, w, n, err := streamMix(bin, dir)
		if err != nil {
			return err
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if i == 0 {
			continue
		}
		rss, cpu, wall = append(rss, r), append(cpu, c), append(wall, w)
		rate = append(rate, float64(n)/1e6/c)
		streamed = n
	}
	fmt.Printf("stream-mix: %d tasks, the agent writes about %d MB each in Claude stream-json: one %d MB tool-result line, then %d KiB tool-result lines; %d runs\n",
		mixTasks, mixTaskBytes>>20, mixLineBytes>>20, mixToolLine>>10, runs)
	fmt.Printf("  ralph peak RSS (VmHWM, ralph alone): median %.1f MB, max %.1f MB\n", median(rss), slices.Max(rss))
	fmt.Printf("  ralph CPU (user+sys, ralph alone): median %.2f s for %.0f MB of transcripts: median %.0f MB/s (min %.0f, max %.0f); wall: median %.2f s\n",
		median(cpu), float64(streamed)/1e6, median(rate), slices.Min(rate), slices.Max(rate), median(wall))
	return nil
}

// streamMix runs the stream-mix scenario once; n is the bytes the agents
// streamed, as the transcripts on disk hold them.
func streamMix(bin, dir string) (rssMB, cpuS, wallS float64, n int64, err error) {
	scenario := fmt.Sprintf("say starting\nbigline %d\ntoolstream %d %d\nfinal <promise>TASK_DONE</promise>\n",
		mixLineBytes, mixTaskBytes-mixLineBytes, mixToolLine)
	if err := project(dir, scenario, mixTasks); err != nil {
		return 0, 0, 0, 0, err
	}
	wall, s, err := ralphSampled(bin, dir, "--idle-timeout", "5m")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	outs, err := filepath.Glob(filepath.Join(dir, ".ralph", "runs", "*", "iter-*.out"))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if len(outs) != mixTasks {
		return 0, 0, 0, 0, fmt.Errorf("%d transcripts in %s, want %d", len(outs), dir, mixTasks)
	}
	for _, o := range outs {
		fi, err := os.Stat(o)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		n += fi.Size()
	}
	return float64(s.peakRSSKiB) / 1024, s.cpu.Seconds(), wall.Seconds(), n, nil
}

// build compiles ralph and the fake agent, which goes on PATH as claude so
// the real Claude adapter is what reads it.
func build(bin string) error {
	for _, b := range [][2]string{{"ralph", "./cmd/ralph"}, {"claude", "./internal/fakeagent/cmd/fakeagent"}} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(bin, b[0]), b[1])
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", b[0], err)
		}
	}
	return nil
}

func project(dir, scenario string, tasks int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var stories []string
	for i := 1; i <= tasks; i++ {
		stories = append(stories, fmt.Sprintf(`    {"id": "T-%03d", "title": "Task %d", "priority": %d, "passes": false}`, i, i, i))
	}
	prd := "{\n  \"userStories\": [\n" + strings.Join(stories, ",\n") + "\n  ]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "prd.json"), []byte(prd), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "scenario"), []byte(scenario), 0o644)
}

// self is ralph's own resource use, read from /proc while it runs: the
// rusage of a reaped child also counts the agents it reaped.
type self struct {
	peakRSSKiB int64
	cpu        time.Duration
}

// sample polls /proc/PID until the process is gone and keeps the last
// reading: VmHWM is the peak RSS so far, utime+stime its CPU so far.
func sample(pid int, done <-chan struct{}) self {
	var s self
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			for line := range strings.SplitSeq(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					var kib int64
					_, _ = fmt.Sscanf(strings.TrimSpace(v), "%d", &kib)
					s.peakRSSKiB = max(s.peakRSSKiB, kib)
				}
			}
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			// Fields after the command name: state is 3rd, utime 14th, stime 15th.
			if i := strings.LastIndexByte(string(b), ')'); i > 0 {
				f := strings.Fields(string(b)[i+2:])
				if len(f) > 12 {
					var ut, st int64
					_, _ = fmt.Sscanf(f[11], "%d", &ut)
					_, _ = fmt.Sscanf(f[12], "%d", &st)
					s.cpu = time.Duration(ut+st) * (time.Second / 100) // USER_HZ
				}
			}
		}
		select {
		case <-done:
			return s
		case <-tick.C:
		}
	}
}

// ralphSampled runs one loop, sampling ralph's own peak RSS and CPU.
func ralphSampled(bin, dir string, args ...string) (time.Duration, self, error) {
	cmd := exec.Command(filepath.Join(bin, "ralph"), append([]string{"run", "--no-tui", "--no-commit"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKEAGENT_SCRIPT="+filepath.Join(dir, "scenario"),
		"HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"),
		// ralph's own cost, as before the sandbox (the sandbox scenario
		// measures that), and no reviewer (ralphCmd).
		"RALPH_SANDBOX_MODE=none", "RALPH_REVIEW_WHEN=off")
	return runSampled(cmd)
}

func stream(bin, dir string, streamMB, lineMB int) (rssMB, cpuS, wallS float64, err error) {
	scenario := fmt.Sprintf("say starting\nstream %d\nbigline %d\nstream %d\nfinal <promise>TASK_DONE</promise>\n",
		(streamMB-lineMB)/2<<20, lineMB<<20, (streamMB-lineMB)/2<<20)
	if err := project(dir, scenario, 1); err != nil {
		return 0, 0, 0, err
	}
	wall, s, err := ralphSampled(bin, dir, "--idle-timeout", "5m")
	if err != nil {
		return 0, 0, 0, err
	}
	return float64(s.peakRSSKiB) / 1024, s.cpu.Seconds(), wall.Seconds(), nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// want reports whether the comma-separated list names scenario.
func want(list, scenario string) bool {
	return slices.Contains(strings.Split(list, ","), scenario)
}
