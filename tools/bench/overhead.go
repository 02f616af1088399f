package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// overheadMode is one way of running the overhead scenario.
type overheadMode struct {
	name, key string
	// git: the project is a git repository and ralph commits (unless
	// ownership is agent and the agent commits first).
	git bool
	// ownership is runner or agent. With agent ownership the agent ticks
	// its story, writes a file and commits its own work, as ralph.sh
	// agents do; with runner ownership it writes a file and claims the
	// task, and ralph marks it done and commits.
	ownership string
}

var overheadModes = []overheadMode{
	{name: "no git, runner ownership, --no-commit", key: "nogit"},
	{name: "git, agent ownership, the agent commits", key: "agent", git: true, ownership: "agent"},
	{name: "git, runner ownership, ralph commits", key: "runner", git: true, ownership: "runner"},
}

// overheadAll runs every overhead mode runs times and prints the median
// and the spread of ralph's time per iteration outside the agent.
func overheadAll(bin, tmp string, runs, tasks int, modes string) error {
	for mi, m := range overheadModes {
		if modes != "" && !want(modes, m.key) {
			continue
		}
		var per, agentMS []float64
		for i := range runs {
			dir := filepath.Join(tmp, fmt.Sprintf("overhead-%d-%d", mi, i))
			o, a, err := overheadRun(bin, dir, tasks, tasks, m)
			if err != nil {
				return fmt.Errorf("overhead (%s): %w", m.name, err)
			}
			per = append(per, o)
			agentMS = append(agentMS, a)
		}
		fmt.Printf("overhead: %d tasks, %d runs, %s, agent answers at once\n", tasks, runs, m.name)
		fmt.Printf("  ralph overhead per iteration (excluding the agent process): median %.2f ms, min %.2f ms, max %.2f ms\n",
			median(per), slices.Min(per), slices.Max(per))
		fmt.Printf("    runs: %s\n", formatMS(per))
		fmt.Printf("  agent process per iteration (spawn to exit, as history records): median %.2f ms\n\n", median(agentMS))
	}
	return nil
}

func formatMS(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}

// overheadRun runs one loop of iters iterations over a fresh project of
// tasks stories and returns ralph's time per iteration outside the agent
// process and the agent's own.
func overheadRun(bin, dir string, tasks, iters int, m overheadMode) (perIterMS, agentPerIterMS float64, err error) {
	repo := filepath.Join(dir, "repo")
	script := filepath.Join(dir, "scenario")
	if err := gitProject(repo, tasks, m.git); err != nil {
		return 0, 0, err
	}
	if err := os.WriteFile(script, []byte(overheadScenario(iters, m)), 0o644); err != nil {
		return 0, 0, err
	}
	limit := iters
	if iters == tasks {
		limit++ // one more than needed: the run ends because the plan is done
	}
	args := []string{"run", "--no-tui", "-n", fmt.Sprint(limit)}
	if !m.git {
		args = append(args, "--no-commit")
	}
	if m.ownership != "" {
		args = append(args, "--ownership", m.ownership)
	}
	settle()
	start := time.Now()
	if out, err := ralphCmd(bin, repo, script, args...).CombinedOutput(); err != nil {
		// Exit 3: the iteration limit stopped it with tasks open, as
		// asked when iters < tasks.
		var ee *exec.ExitError
		if iters == tasks || !errors.As(err, &ee) || ee.ExitCode() != 3 {
			return 0, 0, fmt.Errorf("ralph in %s: %w\n%s", repo, err, out)
		}
	}
	wall := time.Since(start)
	agentTotal, n, err := agentTime(filepath.Join(repo, ".ralph", "history.jsonl"))
	if err != nil {
		return 0, 0, err
	}
	if n != iters {
		return 0, 0, fmt.Errorf("%d iterations, want %d", n, iters)
	}
	if m.git {
		if err := checkCommitted(repo, iters); err != nil {
			return 0, 0, err
		}
	}
	return ms(wall-agentTotal) / float64(n), ms(agentTotal) / float64(n), nil
}

// settle lets the file system settle before a run: on ext4 without a
// journal (this machine's, as on many VMs), the files freed in the last
// seconds slow the creation of new ones, as the inode allocator steps
// over each recently freed inode; once written back (sync), they count
// for 5 s (300 s while still dirty). What the run before (or the set-up)
// freed is then not charged to this one; what the run itself frees is.
func settle() {
	syscall.Sync()
	time.Sleep(6 * time.Second)
}

