// Package proc is the one place ralph starts child processes: agents,
// quality gates, notification commands, git and sl all go through it.
//
// It owns how a child lives and dies: its own process group, stdin from a
// reader or /dev/null (never ralph's own), its output copied to writers or
// handed to the caller as pipes, the wall and idle timeouts, the stop
// (SIGTERM to the group, a grace period, SIGKILL to the group), the sweep of
// the group once the leader has exited, a bound on waiting for pipes held by
// something that escaped the group, and the report of how it ended. It also
// finds executables on the child's own PATH and keeps bounded output tails.
//
// It must not decide what an exit means (a failed gate, an agent error, a
// git conflict are its callers' business), parse what a child prints, or
// keep anything between children. Everything about how a child is set up
// goes through Cmd.command, the one place a Cmd becomes an exec.Cmd: the
// parent-death signal is set there, and the family marker (family.go) is
// put in the environment there, on top of what the child's sandbox (a
// Wrapper, which rewrites argv and env: internal/sandbox) let through.
//
// A ralph run keeps its children on a short leash (family.go): each one
// dies with ralph (a parent-death signal, and a guardian process that
// kills what is left when ralph is gone, however it ends), and when one
// ends, the descendants that left its group (daemons, setsid, double
// forks) are found by the marker they inherit and killed too.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultWaitDelay is how long Wait waits, once the child has exited, for
// pipes that something outside its group still holds, when Cmd sets none.
const DefaultWaitDelay = 2 * time.Second

// Cmd describes one child process.
type Cmd struct {
	// Argv is the program and its arguments; Argv[0] is also the name the
	// child sees.
	Argv []string
	// Path is the executable; "" looks Argv[0] up with LookPath on Env's
	// PATH. A relative Path is relative to Dir.
	Path string
	// Dir is the working directory; "" is ralph's.
	Dir string
	// Env is the child's whole environment; nil is ralph's own.
	Env []string
	// Stdin is copied to the child's standard input, which is closed after
	// (a child that exits without reading it is no error); nil is
	// /dev/null. It is never ralph's own stdin: some agents read a piped
	// stdin as more prompt.
	Stdin io.Reader
	// Stdout and Stderr receive the child's output; nil discards it. One
	// writer given for both gets a single pipe, so its Write is never
	// called concurrently. A Write error drops the rest of that stream; it
	// never blocks the child.
	Stdout, Stderr io.Writer
	// Pipes hands the output to the caller instead: Process.Stdout and
	// Process.Stderr, which the caller reads to EOF (Wait closes them once
	// it gives up on them). Stdout and Stderr must be nil.
	Pipes bool
	// Timeout ends the child this long after it started; IdleTimeout ends
	// it once it has written nothing on stdout or stderr for this long.
	// Zero is no limit.
	Timeout, IdleTimeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL to the group when the
	// child is ended (timeout, idle timeout, ctx done); zero sends SIGKILL
	// at once.
	Grace time.Duration
	// WaitDelay bounds how long, once the child has exited, Wait waits for
	// its stdin and output pipes when something that escaped its group
	// still holds them; zero is DefaultWaitDelay.
	WaitDelay time.Duration
	// KeepDaemons, in a family, leaves the daemons the child starts out of
	// its group alone: it gets no mark, so no sweep, no Close and no
	// guardian looks for them. It is for git, whose daemons (gc --auto,
	// fsmonitor, a watchman a hook starts) are meant to outlive it; the
	// child itself still dies with ralph.
	KeepDaemons bool
	// Sandbox, when set, confines the child: once its executable is found
	// on its own PATH, the sandbox rewrites how it starts (Launch). Nil
	// starts it as it is.
	Sandbox Wrapper
}

// Launch is how a child is started: the executable, its arguments,
// directory and whole environment, and what its supervision must know of
// a wrapper that runs it.
type Launch struct {
	Path string
	Argv []string
	Dir  string
	Env  []string
	// Supervisor says Path is a wrapper that runs the command as its own
	// child, in its group, and exits when the command does (bwrap). A
	// stop sends SIGTERM to the rest of the group but not to it, as it
	// would die of it at once and take the command down before its grace;
	// SIGKILL still goes to the whole group.
	Supervisor bool
	// Detach starts the child in a session of its own, away from ralph's
	// controlling terminal, so that nothing it runs can open /dev/tty and
	// push keystrokes into the user's shell (TIOCSTI). It is still its
	// own process group, as every child is.
	Detach bool
	// Namespaced starts Path as root of a user namespace and a mount
	// namespace of its own, ralph's user and group mapped to 0 (Linux
	// only): it can mount there, in no one's view but its own and its
	// children's, before it executes the sandbox program (the gates'
	// throwaway layers, internal/sandbox). Its children gain nothing over
	// the host from it: the namespace's root is ralph's user outside.
	Namespaced bool
	// Release, when set, is called once the child and what is left of
	// its group are gone (or it could not start): what its confinement
	// held for it alone (an agent's cache layer) is free again.
	Release func()
}

