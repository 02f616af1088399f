package state

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The lock's other holders are real processes: this test binary run again
// in one of the modes below.
const (
	// holderEnv names the project whose lock the process takes; it says
	// "locked <child pid>" on stdout and holds the lock until its stdin
	// closes.
	holderEnv = "RALPH_TEST_LOCK_HOLDER"
	// spawnEnv makes the holder start a child first (an agent, say) that
	// may outlive it: the child waits for its stdin, the holder's fd 3,
	// to close.
	spawnEnv = "RALPH_TEST_LOCK_SPAWN"
	// waitEnv makes the process wait for its stdin to close, and nothing
	// else: the child.
	waitEnv = "RALPH_TEST_WAIT_STDIN"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(holderEnv) != "":
		os.Exit(holdLock(os.Getenv(holderEnv)))
	case os.Getenv(waitEnv) != "":
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func holdLock(project string) int {
	_, release, err := OpenLocked(project)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	child := 0
	if os.Getenv(spawnEnv) != "" {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), holderEnv+"=", waitEnv+"=1")
		cmd.Stdin = os.NewFile(3, "child-stdin")
		if err := cmd.Start(); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		child = cmd.Process.Pid
	}
	fmt.Println("locked", child)
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := release(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// holder is a lock holder in another process.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	child int // its child's pid, 0 without one
}

// startHolder starts a process that takes project's lock and returns once
// it holds it.
func startHolder(t *testing.T, project string, spawn bool) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holderEnv+"="+project)
	cmd.Stderr = os.Stderr
	if spawn {
		// The child's stdin is a pipe of the test's own, which stays open
		// when the holder is gone.
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		defer r.Close()
		cmd.Env = append(cmd.Env, spawnEnv+"=1")
		cmd.ExtraFiles = []*os.File{r}
	}
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
	h := &holder{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = stdin.Close() // the holder ends
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if h.child > 0 {
			_ = syscall.Kill(h.child, syscall.SIGKILL)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	n, ok := strings.CutPrefix(strings.TrimSpace(line), "locked ")
	if !ok {
		t.Fatalf("holder says %q (%v), want \"locked PID\"", line, err)
	}
	if h.child, err = strconv.Atoi(n); err != nil {
		t.Fatal(err)
	}
	return h
}

func lockPath(s *Store) string { return filepath.Join(s.Dir(), "lock") }

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	return h
}

func writeLock(t *testing.T, s *Store, content string) {
	t.Helper()
	if err := os.WriteFile(lockPath(s), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lockInfoOf(t *testing.T, s *Store) lockInfo {
	t.Helper()
	b, err := os.ReadFile(lockPath(s))
	if err != nil {
		t.Fatal(err)
	}
	l, ok := parseLock(b)
	if !ok {
		t.Fatalf("lock content %q does not parse", b)
	}
	return l
}

func assertLocked(t *testing.T, err error, pid int, path string) {
	t.Helper()
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("Lock error = %v, want *LockedError", err)
	}
	if le.PID != pid || le.Path != path || le.Host != "" || le.Started == "" {
		t.Errorf("LockedError = %+v, want pid %d, path %s, a start time", le, pid, path)
	}
	want := fmt.Sprintf("another ralph run (pid %d) started at %s holds the lock %s", pid, le.Started, path)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("message %q lacks %q", err, want)
	}
}

// assertReleased: the lock file names nobody.
func assertReleased(t *testing.T, s *Store) {
	t.Helper()
	if b, err := os.ReadFile(lockPath(s)); err != nil || len(b) != 0 {
		t.Errorf("lock file after release: %q, %v; want it empty", b, err)
	}
}

// assertNoTempFiles: no temporary or spare file in .ralph.
func assertNoTempFiles(t *testing.T, s *Store) {
	t.Helper()
	entries, _ := os.ReadDir(s.Dir())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && e.Name() != ".gitignore" {
			t.Errorf("temporary file left in .ralph: %s", e.Name())
		}
	}
}

