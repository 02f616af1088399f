package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// leakEvery is how often, in iterations, the leak scenario samples ralph.
const leakEvery = 100

// leakSample is ralph's resident memory and open descriptors at one
// iteration.
type leakSample struct {
	iteration int
	rssKiB    int64
	fds       int
}

// leak runs iters iterations (runner ownership, ralph commits each task in
// a git repository) and samples ralph's VmRSS and /proc/PID/fd every
// leakEvery iterations. The samples are taken while the agent holds still
// (it says "sample N", then sleeps), so the descriptors ralph has open are
// the same set each time: the transcript and the agent's pipes.
func leak(bin, tmp string, iters int) error {
	dir := filepath.Join(tmp, "leak")
	repo := filepath.Join(dir, "repo")
	script := filepath.Join(dir, "scenario")
	if err := gitProject(repo, iters, true); err != nil {
		return err
	}
	var b strings.Builder
	for i := 1; i <= iters; i++ {
		if i > 1 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "touch work-%04d.txt\n", i)
		if i%leakEvery == 0 {
			fmt.Fprintf(&b, "say sample %d\nsleep 300ms\n", i)
		}
		b.WriteString("final <promise>TASK_DONE</promise>\n")
	}
	if err := os.WriteFile(script, []byte(b.String()), 0o644); err != nil {
		return err
	}
	cmd := ralphCmd(bin, repo, script, "run", "--json", "-n", strconv.Itoa(iters+1))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	var samples []leakSample
	rd := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := rd.ReadBytes('\n')
		if n, ok := sampleAt(line); ok {
			s, serr := procSample(pid)
			if serr != nil {
				return serr
			}
			s.iteration = n
			samples = append(samples, s)
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("ralph in %s: %w\n%s", repo, err, stderr.String())
	}
	wall := time.Since(start)
	if len(samples) != iters/leakEvery {
		return fmt.Errorf("%d samples, want %d", len(samples), iters/leakEvery)
	}
	if err := checkCommitted(repo, iters); err != nil {
		return err
	}
	first, last := samples[0], samples[len(samples)-1]
	var maxRSS int64
	minFD, maxFD := first.fds, first.fds
	for _, s := range samples {
		maxRSS = max(maxRSS, s.rssKiB)
		minFD, maxFD = min(minFD, s.fds), max(maxFD, s.fds)
	}
	fmt.Printf("leak: %d iterations (runner ownership, ralph commits each task), %.0f s\n", iters, wall.Seconds())
	fmt.Printf("  ralph VmRSS: iteration %d %.1f MB, iteration %d %.1f MB (growth %+.2f MB), max %.1f MB\n",
		first.iteration, kib(first.rssKiB), last.iteration, kib(last.rssKiB), kib(last.rssKiB-first.rssKiB), kib(maxRSS))
	fmt.Printf("  ralph open fds: iteration %d %d, iteration %d %d (min %d, max %d over %d samples)\n",
		first.iteration, first.fds, last.iteration, last.fds, minFD, maxFD, len(samples))
	var row []string
	for _, s := range samples {
		row = append(row, fmt.Sprintf("%d:%.1fMB/%dfd", s.iteration, kib(s.rssKiB), s.fds))
	}
	fmt.Printf("    samples: %s\n\n", strings.Join(row, " "))
	return nil
}

// sampleAt reports whether an event line of --json is the agent saying
// "sample N", and N.
func sampleAt(line []byte) (int, bool) {
	if !strings.Contains(string(line), "sample ") {
		return 0, false
	}
	var e struct {
		Event string `json:"event"`
		Agent struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"agent"`
	}
	if json.Unmarshal(line, &e) != nil || e.Event != "agent" {
		return 0, false
	}
	rest, ok := strings.CutPrefix(e.Agent.Text, "sample ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(rest))
	return n, err == nil
}

// procSample reads pid's VmRSS and counts its open descriptors.
func procSample(pid int) (leakSample, error) {
	var s leakSample
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			_, _ = fmt.Sscanf(strings.TrimSpace(v), "%d", &s.rssKiB)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.fds = len(fds)
	return s, nil
}

func kib(v int64) float64 { return float64(v) / 1024 }