// Wrapper confines a child: given how it would start, it returns how it
// starts inside the confinement (a sandbox program and its arguments
// around the command, and the environment passed in). An error keeps the
// child from starting: a confinement that cannot be set up fails closed.
type Wrapper interface {
	Wrap(Launch) (Launch, error)
}

// launchOf is how c starts, path being its resolved executable: through
// its sandbox when it has one.
func (c *Cmd) launchOf(path string) (Launch, error) {
	l := Launch{Path: path, Argv: slices.Clone(c.Argv), Dir: c.Dir, Env: c.Env}
	if c.Sandbox == nil {
		return l, nil
	}
	if l.Env == nil {
		// The sandbox decides what of ralph's own environment goes in.
		l.Env = os.Environ()
	}
	wrapped, err := c.Sandbox.Wrap(l)
	if err != nil {
		return Launch{}, fmt.Errorf("sandbox: %w", err)
	}
	return wrapped, nil
}

// command turns c into the exec.Cmd that starts it as l says, marker
// being the family marker ("" outside a family). It is the one place a
// child's process attributes are decided: its own group (and session,
// when detached), the parent-death signal (which fires when the thread
// that started the child ends: Start keeps that thread for the child, see
// launch), and the marker its descendants inherit, which goes on top of
// the environment the sandbox, if any, let through.
func (c *Cmd) command(l Launch, marker string) *exec.Cmd {
	env := l.Env
	if marker != "" {
		env = withMarker(env, marker)
	}
	return &exec.Cmd{
		Path: l.Path,
		Args: l.Argv,
		Dir:  l.Dir,
		Env:  env,
		// exec copies a reader in a goroutine, closes the pipe after and
		// ignores EPIPE; nil is /dev/null.
		Stdin: c.Stdin,
		// Its own group, so that a stop reaches everything it started;
		// when ralph dies, the signal a stop would send first.
		SysProcAttr: sysProcAttr(c.deathSignal(), l),
		// A grandchild that keeps stdin open must not hang Wait.
		WaitDelay: c.waitDelay(),
	}
}

// deathSignal is what the child gets when ralph dies: SIGTERM when it is
// given a grace on a stop (git removes its lock files on SIGTERM), SIGKILL
// otherwise. The guardian sends SIGKILL to what is left shortly after.
func (c *Cmd) deathSignal() syscall.Signal {
	if c.Grace > 0 {
		return syscall.SIGTERM
	}
	return syscall.SIGKILL
}

func (c *Cmd) waitDelay() time.Duration {
	if c.WaitDelay > 0 {
		return c.WaitDelay
	}
	return DefaultWaitDelay
}

// Result is how a child ended.
type Result struct {
	// ExitCode is the child's exit status; 128+signal when a signal ended
	// it, as in a shell (143 for SIGTERM, 137 for SIGKILL); -1 when it is
	// unknown.
	ExitCode int
	// Signal is the signal that ended the child; 0 when it exited.
	Signal syscall.Signal
	// TimedOut, IdleTimedOut and Interrupted say the child was ended
	// because the Timeout or the IdleTimeout expired or ctx was done; only
	// the first reason is reported.
	TimedOut, IdleTimedOut, Interrupted bool
	// Duration is from the start until the child had exited and its
	// output was drained (or given up on).
	Duration time.Duration
	// Leftovers are the descendants that were still running once the
	// child had exited, outside its group (daemons, setsid), and were
	// killed; only a child started in a Family is swept so (family.go).
	Leftovers []Leftover
}

// Err is nil when the child exited 0, and an *ExitError otherwise.
func (r Result) Err() error {
	if r.ExitCode == 0 {
		return nil
	}
	return &ExitError{Result: r}
}

// ExitError is a child that did not exit 0. Its text is the one os/exec
// gives: "exit status 1", "signal: killed".
type ExitError struct {
	Result
}

func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return "signal: " + e.Signal.String()
	}
	return fmt.Sprintf("exit status %d", e.ExitCode)
}

