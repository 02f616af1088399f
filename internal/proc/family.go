package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// MarkerVar is the environment variable that marks the processes of a
// family: every child started in one gets MarkerVar=<family id>.<n>, n
// counting the family's children, and whatever it starts inherits it, in
// its group or not. The mark is how a daemon that left the group is still
// known as that child's, and how what a dead run left is told apart from
// unrelated processes that reuse its pids.
const MarkerVar = "RALPH_PROC"

// Family is the processes of one ralph run: the children it starts with
// the Family in their context (WithFamily) and all their descendants. It
// makes sure none of them outlives the child that started it, nor ralph:
//
//   - ralph becomes a child subreaper (Linux), so descendants whose parent
//     exits (a daemon's double fork, `setsid cmd &`) are re-parented to
//     ralph rather than to init; when a child ends, those still carrying
//     its mark are killed, reported (Result.Leftovers, OnLeftovers) and
//     reaped, by their exact pids;
//   - a guardian process (ralph itself, run with GuardianArgs), started
//     once, is told every process group the family starts; when ralph
//     dies, however it dies, the guardian's end of a pipe reaches EOF and
//     it stops those groups and every process that carries the family's
//     mark (Guardian);
//   - every child gets a parent-death signal (Linux).
//
// Off Linux there is no subreaper, no parent-death signal and no /proc to
// read marks from: the guardian stops the process groups, and descendants
// that left them are not found.
//
// Its methods are safe for concurrent use; a nil *Family is no family.
type Family struct {
	id   string
	opts FamilyOptions
	n    atomic.Int64 // children started, for the marks

	mu sync.Mutex
	// live holds the family's own children (and the guardian) from their
	// start until they are reaped: sweeps leave them and their trees to
	// their own supervision.
	live map[int]bool
	// guardian is the guardian process and pipe the write end of its
	// stdin; both nil without one.
	guardian *exec.Cmd
	pipe     *os.File

	closeOnce sync.Once
	closed    []Leftover
}

// FamilyOptions configure a Family.
type FamilyOptions struct {
	// GuardianArgs, when set, start the guardian: ralph's own executable
	// run with these arguments and the family's id after them, a command
	// that calls Guardian with its stdin. Without them there is none.
	GuardianArgs []string
	// OnLeftovers, when set, is told what a sweep killed once a child
	// ended: the child's argv and the processes. It is called from the
	// goroutine that supervises the child, before Wait returns.
	OnLeftovers func(argv []string, killed []Leftover)
}

// Leftover is a process a sweep killed.
type Leftover struct {
	Pid int
	// Command is its command line, shortened.
	Command string
}

func (l Leftover) String() string { return fmt.Sprintf("%s (pid %d)", l.Command, l.Pid) }

// DescribeKilled says what was killed: "killed 1 leftover process: node
// server.js (pid 4242)".
func DescribeKilled(killed []Leftover) string {
	what := "processes"
	if len(killed) == 1 {
		what = "process"
	}
	names := make([]string, len(killed))
	for i, l := range killed {
		names[i] = l.String()
	}
	return fmt.Sprintf("killed %d leftover %s: %s", len(killed), what, strings.Join(names, ", "))
}

// NewFamily makes the family with id (a run id: it must be unique to the
// run, as the marks and what a later run recognises derive from it). It
// always returns a usable Family; the error says which protection could
// not be set up (no subreaper, no guardian), for the caller to warn about.
func NewFamily(id string, opts FamilyOptions) (*Family, error) {
	if id == "" || strings.ContainsAny(id, "=\x00\n") {
		return nil, fmt.Errorf("proc: invalid family id %q", id)
	}
	f := &Family{id: id, opts: opts, live: map[int]bool{}}
	var errs []error
	if err := becomeSubreaper(); err != nil {
		errs = append(errs, fmt.Errorf("cannot become a child subreaper (daemons an agent starts may outlive it): %w", err))
	}
	if len(opts.GuardianArgs) > 0 {
		if err := f.startGuardian(); err != nil {
			errs = append(errs, fmt.Errorf("cannot start the guardian (if ralph is killed, what the agent started may survive it): %w", err))
		}
	}
	return f, errors.Join(errs...)
}

