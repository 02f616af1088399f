package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunPassesAndFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := &Runner{Dir: dir, Commands: []string{"true", "echo checking; echo 'FAIL: TestX' >&2; exit 3", "echo never"},
		Env: os.Environ()}
	ok, out, err := r.Run(t.Context(), "T-1")
	if err != nil || ok {
		t.Fatalf("Run = %v, %v; want a failure", ok, err)
	}
	for _, want := range []string{"exited 3", "checking", "FAIL: TestX"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "never") {
		t.Errorf("a command after the failing one ran:\n%s", out)
	}

	r.Commands = []string{"true"}
	r.TaskCommands = func(id string) []string { return []string{"test " + id + " = T-1"} }
	if ok, out, err := r.Run(t.Context(), "T-1"); !ok || err != nil {
		t.Errorf("Run = %v, %q, %v; want a pass", ok, out, err)
	}
	if ok, _, _ := r.Run(t.Context(), "T-2"); ok {
		t.Error("the task's own command was not run")
	}
}

func TestOutputKeepsTheTail(t *testing.T) {
	t.Parallel()
	r := &Runner{Dir: t.TempDir(), Commands: []string{"seq 1 100000; echo VERDICT; exit 1"}, Env: os.Environ()}
	_, out, err := r.Run(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > maxOutput+200 || !strings.Contains(out, "VERDICT") || !strings.Contains(out, "bytes elided") {
		t.Errorf("output of %d bytes, tail %q", len(out), out[max(0, len(out)-80):])
	}
}

func TestTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := &Runner{Dir: dir, Commands: []string{"sleep 60 & echo $! > child.pid; sleep 60; wait"},
		Timeout: 500 * time.Millisecond, Env: os.Environ()}
	ok, out, err := r.Run(t.Context(), "x")
	if err != nil || ok || !strings.Contains(out, "timed out after 500ms") {
		t.Fatalf("Run = %v, %q, %v; want a timed-out failure", ok, out, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The background child was in the gate's group: killed with it. SIGKILL
	// is delivered asynchronously, so give it a moment to die. (A zombie
	// counts as gone: this container's init may not reap it.)
	alive := func() bool {
		if syscall.Kill(pid, 0) != nil {
			return false
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		i := strings.LastIndexByte(string(stat), ')')
		return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
	}
	for deadline := time.Now().Add(5 * time.Second); alive() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if alive() {
		t.Errorf("child %d of the timed-out gate is still running", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Fresh gives each command variables of its own, on top of the runner's,
// and is undone after that command.
func TestRunFresh(t *testing.T) {
	t.Parallel()
	n, undone := 0, 0
	r := &Runner{Dir: t.TempDir(), Commands: []string{`test "$CACHE" = c1 && test "$KEEP" = k`, `test "$CACHE" = c2`},
		Env: append(os.Environ(), "KEEP=k", "CACHE=user"),
		Fresh: func(env []string) ([]string, func(), error) {
			n++
			return []string{"CACHE=c" + strconv.Itoa(n)}, func() { undone++ }, nil
		}}
	if ok, out, err := r.Run(t.Context(), "T-1"); !ok || err != nil {
		t.Fatalf("Run = %v, %q, %v; want a pass", ok, out, err)
	}
	if n != 2 || undone != 2 {
		t.Errorf("Fresh called %d times, undone %d: want 2 and 2", n, undone)
	}
}