// Process is a started child. Wait must be called once it is started.
type Process struct {
	// Stdout and Stderr read the child's output when Cmd.Pipes is set;
	// reading counts as activity for the idle timeout.
	Stdout, Stderr io.Reader

	c   Cmd
	cmd *exec.Cmd
	// supervisor: the leader is a wrapper a stop's SIGTERM spares
	// (Launch.Supervisor).
	supervisor bool
	// release is Launch.Release, called when the child is gone.
	release func()
	start   time.Time
	last    atomic.Int64 // when output was last seen, as time since start
	// fam is the family the child belongs to (nil for none), marker its
	// mark in it.
	fam    *Family
	marker string
	exited chan struct{} // closed once the child has exited and been reaped

	streams []*stream
	open    atomic.Int32  // streams not yet at EOF
	drained chan struct{} // closed once every stream is at EOF
	copying sync.WaitGroup

	done chan struct{} // closed once res is set
	res  Result
}

// Start starts c in its own process group and supervises it: the
// timeouts and ctx end it (SIGTERM to the group, Grace, SIGKILL to the
// group). The error is non-nil only when the child could not be started:
// ctx was already done, the executable is missing (IsNotFound), its
// sandbox could not be set up, or the system refused.
func Start(ctx context.Context, c Cmd) (*Process, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("proc: no command to run")
	}
	if c.Pipes && (c.Stdout != nil || c.Stderr != nil) {
		return nil, errors.New("proc: Pipes with Stdout or Stderr set")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := c.Path
	if path == "" {
		var err error
		if path, err = LookPath(c.Argv[0], c.Dir, c.Env); err != nil {
			return nil, err
		}
	}
	l, err := c.launchOf(path)
	if err != nil {
		return nil, err
	}
	p := &Process{c: c, supervisor: l.Supervisor, release: l.Release, drained: make(chan struct{}), done: make(chan struct{}), exited: make(chan struct{})}
	if fam := FamilyOf(ctx); fam != nil {
		p.fam = fam
		if !c.KeepDaemons {
			p.marker = fam.nextMarker()
		}
	}
	p.cmd = c.command(l, p.marker)
	childEnds, err := p.pipes()
	closeAll := func() {
		for _, f := range childEnds {
			f.Close()
		}
	}
	if err != nil {
		closeAll()
		p.closeStreams()
		if l.Release != nil {
			l.Release()
		}
		return nil, err
	}
	p.start = time.Now()
	err = p.launch()
	closeAll() // the child has its own copies
	if err != nil {
		p.closeStreams()
		if l.Release != nil {
			l.Release()
		}
		return nil, err
	}
	p.open.Store(int32(len(p.streams)))
	if len(p.streams) == 0 {
		close(p.drained)
	}
	p.copyOutput()
	go p.supervise(ctx)
	return p, nil
}

// launch starts the child and reaps it on a goroutine of its own that
// holds its OS thread until then. The parent-death signal is tied to the
// thread that forked the child, not to ralph (go.dev/issue/27505): a
// thread that another goroutine ends (one that returns while locked to
// it) would take the child with it. Locked here, no other goroutine runs
// on the thread, so it lives exactly as long as the child needs it.
func (p *Process) launch() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := p.fam.start(p.cmd)
		started <- err
		if err != nil {
			return
		}
		_ = p.cmd.Wait() // the exit status is read from ProcessState
		p.fam.reaped(p.cmd.Process.Pid)
		close(p.exited)
	}()
	return <-started
}

// Run starts c and waits for it to end. When c could not be started the
// error says why and the Result has ExitCode -1.
func Run(ctx context.Context, c Cmd) (Result, error) {
	p, err := Start(ctx, c)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	return p.Wait(), nil
}

// Pid is the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Wait waits until the child has exited, what is left of its group has
// been killed and its output has been drained or given up on, and reports
// how it ended.
func (p *Process) Wait() Result {
	<-p.done
	return p.res
}

// stream is the read end of one output pipe. Reading it records activity
// for the idle timeout; its first error (EOF, or the close that gives up
// on it) counts it as drained.
type stream struct {
	f    *os.File
	p    *Process
	w    io.Writer // where proc copies it; nil when the caller reads it
	once sync.Once
}

func (s *stream) Read(b []byte) (int, error) {
	n, err := s.f.Read(b)
	if n > 0 {
		s.p.last.Store(int64(time.Since(s.p.start)))
	}
	if err != nil {
		s.once.Do(func() {
			if s.p.open.Add(-1) == 0 {
				close(s.p.drained)
			}
		})
	}
	return n, err
}

