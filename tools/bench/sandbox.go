package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// sandboxScenario runs the overhead loop without git (tasks stories, an
// agent that answers at once, --no-commit) runs times with --sandbox none
// and with --sandbox bwrap, and prints what the sandbox adds per
// iteration: the difference of the wall time per iteration, and of the
// agent's own time (spawn to exit, which holds bwrap's start). The
// projects are outside /tmp, which the sandbox makes private.
func sandboxScenario(bin string, runs, tasks int) error {
	root, err := os.MkdirTemp("/var/tmp", "ralph-bench-sandbox-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	wall := map[string][]float64{}
	agent := map[string][]float64{}
	modes := []string{"none", "bwrap"}
	for i := range runs {
		for _, mode := range modes { // interleaved: the machine's load hits both alike
			w, a, err := sandboxRun(bin, filepath.Join(root, fmt.Sprintf("%s-%d", mode, i)), tasks, mode)
			if err != nil {
				return fmt.Errorf("sandbox (%s): %w", mode, err)
			}
			wall[mode], agent[mode] = append(wall[mode], w), append(agent[mode], a)
		}
	}
	fmt.Printf("sandbox: %d tasks, %d runs each, no git, --no-commit, agent answers at once\n", tasks, runs)
	for _, mode := range modes {
		fmt.Printf("  --sandbox %-5s wall per iteration: median %.2f ms (%s); agent process: median %.2f ms\n",
			mode, median(wall[mode]), formatMS(wall[mode]), median(agent[mode]))
	}
	fmt.Printf("  the sandbox adds per iteration: %.2f ms (wall), %.2f ms (agent process)\n\n",
		median(wall["bwrap"])-median(wall["none"]), median(agent["bwrap"])-median(agent["none"]))
	return nil
}

// sandboxRun runs one loop in mode and returns the wall time and the
// agent's time per iteration.
func sandboxRun(bin, dir string, tasks int, mode string) (wallMS, agentMS float64, err error) {
	repo := filepath.Join(dir, "repo")
	script := filepath.Join(dir, "agent", "scenario")
	if err := gitProject(repo, tasks, false); err != nil {
		return 0, 0, err
	}
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		return 0, 0, err
	}
	if err := os.WriteFile(script, []byte(overheadScenario(tasks, overheadMode{})), 0o644); err != nil {
		return 0, 0, err
	}
	cmd := ralphCmd(bin, repo, script, "run", "--no-tui", "--no-commit", "-n", fmt.Sprint(tasks+1), "--sandbox", mode)
	// The fake agent reads its scenario, and counts its runs beside it.
	cmd.Env = append(cmd.Env, "RALPH_SANDBOX_ENV=FAKEAGENT_*", "RALPH_SANDBOX_ALLOW_WRITE="+filepath.Dir(script))
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("ralph in %s: %w\n%s", repo, err, out)
	}
	wall := time.Since(start)
	agentTotal, n, err := agentTime(filepath.Join(repo, ".ralph", "history.jsonl"))
	if err != nil {
		return 0, 0, err
	}
	if n != tasks {
		return 0, 0, fmt.Errorf("%d iterations, want %d", n, tasks)
	}
	return ms(wall) / float64(n), ms(agentTotal) / float64(n), nil
}
