package proc_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/proc"
)

// newFamily makes a family in the test binary, which thereby becomes a
// child subreaper for the rest of its life (harmless to the other tests:
// their orphans' zombies count as exited).
func newFamily(t *testing.T, opts proc.FamilyOptions) *proc.Family {
	t.Helper()
	id := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + "-" + strconv.Itoa(os.Getpid())
	f, err := proc.NewFamily(id, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// daemons is a script that starts two daemons that leave the group, one
// with setsid, one with a double fork and setsid, each writing its pid to
// a file in the working directory (d1, d2) once it runs, then prints
// "ready" and waits until its stdin is closed.
const daemons = `mkfifo up
setsid sh -c 'echo $$ > d1; echo > up; exec sleep 300' </dev/null >/dev/null 2>&1 &
(setsid sh -c 'echo $$ > d2; echo > up; exec sleep 301' </dev/null >/dev/null 2>&1 &)
exec 3<>up
read _ <&3; read _ <&3
echo ready
read _ || :`

// startDaemons starts the daemons script in f and returns the child, the
// writer that ends it when closed, and the daemons' pids.
func startDaemons(t *testing.T, f *proc.Family) (*proc.Process, io.Closer, []int) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	stdin, w := io.Pipe()
	p, err := proc.Start(proc.WithFamily(t.Context(), f),
		proc.Cmd{Argv: []string{"sh", "-c", daemons}, Dir: dir, Stdin: stdin, Pipes: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, p.Stderr) }()
	if l, _ := bufio.NewReader(p.Stdout).ReadString('\n'); l != "ready\n" {
		t.Fatalf("want ready, got %q", l)
	}
	go func() { _, _ = io.Copy(io.Discard, p.Stdout) }()
	var pids []int
	for _, name := range []string{"d1", "d2"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return p, w, pids
}

func TestMarker(t *testing.T) {
	t.Parallel()
	f := newFamily(t, proc.FamilyOptions{})
	ctx := proc.WithFamily(t.Context(), f)
	var got []string
	for range 2 {
		var out strings.Builder
		// A marker inherited from an outer run is replaced.
		_, err := proc.Run(ctx, proc.Cmd{Argv: []string{"sh", "-c", `echo "$RALPH_PROC"`},
			Env: []string{"PATH=" + os.Getenv("PATH"), "RALPH_PROC=outer.7"}, Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimSpace(out.String()))
	}
	want := []string{f.ID() + ".1", f.ID() + ".2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("markers (-want +got):\n%s", diff)
	}
}

// TestSweepKillsEscapedDescendants: daemons that left the child's group
// are killed when it ends, reported, and reaped.
func TestSweepKillsEscapedDescendants(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var reported []proc.Leftover
	var reportedBy []string
	f := newFamily(t, proc.FamilyOptions{OnLeftovers: func(argv []string, killed []proc.Leftover) {
		mu.Lock()
		defer mu.Unlock()
		reportedBy, reported = argv, killed
	}})
	p, end, pids := startDaemons(t, f)
	watches := []exitWatch{watchExit(t, pids[0]), watchExit(t, pids[1])}
	end.Close()
	res := p.Wait()
	if res.ExitCode != 0 {
		t.Errorf("exit %d", res.ExitCode)
	}
	for i, pid := range pids {
		waitExited(t, watches[i], pid)
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("daemon %d was not reaped", pid)
		}
	}
	// A daemon may be killed before or after its shell execs sleep.
	if got := leftoverPids(res.Leftovers); !slices.Equal(got, pids) {
		t.Errorf("Leftovers %v, want the daemons %v", res.Leftovers, pids)
	}
	for _, l := range res.Leftovers {
		if !strings.Contains(l.Command, "sleep 30") {
			t.Errorf("leftover %v: want its command line", l)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := leftoverPids(reported); !slices.Equal(got, pids) || len(reportedBy) == 0 || reportedBy[0] != "sh" {
		t.Errorf("OnLeftovers got %v from %q, want the daemons %v from sh", reported, reportedBy, pids)
	}
	l := proc.Leftover{Pid: 4242, Command: "node server.js"}
	if got := proc.DescribeKilled([]proc.Leftover{l}); got != "killed 1 leftover process: node server.js (pid 4242)" {
		t.Errorf("DescribeKilled = %q", got)
	}
	if got := proc.DescribeKilled([]proc.Leftover{l, l}); !strings.HasPrefix(got, "killed 2 leftover processes: node server.js (pid 4242), ") {
		t.Errorf("DescribeKilled = %q", got)
	}
}

// leftoverPids lists the pids of l, sorted.
func leftoverPids(l []proc.Leftover) []int {
	var pids []int
	for _, x := range l {
		pids = append(pids, x.Pid)
	}
	slices.Sort(pids)
	return pids
}

// TestSweepOnlyTheFinishedChild: with two children running, the end of
// one takes its own daemons only.
func TestSweepOnlyTheFinishedChild(t *testing.T) {
	t.Parallel()
	f := newFamily(t, proc.FamilyOptions{})
	a, endA, pidsA := startDaemons(t, f)
	b, endB, pidsB := startDaemons(t, f)
	watchA := watchExit(t, pidsA[0])
	endA.Close()
	if res := a.Wait(); len(res.Leftovers) != 2 {
		t.Errorf("a's leftovers: %v, want its two daemons", res.Leftovers)
	}
	waitExited(t, watchA, pidsA[0])
	for _, pid := range pidsB {
		if !isAlive(pid) {
			t.Errorf("b's daemon %d died with a", pid)
		}
	}
	watchB := watchExit(t, pidsB[1])
	endB.Close()
	if res := b.Wait(); len(res.Leftovers) != 2 {
		t.Errorf("b's leftovers: %v, want its two daemons", res.Leftovers)
	}
	waitExited(t, watchB, pidsB[1])
}

// TestSweepReapsTheGroup: the group's members, re-parented to ralph when
// the child exits, are killed and reaped, and are not reported: they are
// the group's, killed as the group always is.
func TestSweepReapsTheGroup(t *testing.T) {
	t.Parallel()
	f := newFamily(t, proc.FamilyOptions{})
	c := startShell(t, proc.WithFamily(t.Context(), f), proc.Cmd{}, `sleep 300 & echo $!`)
	member := c.pid(t)
	watch := watchExit(t, member)
	res := c.p.Wait()
	waitExited(t, watch, member)
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(member) + "/stat"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("group member %d was not reaped: %s (we are %d)", member, stat, os.Getpid())
	}
	if len(res.Leftovers) != 0 {
		t.Errorf("Leftovers %v, want none: the group's members are not leftovers", res.Leftovers)
	}
}

// TestRalphKilled: when ralph dies of SIGKILL, its child dies of its
// parent-death signal, and the guardian kills the group's other members
// and the descendants that left the group.
func TestRalphKilled(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	id := "ralph-killed-" + strconv.Itoa(os.Getpid())
	ralph, out := startFakeRalph(t, "family", id, `sleep 300 & echo $!
setsid sh -c 'exec sleep 302' </dev/null >/dev/null 2>&1 & echo $!
echo $$
exec sleep 303`)
	var pids []int
	for range 3 {
		pids = append(pids, readPid(t, out))
	}
	guardian := findGuardian(t, id)
	pids = append(pids, guardian)
	var watches []exitWatch
	for _, pid := range pids {
		watches = append(watches, watchExit(t, pid))
	}
	if err := ralph.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for i, pid := range pids {
		waitExited(t, watches[i], pid)
	}
}

// TestParentDeathSignal: without a family, the child still dies with
// ralph.
func TestParentDeathSignal(t *testing.T) {
	t.Parallel()
	ralph, out := startFakeRalph(t, "bare", "", `echo $$; exec sleep 300`)
	child := readPid(t, out)
	watch := watchExit(t, child)
	if err := ralph.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitExited(t, watch, child)
}

// startFakeRalph runs the test binary as a ralph (TestMain's fakeRalph)
// and returns it and its output.
func startFakeRalph(t *testing.T, mode, id, script string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PROC_TEST_RALPH="+mode, "PROC_TEST_ID="+id, "PROC_TEST_SCRIPT="+script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, bufio.NewReader(stdout)
}

func readPid(t *testing.T, r *bufio.Reader) int {
	t.Helper()
	l, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(l))
	if err != nil || pid <= 1 {
		t.Fatalf("want a pid, got %q", l)
	}
	return pid
}

// findGuardian finds the guardian of family id by its command line.
func findGuardian(t *testing.T, id string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) == 3 && args[1] == guardianArg && args[2] == id {
			pid, _ := strconv.Atoi(e.Name())
			return pid
		}
	}
	t.Fatalf("no guardian of %s", id)
	return 0
}

