package cli

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// A full disk stops the run with a clear error and exit 1, and never
// leaves the plan or state.json cut short; a transcript that cannot be
// written gives its space back so the iteration's result is kept. Once
// space is freed, the next run goes on. The disk is a small tmpfs the
// test mounts (as root); where it cannot, the test says why and skips.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs and runs ralph on it")
	}
	t.Parallel()
	const plan = "{\"userStories\": [\n" +
		"  {\"id\": \"US-001\", \"title\": \"First\", \"passes\": true},\n" +
		"  {\"id\": \"US-002\", \"title\": \"Second\", \"passes\": false}\n]}\n"
	t.Run("transcript", func(t *testing.T) {
		t.Parallel()
		// The agent's output fills the disk: the transcript is emptied,
		// and the task it finished is marked done all the same.
		d := newDiskFullProject(t, plan, "stream 2000000\nfinal <promise>TASK_DONE</promise>\n")
		out, err := d.run(t)
		d.exitedOne(t, err, out, "could not write the transcript (write ", "no space left on device", "the disk is full: free some space")
		if st := d.state(t); st.Status != state.StatusFailed {
			t.Errorf("state says %q, want failed", st.Status)
		}
		d.wantPlan(t, map[string]task.Status{"US-001": task.StatusDone, "US-002": task.StatusDone})
		if hist := d.history(t); len(hist) != 1 || hist[0].Outcome != "task_done" {
			t.Errorf("history %+v, want one task_done line", hist)
		}
	})
	t.Run("plan, state and history", func(t *testing.T) {
		t.Parallel()
		// The agent ticks its task (which ralph must put back) and then
		// fills the disk: putting the mark back, the history line and
		// the final state.json (a new file renamed over the old) fail,
		// while the record of the task's acceptance (an empty file) is
		// made. Nothing is cut short; freeing space, the next run
		// records the iteration and finishes the task the failed run had
		// accepted, and the plan.
		d := newDiskFullProject(t, plan,
			"exec sed 's/false/true/' prd.json > prd.new && mv prd.new prd.json\n"+
				"exec dd if=/dev/zero of=fill bs=4k 2>/dev/null; true\n"+
				"final <promise>TASK_DONE</promise>\n---\nfinal <promise>TASK_DONE</promise>\n")
		out, err := d.run(t)
		d.exitedOne(t, err, out, "append history: write ", "no space left on device", "the disk is full: free some space")
		if !strings.Contains(out, "could not take in the changes made to") {
			t.Errorf("no warning about the plan's mark it could not put back:\n%s", out)
		}
		d.state(t)
		d.history(t)
		d.wantPlan(t, map[string]task.Status{"US-001": task.StatusDone, "US-002": task.StatusDone}) // the agent's mark, whole
		if tmp, _ := filepath.Glob(filepath.Join(d.dir, ".prd.json*")); len(tmp) > 0 {
			t.Errorf("a failed write left its temporary file: %v", tmp)
		}

		if err := os.Remove(filepath.Join(d.dir, "fill")); err != nil {
			t.Fatal(err)
		}
		out, err = d.run(t)
		if err != nil {
			t.Fatalf("the run after freeing space: %v\n%s", err, out)
		}
		if !strings.Contains(out, "task US-002, which it had accepted: finished") || !strings.Contains(out, "all tasks done") {
			t.Errorf("the next run did not finish US-002 and the plan:\n%s", out)
		}
		if hist := d.history(t); len(hist) != 1 || hist[0].Outcome != "task_done" ||
			!strings.Contains(hist[0].Error, "the next run marked it done and committed it") {
			t.Errorf("history %+v, want the failed run's iteration recorded as task_done by the next run", hist)
		}
		d.wantPlan(t, map[string]task.Status{"US-001": task.StatusDone, "US-002": task.StatusDone})
	})
}

// diskFullProject is a project on a small tmpfs.
type diskFullProject struct {
	dir string
	env []string
}

func newDiskFullProject(t *testing.T, plan, scenario string) *diskFullProject {
	t.Helper()
	home := t.TempDir()
	mnt := filepath.Join(home, "disk")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v): it needs root, or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	d := &diskFullProject{dir: filepath.Join(mnt, "project")}
	if err := os.Mkdir(d.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.dir, "prd.json"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(home, "scenario")
	if err := os.WriteFile(script, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	// The fake agent's scenario is the worker's alone: no reviewer.
	if err := reviewOffConfig(filepath.Join(home, ".config")); err != nil {
		t.Fatal(err)
	}
	d.env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"FAKEAGENT_SCRIPT="+script, "NO_COLOR=1",
		"RALPH_SANDBOX_MODE=none", // the fake agent reads variables a sandbox drops
		"RALPH_ALLOW_NO_REPO=1")   // the project on the small disk has no git
	return d
}

func (d *diskFullProject) run(t *testing.T) (string, error) {
	t.Helper()
	cmd := exec.Command("ralph", "run", "--no-tui")
	cmd.Dir, cmd.Env = d.dir, d.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// exitedOne checks the run failed with exit 1 and said what it must.
func (d *diskFullProject) exitedOne(t *testing.T, err error, out string, says ...string) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("ralph ended with %v, want exit 1:\n%s", err, out)
	}
	for _, s := range says {
		if !strings.Contains(out, s) {
			t.Errorf("the output does not say %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "panic") {
		t.Errorf("ralph panicked:\n%s", out)
	}
}

// state reads state.json, which must be whole.
func (d *diskFullProject) state(t *testing.T) state.State {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dir, state.Dir, state.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st state.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state.json is not whole: %v\n%s", err, b)
	}
	return st
}

func (d *diskFullProject) history(t *testing.T) []state.Record {
	t.Helper()
	s, err := state.Open(d.dir)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := s.History()
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	return hist
}

// wantPlan checks the plan is valid and its tasks' statuses.
func (d *diskFullProject) wantPlan(t *testing.T, want map[string]task.Status) {
	t.Helper()
	f, err := task.Load(filepath.Join(d.dir, "prd.json"))
	if err != nil {
		t.Fatalf("the plan is not valid: %v", err)
	}
	for _, tk := range f.Plan().Tasks {
		if tk.Status != want[tk.ID] {
			t.Errorf("task %s is %s, want %s", tk.ID, tk.Status, want[tk.ID])
		}
	}
}
