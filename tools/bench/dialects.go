package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ralph-loop/ralph/internal/fakeagent"
)

// dialectsScenario is stream-mix in every agent's own dialect: per run one
// task whose agent (the fake agent, on PATH under that agent's executable
// name) prints about 201 MB built from the agent's recorded sample, one
// 20 MB tool-result line then 64 KiB ones; ralph's CPU per MB read,
// decoded, written to the transcript and shown.
func dialectsScenario(bin, tmp string, runs int) error {
	fixtures, err := filepath.Abs(filepath.Join("internal", "agent", "testdata"))
	if err != nil {
		return err
	}
	// The agents' executables, as their adapters name them.
	exe := map[string]string{"cursor": "cursor-agent"}
	fmt.Printf("dialects: 1 task, the agent writes about %d MB in its own dialect: one %d MB tool-result line, then %d KiB tool-result lines; %d runs (after one not counted)\n",
		mixTaskBytes>>20, mixLineBytes>>20, mixToolLine>>10, runs)
	for _, d := range fakeagent.Dialects() {
		name := d.Agent
		if e, ok := exe[name]; ok {
			name = e
		}
		agentBin := filepath.Join(tmp, "dialect-bin-"+d.Agent)
		if err := os.MkdirAll(agentBin, 0o755); err != nil {
			return err
		}
		if err := copyFile(filepath.Join(bin, "claude"), filepath.Join(agentBin, name)); err != nil {
			return err
		}
		if err := copyFile(filepath.Join(bin, "ralph"), filepath.Join(agentBin, "ralph")); err != nil {
			return err
		}
		scenario := fmt.Sprintf("mix %s %s %d %d %d\n", d.Agent, filepath.Join(fixtures, d.Fixture),
			mixLineBytes, mixToolLine, mixTaskBytes)
		var rss, rate []float64
		for i := range runs + 1 {
			dir := filepath.Join(tmp, fmt.Sprintf("dialect-%s-%d", d.Agent, i))
			if err := project(dir, scenario, 1); err != nil {
				return err
			}
			_, s, err := ralphSampled(agentBin, dir, "--agent", d.Agent, "-n", "1", "--idle-timeout", "5m")
			if err != nil {
				return fmt.Errorf("%s: %w", d.Agent, err)
			}
			n, err := transcriptBytes(dir, 1)
			if err != nil {
				return fmt.Errorf("%s: %w", d.Agent, err)
			}
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			if i == 0 {
				continue // the warm-up, see streamMixScenario
			}
			rss = append(rss, float64(s.peakRSSKiB)/1024)
			rate = append(rate, float64(n)/1e6/s.cpu.Seconds())
		}
		fmt.Printf("  %-9s ralph CPU per MB: median %4.0f MB/s (min %.0f, max %.0f); peak RSS median %.1f MB\n",
			d.Agent, median(rate), slices.Min(rate), slices.Max(rate), median(rss))
	}
	fmt.Println()
	return nil
}

// transcriptBytes is the size of the want transcripts of the run in dir:
// what the agents streamed.
func transcriptBytes(dir string, want int) (int64, error) {
	outs, err := filepath.Glob(filepath.Join(dir, ".ralph", "runs", "*", "iter-*.out"))
	if err != nil {
		return 0, err
	}
	if len(outs) != want {
		return 0, fmt.Errorf("%d transcripts in %s, want %d", len(outs), dir, want)
	}
	var n int64
	for _, o := range outs {
		fi, err := os.Stat(o)
		if err != nil {
			return 0, err
		}
		n += fi.Size()
	}
	return n, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