func TestLockAcquireRefuseRelease(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	me := os.Getpid()
	release, err := s.Lock(me)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(lockPath(s))
	if first, _, _ := strings.Cut(string(b), "\n"); first != strconv.Itoa(me) {
		t.Errorf("lock file starts with %q, want the pid %d", first, me)
	}
	if !strings.Contains(string(b), "host="+hostname(t)) || !strings.Contains(string(b), "started=") {
		t.Errorf("lock file lacks host and start time:\n%s", b)
	}

	// A second run (another Store, another open file) is refused, and
	// the lock file stays as it was.
	other, err := Open(filepath.Dir(s.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Lock(me)
	assertLocked(t, err, me, lockPath(s))
	if after, _ := os.ReadFile(lockPath(s)); string(after) != string(b) {
		t.Errorf("refused Lock changed the lock file: %q", after)
	}
	assertNoTempFiles(t, s)

	if err := release(); err != nil {
		t.Fatal(err)
	}
	assertReleased(t, s)
	assertNoTempFiles(t, s)
	if err := release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	// Free again.
	release, err = other.Lock(me)
	if err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
}

// TestLockHeldByAnotherProcess: a live holder refuses, and once it has
// released, the lock can be taken again.
func TestLockHeldByAnotherProcess(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	h := startHolder(t, filepath.Dir(s.Dir()), false)
	_, err := s.Lock(os.Getpid())
	assertLocked(t, err, h.cmd.Process.Pid, lockPath(s))

	_ = h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	assertReleased(t, s)
	release, err := s.Lock(os.Getpid())
	if err != nil {
		t.Fatalf("Lock after the holder released: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
}

// TestLockDeadHolder: a holder killed with SIGKILL leaves its name in the
// lock file but no lock, even though the child it started (an agent, say) lives
// on: the descriptor is not inherited.
func TestLockDeadHolder(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	h := startHolder(t, filepath.Dir(s.Dir()), true)
	dead := h.cmd.Process.Pid
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Wait()
	if err := syscall.Kill(h.child, 0); err != nil {
		t.Fatalf("the holder's child is gone too (%v): the test proves nothing", err)
	}
	if got := lockInfoOf(t, s).PID; got != dead {
		t.Fatalf("lock file names pid %d, want the dead holder %d", got, dead)
	}

	me := os.Getpid()
	release, err := s.Lock(me)
	if err != nil {
		t.Fatalf("Lock after the holder died: %v", err)
	}
	if got := lockInfoOf(t, s).PID; got != me {
		t.Errorf("lock file names pid %d, want %d", got, me)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	assertReleased(t, s)
	assertNoTempFiles(t, s)
}

// TestLockLeftFile: a lock file nobody holds, whatever it says, is no
// lock.
func TestLockLeftFile(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"dead run": "2147483646\nhost=" + hostname(t) + "\nstarted=2026-11-21T07:20:12Z\n",
		"empty":    "",
		"garbage":  "garbage\x00\xff\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := openTemp(t)
			writeLock(t, s, content)
			me := os.Getpid()
			release, err := s.Lock(me)
			if err != nil {
				t.Fatalf("Lock over a left lock file: %v", err)
			}
			if got := lockInfoOf(t, s).PID; got != me {
				t.Errorf("lock holds pid %d, want %d", got, me)
			}
			if err := release(); err != nil {
				t.Fatal(err)
			}
			assertReleased(t, s)
			assertNoTempFiles(t, s)
		})
	}
}

// TestLockConcurrent races starters, each with its own Store as separate
// processes would have, for a free lock and over a left lock file:
// exactly one may win.
func TestLockConcurrent(t *testing.T) {
	t.Parallel()
	for _, start := range []string{"free", "left", "garbage"} {
		t.Run(start, func(t *testing.T) {
			t.Parallel()
			for range 20 {
				project := t.TempDir()
				first, err := Open(project)
				if err != nil {
					t.Fatal(err)
				}
				switch start {
				case "left":
					writeLock(t, first, "2147483646\n")
				case "garbage":
					writeLock(t, first, "?")
				}
				const n = 16
				var (
					wg       sync.WaitGroup
					mu       sync.Mutex
					releases []func() error
					refusals int
					others   []error
				)
				ready := make(chan struct{})
				for range n {
					wg.Go(func() {
						s, err := Open(project)
						if err != nil {
							t.Error(err)
							return
						}
						<-ready
						release, err := s.Lock(os.Getpid())
						mu.Lock()
						defer mu.Unlock()
						var le *LockedError
						switch {
						case err == nil:
							releases = append(releases, release)
						case errors.As(err, &le):
							refusals++
						default:
							others = append(others, err)
						}
					})
				}
				close(ready)
				wg.Wait()
				if len(releases) != 1 || refusals != n-1 || len(others) > 0 {
					t.Fatalf("%d starters: %d won, %d refused, other errors %v", n, len(releases), refusals, others)
				}
				if got := lockInfoOf(t, first).PID; got != os.Getpid() {
					t.Errorf("lock holds pid %d, want the winner's %d", got, os.Getpid())
				}
				if err := releases[0](); err != nil {
					t.Fatal(err)
				}
				assertReleased(t, first)
				assertNoTempFiles(t, first)
			}
		})
	}
}

// TestHeld: Held tells a held lock from a free one (a run that died drops
// its flock), takes nothing away from the holder, and leaves the lock free
// for the next run.
// TestHeld is not parallel: a flock belongs to the open file, which a
// sibling test's fork holds until its exec closes it, so "released" could
// read as held for that instant.
func TestHeld(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	held := func() bool {
		t.Helper()
		h, err := s.Held()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if held() {
		t.Error("Held with no lock file: true")
	}
	release, err := s.Lock(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !held() {
		t.Error("Held while a run holds the lock: false")
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if held() {
		t.Error("Held after the run released the lock: true")
	}
	release, err = s.Lock(os.Getpid())
	if err != nil {
		t.Fatalf("Lock after Held: %v", err)
	}
	_ = release()
}

// TestLockRemovesEarlierVersionsSpares: the spare files versions before
// 0.1 kept in .ralph/ (state.json's, the plan's, the acceptance record's)
// are removed by the next holder of the lock; nothing else is.
func TestLockRemovesEarlierVersionsSpares(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	for _, name := range []string{".state.json.spare-123", ".prd.json.spare-7", ".accepting"} {
		if err := os.WriteFile(filepath.Join(s.Dir(), name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	release, err := s.Lock(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = release() }()
	assertNoTempFiles(t, s)
	if _, err := os.Stat(filepath.Join(s.Dir(), ".gitignore")); err != nil {
		t.Errorf("the store's own .gitignore went too: %v", err)
	}
}