// overheadScenario is the fake agent's script: one block per invocation.
func overheadScenario(tasks int, m overheadMode) string {
	var b strings.Builder
	for i := 1; i <= tasks; i++ {
		if i > 1 {
			b.WriteString("---\n")
		}
		if !m.git {
			b.WriteString("final <promise>TASK_DONE</promise>\n")
			continue
		}
		fmt.Fprintf(&b, "touch work-%03d.txt\n", i)
		if m.ownership == "agent" {
			fmt.Fprintf(&b, "pass prd.json T-%03d\n", i)
			fmt.Fprintf(&b, "exec git add -A && git commit -q -m 'T-%03d'\n", i)
			b.WriteString("final Story done.\n")
			continue
		}
		b.WriteString("final <promise>TASK_DONE</promise>\n")
	}
	return b.String()
}

// gitProject writes a plan of tasks stories in dir, with git a repository
// with one commit holding the plan and a .gitignore of .ralph/.
func gitProject(dir string, tasks int, git bool) error {
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
	if !git {
		return nil
	}
	return gitInit(dir)
}

// gitInit makes dir a git repository with a .gitignore of .ralph/ and one
// commit holding what dir holds.
func gitInit(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(".ralph/\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = gitEnv(dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// gitEnv is a fixed identity and no user or system configuration. HOME
// is beside the repository: ralph keeps state there (the trust store),
// which must not be an untracked change of the tree.
func gitEnv(dir string) []string {
	home := filepath.Join(filepath.Dir(dir), "home")
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
}

// ralphCmd is ralph run in dir with the fake agent on PATH as claude,
// following script.
func ralphCmd(bin, dir, script string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(bin, "ralph"), args...)
	cmd.Dir = dir
	// ralph's own cost, as before the sandbox (the sandbox scenario
	// measures that), and one agent run per iteration: no reviewer, which
	// review.when = "auto" brings to these projects without gates.
	cmd.Env = append(gitEnv(dir), "PATH="+bin+":"+os.Getenv("PATH"), "FAKEAGENT_SCRIPT="+script, "RALPH_SANDBOX_MODE=none",
		"RALPH_REVIEW_WHEN=off")
	return cmd
}

// agentTime sums the agent durations history records (each ends with
// task_done or plan_done) and counts the iterations.
func agentTime(history string) (time.Duration, int, error) {
	return sumLines(history, func(line []byte) (time.Duration, error) {
		var rec struct {
			Outcome   string    `json:"outcome"`
			StartedAt time.Time `json:"started_at"`
			EndedAt   time.Time `json:"ended_at"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return 0, err
		}
		if rec.Outcome != "task_done" && rec.Outcome != "plan_done" {
			return 0, fmt.Errorf("iteration outcome %s, want task_done", rec.Outcome)
		}
		return rec.EndedAt.Sub(rec.StartedAt), nil
	})
}

// sumLines adds up what duration reads in each line of the file at path
// and counts the lines.
func sumLines(path string, duration func(line []byte) (time.Duration, error)) (time.Duration, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var total time.Duration
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		d, err := duration(sc.Bytes())
		if err != nil {
			return 0, 0, err
		}
		total += d
		n++
	}
	return total, n, sc.Err()
}

// checkCommitted makes sure the run did what it was measured doing: one
// commit per task on top of the initial one and a clean tree.
func checkCommitted(dir string, tasks int) error {
	cmd := exec.Command("git", "rev-list", "--count", "HEAD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(string(out)); got != fmt.Sprint(tasks+1) {
		return fmt.Errorf("%s commits, want %d", got, tasks+1)
	}
	cmd = exec.Command("git", "status", "--porcelain")
	cmd.Dir = dir
	if out, err = cmd.Output(); err != nil {
		return err
	}
	if len(out) > 0 {
		return fmt.Errorf("uncommitted changes left:\n%s", out)
	}
	return nil
}

// planSizes runs 50 iterations of the overhead loop without git on plans
// of 50, 500 and 5,000 tasks: what an iteration costs as the plan grows.
func planSizes(bin, tmp string, runs int) error {
	const iters = 50
	fmt.Printf("plan size: %d iterations, no git, runner ownership, --no-commit, agent answers at once; %d runs each\n", iters, runs)
	for _, n := range []int{50, 500, 5000} {
		var per []float64
		for i := range runs {
			dir := filepath.Join(tmp, fmt.Sprintf("plansize-%d-%d", n, i))
			o, _, err := overheadRun(bin, dir, n, iters, overheadModes[0])
			if err != nil {
				return fmt.Errorf("plan size %d: %w", n, err)
			}
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			per = append(per, o)
		}
		fmt.Printf("  %5d tasks: ralph overhead per iteration median %.2f ms (min %.2f, max %.2f)\n",
			n, median(per), slices.Min(per), slices.Max(per))
	}
	fmt.Println()
	return nil
}