// ID is the family's id.
func (f *Family) ID() string { return f.id }

type familyKey struct{}

// WithFamily returns ctx carrying f: every child Start starts with it (or
// a context derived from it) belongs to f.
func WithFamily(ctx context.Context, f *Family) context.Context {
	return context.WithValue(ctx, familyKey{}, f)
}

// FamilyOf returns the family ctx carries, nil for none.
func FamilyOf(ctx context.Context) *Family {
	f, _ := ctx.Value(familyKey{}).(*Family)
	return f
}

// nextMarker is the mark of the family's next child.
func (f *Family) nextMarker() string {
	return f.id + "." + strconv.FormatInt(f.n.Add(1), 10)
}

// withMarker is env (ralph's own when nil) with MarkerVar set to marker,
// replacing any other (a ralph run inside an agent of another).
func withMarker(env []string, marker string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, MarkerVar+"=") {
			out = append(out, kv)
		}
	}
	return append(out, MarkerVar+"="+marker)
}

// start starts cmd as one of the family's children and tells the
// guardian its group.
func (f *Family) start(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	if f == nil {
		return nil
	}
	pid := cmd.Process.Pid
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live[pid] = true
	f.tell('+', pid)
	return nil
}

// reaped forgets a child Wait has reaped.
func (f *Family) reaped(pid int) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, pid)
}

func (f *Family) isLive(pid int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live[pid]
}

// tell writes one line to the guardian: +PGID for a group started, -PGID
// for one gone. Lines are shorter than PIPE_BUF, so each write is whole;
// a guardian that is gone is no error (ralph carries on unguarded).
// f.mu is held.
func (f *Family) tell(op byte, pgid int) {
	if f.pipe == nil {
		return
	}
	_, _ = f.pipe.WriteString(string(op) + strconv.Itoa(pgid) + "\n")
}

// sweep runs once a child of the family has exited and its group been
// killed: the descendants that still carry its marker outside its group
// are killed and reaped, the group's members re-parented to ralph are
// reaped, the guardian forgets the group, and OnLeftovers hears of what
// was killed.
func (f *Family) sweep(marker string, pgid int, argv []string) []Leftover {
	if f == nil {
		return nil
	}
	var killed []Leftover
	if marker != "" { // KeepDaemons: none of its descendants can be told apart
		killed = f.sweepChild(marker, pgid)
	}
	f.mu.Lock()
	f.tell('-', pgid)
	f.mu.Unlock()
	if len(killed) > 0 && f.opts.OnLeftovers != nil {
		f.opts.OnLeftovers(argv, killed)
	}
	return killed
}

// Close ends the family, once every child started in it has ended: what
// still carries its mark is killed, and the guardian is stopped (it kills
// whatever it can still find of the family, then exits). It returns what
// it killed itself; calling it again returns the same.
func (f *Family) Close() []Leftover {
	if f == nil {
		return nil
	}
	f.closeOnce.Do(func() {
		f.closed = f.sweepAll()
		f.mu.Lock()
		g, pipe := f.guardian, f.pipe
		f.pipe = nil
		f.mu.Unlock()
		if pipe != nil {
			_ = pipe.Close() // EOF: the guardian does its sweep and exits
			_ = g.Wait()
			f.reaped(g.Process.Pid)
		}
	})
	return f.closed
}

// startGuardian starts the guardian: ralph's own executable with
// GuardianArgs and the id, reading the write end of a pipe that only ralph
// holds (Go opens every descriptor close-on-exec), so it reads EOF exactly
// when ralph's process is gone. It has a group of its own, so that the
// terminal's signals to ralph's group do not reach it, and no
// parent-death signal: ralph's death is its cue to work, not to die.
func (f *Family) startGuardian() error {
	exe, err := selfExecutable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close() // the guardian has its own copy
	args := append([]string{os.Args[0]}, f.opts.GuardianArgs...)
	// Its working directory is the root: it must not keep a directory
	// busy for longer than ralph.
	cmd := &exec.Cmd{Path: exe, Args: append(args, f.id), Stdin: r, Dir: "/",
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.guardian, f.pipe = cmd, w
	f.live[cmd.Process.Pid] = true
	return nil
}
