package state

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func lockPath(s *Store) string { return filepath.Join(s.Dir(), "lock") }

// deadPID returns a pid that no process can have: one above the kernel's
// pid_max. The test checks that kill(2) agrees before relying on it.
func deadPID(t *testing.T) int {
	t.Helper()
	pid := 1 << 30
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			pid = n + 1
		}
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Skipf("kill(%d, 0) = %v, want ESRCH", pid, err)
	}
	return pid
}

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

func lockPID(t *testing.T, s *Store) int {
	t.Helper()
	b, err := os.ReadFile(lockPath(s))
	if err != nil {
		t.Fatal(err)
	}
	l, ok := parseLock(b)
	if !ok {
		t.Fatalf("lock content %q does not parse", b)
	}
	return l.PID
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

	// A second run (another Store on the same project) is refused.
	other, err := Open(filepath.Dir(s.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Lock(me)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second Lock error = %v, want *LockedError", err)
	}
	if le.PID != me || le.Path != lockPath(s) || le.Host != "" {
		t.Errorf("LockedError = %+v", le)
	}
	msg := err.Error()
	for _, want := range []string{"another ralph run (pid " + strconv.Itoa(me) + ")", "rm " + lockPath(s)} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}

	if err := release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lockPath(s)); !os.IsNotExist(err) {
		t.Errorf("lock still there after release: %v", err)
	}
	if err := release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	// Free again.
	release, err = other.Lock(me)
	if err != nil {
		t.Fatal(err)
	}
	_ = release()
}

func TestLockReleaseKeepsOthersLock(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	release, err := s.Lock(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Someone decided we were dead and took over.
	theirs := "1\nhost=" + hostname(t) + "\n"
	writeLock(t, s, theirs)
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(lockPath(s)); string(b) != theirs {
		t.Errorf("release touched another run's lock: %q", b)
	}
}

func TestLockHeld(t *testing.T) {
	t.Parallel()
	host := hostname(t)
	tests := []struct {
		name     string
		content  string
		wantPID  int
		wantHost string
	}{
		// pid 1 always exists; kill(1, 0) is nil as root and EPERM
		// otherwise, alive both ways.
		{"live process", "1\nhost=" + host + "\n", 1, ""},
		{"pid only", "1\n", 1, ""},
		// A pid on another host cannot be checked: never steal it.
		{"other host", strconv.Itoa(deadPID(t)) + "\nhost=elsewhere.example\n", deadPID(t), "elsewhere.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openTemp(t)
			writeLock(t, s, tt.content)
			_, err := s.Lock(os.Getpid())
			var le *LockedError
			if !errors.As(err, &le) {
				t.Fatalf("Lock error = %v, want *LockedError", err)
			}
			if le.PID != tt.wantPID || le.Host != tt.wantHost {
				t.Errorf("LockedError = %+v, want pid %d host %q", le, tt.wantPID, tt.wantHost)
			}
			if tt.wantHost != "" && !strings.Contains(err.Error(), "on host "+tt.wantHost) {
				t.Errorf("message %q does not name the host", err)
			}
			if b, _ := os.ReadFile(lockPath(s)); string(b) != tt.content {
				t.Errorf("refused Lock changed the lock file: %q", b)
			}
		})
	}
}

func TestLockTakeOverStale(t *testing.T) {
	t.Parallel()
	host := hostname(t)
	me := os.Getpid()
	tests := []struct {
		name    string
		content string
		skip    string
	}{
		{"dead pid", strconv.Itoa(deadPID(t)) + "\nhost=" + host + "\nstarted=2026-11-21T07:20:12Z\n", ""},
		// Our own pid but another start time: the pid was reused (a
		// restarted container where ralph is pid 1 again).
		{"reused pid", strconv.Itoa(me) + "\nhost=" + host + "\nproc_start=1\n", "proc"},
		{"before reboot", "1\nhost=" + host + "\nboot=not-this-boot\n", "boot"},
		{"empty", "", ""},
		{"garbage", "garbage\x00\xff\n", ""},
		{"zero pid", "0\n", ""},
		{"negative pid", "-1\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, ok := procStart(me); tt.skip == "proc" && !ok {
				t.Skip("no /proc")
			}
			if tt.skip == "boot" && bootID() == "" {
				t.Skip("no boot id")
			}
			s := openTemp(t)
			writeLock(t, s, tt.content)
			release, err := s.Lock(me)
			if err != nil {
				t.Fatalf("Lock over a stale lock: %v", err)
			}
			if got := lockPID(t, s); got != me {
				t.Errorf("lock holds pid %d, want %d", got, me)
			}
			if err := release(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(lockPath(s)); !os.IsNotExist(err) {
				t.Errorf("lock still there after release: %v", err)
			}
			assertNoTempFiles(t, s)
		})
	}
}

func assertNoTempFiles(t *testing.T, s *Store) {
	t.Helper()
	entries, _ := os.ReadDir(s.Dir())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left in .ralph: %s", e.Name())
		}
	}
}

// TestLockConcurrent races many starters, each with its own Store as
// separate processes would have, for a free lock and for a stale one:
// exactly one may win.
func TestLockConcurrent(t *testing.T) {
	t.Parallel()
	stale := strconv.Itoa(deadPID(t)) + "\nhost=" + hostname(t) + "\n"
	for _, start := range []string{"free", "stale", "garbage"} {
		t.Run(start, func(t *testing.T) {
			t.Parallel()
			for range 20 {
				project := t.TempDir()
				first, err := Open(project)
				if err != nil {
					t.Fatal(err)
				}
				switch start {
				case "stale":
					writeLock(t, first, stale)
				case "garbage":
					writeLock(t, first, "?")
				}
				const n = 16
				var (
					wg       sync.WaitGroup
					mu       sync.Mutex
					wins     int
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
						_, err = s.Lock(os.Getpid())
						mu.Lock()
						defer mu.Unlock()
						var le *LockedError
						switch {
						case err == nil:
							wins++
						case errors.As(err, &le):
							refusals++
						default:
							others = append(others, err)
						}
					})
				}
				close(ready)
				wg.Wait()
				if wins != 1 || refusals != n-1 || len(others) > 0 {
					t.Fatalf("%d starters: %d won, %d refused, other errors %v", n, wins, refusals, others)
				}
				assertNoTempFiles(t, first)
			}
		})
	}
}