// TestGuardian: at EOF the guardian stops the groups still registered,
// not those that ended.
func TestGuardian(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	registered := startShell(t, ctx, proc.Cmd{}, `echo $$; exec sleep 300`)
	ended := startShell(t, ctx, proc.Cmd{}, `echo $$; exec sleep 300`)
	registered.pid(t)
	ended.pid(t)
	r, w := io.Pipe()
	done := make(chan []proc.Leftover)
	go func() { done <- proc.Guardian("guardian-test-"+strconv.Itoa(os.Getpid()), r) }()
	_, _ = io.WriteString(w, "+"+strconv.Itoa(registered.p.Pid())+"\n+"+strconv.Itoa(ended.p.Pid())+"\n")
	_, _ = io.WriteString(w, "-"+strconv.Itoa(ended.p.Pid())+"\n")
	w.Close()
	<-done
	if res := registered.p.Wait(); res.Signal != syscall.SIGTERM {
		t.Errorf("the registered group: %+v, want ended by SIGTERM", res)
	}
	if !isAlive(ended.p.Pid()) {
		t.Error("the group that ended before was stopped")
	}
}

// TestStopFamily: what a dead run left is found by its mark, and only
// that.
func TestStopFamily(t *testing.T) {
	t.Parallel()
	dead := "dead-run-" + strconv.Itoa(os.Getpid())
	start := func(mark string) *exec.Cmd {
		// A group leader, as an agent is; Start returns once it has
		// exec'd sleep, so its environment is there to read.
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "RALPH_PROC=") })
		cmd.Env = append(cmd.Env, "RALPH_PROC="+mark)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		return cmd
	}
	left := start(dead + ".3")
	other := start("other-" + dead + ".3")
	want := []int{left.Process.Pid}
	if got := leftoverPids(proc.Survivors(dead)); !slices.Equal(got, want) {
		t.Errorf("Survivors: %v, want %v", got, want)
	}
	watch := watchExit(t, left.Process.Pid)
	if got := leftoverPids(proc.StopFamily(dead)); !slices.Equal(got, want) {
		t.Errorf("StopFamily: %v, want %v", got, want)
	}
	waitExited(t, watch, left.Process.Pid)
	if !isAlive(other.Process.Pid) {
		t.Error("another run's process was stopped")
	}
	if got := proc.Survivors(dead); len(got) != 0 {
		t.Errorf("Survivors after StopFamily: %v", got)
	}
}

