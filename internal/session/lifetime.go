package session

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/state"
)

// GuardianCommand is the hidden subcommand that makes ralph a run's
// guardian (proc.Guardian): a run starts it, never a user.
const GuardianCommand = "__guardian"

// family starts the process family of run id (proc.Family): every child
// started with the returned context dies with ralph, and what one leaves
// running when it ends is killed and reported. What could not be set up
// is a warning, not a reason not to run. Close the returned lifetime once
// the run is over.
func family(ctx context.Context, f *Host, id string) (context.Context, *lifetime) {
	lt := &lifetime{f: f}
	fam, err := proc.NewFamily(id, proc.FamilyOptions{
		GuardianArgs: []string{GuardianCommand},
		OnLeftovers:  lt.leftovers,
	})
	if err != nil {
		fmt.Fprintln(f.IO.ErrOut, "ralph: warning:", err)
	}
	if fam == nil {
		return ctx, lt
	}
	lt.fam = fam
	return proc.WithFamily(ctx, fam), lt
}

// lifetime is a run's process family and where its reports go: loop
// warnings once the renderer is up, stderr before and after.
type lifetime struct {
	f   *Host
	fam *proc.Family
	mu  sync.Mutex
	// emit is the renderer's Handle, nil when there is none; the loop's
	// events go through serialized with the reports.
	emit func(loop.Event)
}

// attach makes report where the family's reports go (the run's event
// pipeline, events.post: a report may come while an event is delivered).
func (lt *lifetime) attach(report func(loop.Event)) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.emit = report
}

// detach sends the reports to stderr again, once the renderer is closed.
func (lt *lifetime) detach() {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.emit = nil
}

// leftovers reports what a sweep killed once a child ended:
// "claude: killed 1 leftover process: node server.js (pid 4242)".
func (lt *lifetime) leftovers(argv []string, killed []proc.Leftover) {
	msg := childName(argv) + ": " + proc.DescribeKilled(killed)
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.emit != nil {
		lt.emit(loop.Event{Kind: loop.EventWarning, Time: time.Now(), RunID: lt.fam.ID(), Message: msg})
		return
	}
	fmt.Fprintln(lt.f.IO.ErrOut, "ralph: warning:", msg)
}

// childName names a child in a report: the program, or for a shell
// command (a gate's, say) the command, shortened.
func childName(argv []string) string {
	const maxLen = 40
	if len(argv) >= 3 && argv[1] == "-c" && (argv[0] == "sh" || filepath.Base(argv[0]) == "sh") {
		c := []rune(argv[2])
		if len(c) > maxLen {
			c = append(c[:maxLen-1], '…')
		}
		return "`" + string(c) + "`"
	}
	return filepath.Base(argv[0])
}

// Close ends the family: what is still left of it is killed, and the
// guardian stops.
func (lt *lifetime) Close() {
	if killed := lt.fam.Close(); len(killed) > 0 {
		fmt.Fprintln(lt.f.IO.ErrOut, "ralph: warning: at the end of the run:", proc.DescribeKilled(killed))
	}
}

// stopCrashed stops what the last run left running when it died without
// cleaning up (its state.json says it is live, yet this run holds the
// lock): the processes that carry its mark, which also keeps a stranger
// that reuses one of their pids safe. Its guardian should have stopped
// them, unless it died too (kill -9 of both, a container's OOM kill).
// crashed reports whether the last run died so, or ended with a task
// accepted but not committed (its commit failed), or held (git refused
// its commit): either way what it left in the working tree is its
// unfinished work.
func stopCrashed(f *Host, store *state.Store) (crashed bool, err error) {
	prev, err := store.LoadState()
	if err != nil {
		return false, err
	}
	if prev.RunID == "" {
		return false, nil
	}
	if !state.Live(prev.Status) {
		return len(prev.Accepting) > 0 || prev.Held != "", nil
	}
	if killed := proc.StopFamily(prev.RunID); len(killed) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "ralph: the last run (%s) stopped unexpectedly and left processes running: %s\n",
			prev.RunID, proc.DescribeKilled(killed))
	}
	return true, nil
}

// stopOnBrokenPipe stops the run as a signal would when its output goes
// to a pipe whose reader is gone (`ralph run | tee log` in a terminal that
// closed: SIGHUP takes tee too): without it, the first write to stdout or
// stderr would kill ralph with SIGPIPE, and the run would end unrecorded.
// Once SIGPIPE is asked for, it also comes for other pipes (an agent that
// did not read all its stdin): only a broken stdout or stderr stops the
// run. The writes that fail are the renderer's to ignore.
func stopOnBrokenPipe(stop context.CancelFunc) (undo func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				if brokenPipe(1) || brokenPipe(2) {
					stop()
					return
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// brokenPipe reports whether fd is a pipe whose reading end is closed:
// poll says POLLERR for it.
func brokenPipe(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&unix.POLLERR != 0
}