// pipes gives the child its output pipes, our own rather than exec's: the
// read ends can be closed to give up on a holder that escaped the group,
// and reading them shows activity. It returns the child's ends.
func (p *Process) pipes() (childEnds []*os.File, err error) {
	open := func(to io.Writer) (*stream, *os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, err
		}
		s := &stream{f: r, p: p, w: to}
		p.streams = append(p.streams, s)
		childEnds = append(childEnds, w)
		return s, w, nil
	}
	if p.c.Pipes {
		out, outW, err := open(nil)
		if err != nil {
			return childEnds, err
		}
		growPipe(out.f)
		errS, errW, err := open(nil)
		if err != nil {
			return childEnds, err
		}
		p.Stdout, p.Stderr = out, errS
		p.cmd.Stdout, p.cmd.Stderr = outW, errW
		return childEnds, nil
	}
	if p.c.Stdout != nil {
		_, w, err := open(p.c.Stdout)
		if err != nil {
			return childEnds, err
		}
		p.cmd.Stdout = w
	}
	if p.c.Stderr != nil {
		if p.c.Stdout != nil && sameWriter(p.c.Stdout, p.c.Stderr) {
			p.cmd.Stderr = p.cmd.Stdout
			return childEnds, nil
		}
		_, w, err := open(p.c.Stderr)
		if err != nil {
			return childEnds, err
		}
		p.cmd.Stderr = w
	}
	return childEnds, nil
}

// copyOutput copies each stream to its writer, unless the caller reads
// them.
func (p *Process) copyOutput() {
	for _, s := range p.streams {
		if s.w == nil {
			continue
		}
		p.copying.Go(func() {
			if _, err := io.Copy(s.w, s); err != nil {
				// A failed writer must not leave the child blocked on a
				// full pipe.
				_, _ = io.Copy(io.Discard, s)
			}
		})
	}
}

func (p *Process) closeStreams() {
	for _, s := range p.streams {
		s.f.Close()
	}
}

// sameWriter reports whether a and b are the same writer; writers of
// types that cannot be compared are different.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// supervise waits for the child to exit, ending it when a timeout expires
// or ctx is done, sweeps its group, drains its output and sets the result.
func (p *Process) supervise(ctx context.Context) {
	exited := p.exited
	pgid := p.Pid()
	var res Result
	done := ctx.Done()
	var wall, idle, kill <-chan time.Time
	if p.c.Timeout > 0 {
		t := time.NewTimer(p.c.Timeout)
		defer t.Stop()
		wall = t.C
	}
	var idleT *time.Timer
	if p.c.IdleTimeout > 0 {
		idleT = time.NewTimer(p.c.IdleTimeout)
		defer idleT.Stop()
		idle = idleT.C
	}
	var killT *time.Timer
	terminate := func(reason *bool) {
		*reason = true
		done, wall, idle = nil, nil, nil // the first reason is the one reported
		if p.c.Grace <= 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
		p.sigterm(pgid)
		killT = time.NewTimer(p.c.Grace)
		kill = killT.C
	}
wait:
	for {
		select {
		case <-done:
			terminate(&res.Interrupted)
		case <-wall:
			terminate(&res.TimedOut)
		case <-idle:
			quiet := time.Since(p.start) - time.Duration(p.last.Load())
			if quiet >= p.c.IdleTimeout {
				terminate(&res.IdleTimedOut)
			} else {
				idleT.Reset(p.c.IdleTimeout - quiet)
			}
		case <-kill:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			kill = nil
		case <-exited:
			if kill != nil {
				// The leader is gone but the group has the rest of its
				// grace, unless it has already let go of our output.
				select {
				case <-kill:
				case <-p.drained:
				}
				killT.Stop()
			}
			break wait
		}
	}
	// Sweep: nothing the child started outlives it in its group, nor,
	// in a family, outside it (which also lets go of pipes an escaped
	// descendant held).
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	res.Leftovers = p.fam.sweep(p.marker, pgid, p.c.Argv)

	// Whatever still holds our pipes has left the group; give up on it
	// after WaitDelay rather than wait for it.
	t := time.NewTimer(p.c.waitDelay())
	select {
	case <-p.drained:
	case <-t.C:
	}
	t.Stop()
	p.closeStreams()
	p.copying.Wait()

	res.ExitCode, res.Signal = exitStatus(p.cmd.ProcessState)
	res.Duration = time.Since(p.start)
	p.res = res
	if p.release != nil {
		p.release()
	}
	close(p.done)
}

// sigterm sends SIGTERM to the child's group, sparing a supervisor
// (Launch.Supervisor) so that the command it runs gets its grace.
func (p *Process) sigterm(pgid int) {
	if p.supervisor {
		termMembers(pgid)
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
}

// exitStatus reads how a process ended: its exit code, or 128+signal and
// the signal.
func exitStatus(ps *os.ProcessState) (int, syscall.Signal) {
	if ps == nil {
		return -1, 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return ps.ExitCode(), 0
}