// isAlive says pid is a live process (not a zombie).
func isAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// TestKeepDaemons: a child that keeps its daemons (git) gets no mark,
// and what it leaves is not swept.
func TestKeepDaemons(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	f := newFamily(t, proc.FamilyOptions{})
	var out strings.Builder
	// The daemon says it is up once it has left the group.
	res, err := proc.Run(proc.WithFamily(t.Context(), f), proc.Cmd{KeepDaemons: true,
		Argv: []string{"sh", "-c", `echo "mark=$RALPH_PROC"; mkfifo up; exec 3<>up
setsid sh -c 'echo > up; exec sleep 300' </dev/null >/dev/null 2>&1 & echo $!; read _ <&3`},
		Env: []string{"PATH=" + os.Getenv("PATH")}, Dir: t.TempDir(), Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(out.String())
	if len(lines) != 2 || lines[0] != "mark=" {
		t.Fatalf("output %q, want no mark and a pid", out.String())
	}
	daemon, _ := strconv.Atoi(lines[1])
	t.Cleanup(func() { _ = syscall.Kill(daemon, syscall.SIGKILL) })
	if len(res.Leftovers) != 0 || !isAlive(daemon) {
		t.Errorf("leftovers %v, daemon alive %v: want it left alone", res.Leftovers, isAlive(daemon))
	}
}
