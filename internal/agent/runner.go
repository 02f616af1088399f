package agent

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// defaultGrace is the time between SIGTERM and SIGKILL when the
	// request sets none.
	defaultGrace = 5 * time.Second
	// drainDelay bounds how long, once the agent has exited, pipes held
	// by something that escaped its process group may keep Run waiting.
	drainDelay = 2 * time.Second
	// maxStderr is how much of the end of stderr a Result keeps.
	maxStderr = 16 << 10
)

// Run starts the agent for req in its own process group, streams its stdout
// to sink (raw bytes to the transcript, decoded events to Emit) and returns
// what it produced. The wall timeout, the idle timeout (no output on stdout
// or stderr) and ctx all end the run the same way: SIGTERM to the group,
// req.Grace, SIGKILL to the group. Whatever is left of the group when the
// agent exits is killed too, so no orphan outlives the run.
//
// The agent's environment is req.Env (os.Environ() when nil) with the
// invocation's EnvSet on top; its executable is looked up on that PATH.
// The error is non-nil only when the agent could not be started; a missing
// executable matches exec.ErrNotFound. Everything the agent did wrong is in
// the Result. A process killed by a signal has ExitCode 128+signal, as in a
// shell (143 for SIGTERM, 137 for SIGKILL).
func Run(ctx context.Context, a Adapter, req Request, sink Sink) (Result, error) {
	if req.ScratchDir == "" {
		dir, err := os.MkdirTemp("", "ralph-agent-")
		if err != nil {
			return Result{}, fmt.Errorf("%s agent: scratch directory: %w", a.Name(), err)
		}
		defer os.RemoveAll(dir)
		req.ScratchDir = dir
	}
	inv, err := a.Invocation(req)
	if err != nil {
		return Result{}, fmt.Errorf("%s agent: %w", a.Name(), err)
	}
	if len(inv.Argv) == 0 {
		return Result{}, fmt.Errorf("%s agent: no command to run", a.Name())
	}
	if ctx.Err() != nil {
		return Result{Interrupted: true}, nil
	}
	base := req.Env
	if base == nil {
		base = os.Environ()
	}
	env := mergeEnv(base, inv.EnvSet)
	path, err := lookPath(inv.Argv[0], req.Dir, env)
	if err != nil {
		return Result{}, fmt.Errorf("start %s agent: %w", a.Name(), err)
	}

	cmd := exec.Command(path, inv.Argv[1:]...)
	cmd.Args[0] = inv.Argv[0]
	cmd.Dir, cmd.Env = req.Dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild that keeps stdin open must not hang Wait.
	cmd.WaitDelay = drainDelay
	if inv.Prompt == PromptStdin {
		// exec copies it in a goroutine, closes the pipe after and
		// ignores EPIPE from an agent that exits without reading.
		cmd.Stdin = strings.NewReader(inv.Stdin)
	}
	// Otherwise Stdin stays nil, which is /dev/null: never our own stdin,
	// since some agents (Codex) read a piped stdin as more prompt.

	// Our own pipes rather than StdoutPipe: reading them does not race
	// with Wait, and they can be closed to give up on an escaped holder.
	outR, outW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("start %s agent: %w", a.Name(), err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return Result{}, fmt.Errorf("start %s agent: %w", a.Name(), err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return Result{}, fmt.Errorf("start %s agent %q: %w", a.Name(), inv.Argv[0], err)
	}
	if req.OnStart != nil {
		req.OnStart(cmd.Process.Pid)
	}

	var last atomic.Int64 // when output was last seen, as time since start
	emit := sink.Emit
	if emit == nil {
		emit = func(Event) {}
	}
	dec := a.NewDecoder()
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		lr := newLineReader(&watchReader{r: outR, tee: sink.Transcript, last: &last, start: start}, defaultLineLimits())
		for {
			line, err := lr.Next()
			if err != nil {
				return
			}
			dec.Line(line, emit)
		}
	}()
	var stderr ring
	stderr.reset(maxStderr)
	errDone := make(chan struct{})
	go func() {
		defer close(errDone)
		_, _ = io.Copy(&stderr, &watchReader{r: errR, last: &last, start: start})
	}()

	w := watch{ctx: ctx, req: req, pgid: cmd.Process.Pid, start: start, last: &last}
	w.run(cmd, outDone, errDone)
	if !waitClosed(drainDelay, outDone, errDone) {
		// Something outside the group still holds our pipes.
		outR.Close()
		errR.Close()
		<-outDone
		<-errDone
	}
	outR.Close()
	errR.Close()

	res := dec.Finish()
	res.ExitCode = exitCode(cmd.ProcessState)
	res.TimedOut, res.IdleTimedOut, res.Interrupted = w.timedOut, w.idleTimedOut, w.interrupted
	res.Duration = time.Since(start)
	res.Stderr = string(utf8Start(stderr.appendTo(nil)))
	complete(a, req, &res)
	return res, nil
}

// complete finishes a Result once the runner's fields are set: a failed
// exit without a word from the agent is an error, and a Finisher adapter
// has the last say.
func complete(a Adapter, req Request, res *Result) {
	if !res.IsError && res.ExitCode != 0 && res.FinalText == "" {
		res.IsError, res.ErrorKind = true, ErrorOther
		res.ErrorText = cmp.Or(strings.TrimSpace(res.Stderr), fmt.Sprintf("exit status %d", res.ExitCode))
	}
	if f, ok := a.(Finisher); ok {
		f.FinishRun(req, res)
	}
}

// watch supervises one process group: timeouts, cancellation, the kill.
type watch struct {
	ctx   context.Context
	req   Request
	pgid  int
	start time.Time
	last  *atomic.Int64

	timedOut, idleTimedOut, interrupted bool
}

// run waits for the agent to exit, ending it when a timeout expires or ctx
// is done, then sweeps its group.
func (w *watch) run(cmd *exec.Cmd, outDone, errDone <-chan struct{}) {
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the exit status is read from cmd.ProcessState
		close(exited)
	}()
	grace := cmp.Or(w.req.Grace, defaultGrace)
	done := w.ctx.Done()
	var wall, idle, kill <-chan time.Time
	if w.req.Timeout > 0 {
		t := time.NewTimer(w.req.Timeout)
		defer t.Stop()
		wall = t.C
	}
	var idleT *time.Timer
	if w.req.IdleTimeout > 0 {
		idleT = time.NewTimer(w.req.IdleTimeout)
		defer idleT.Stop()
		idle = idleT.C
	}
	var killT *time.Timer
	terminate := func(reason *bool) {
		*reason = true
		done, wall, idle = nil, nil, nil // the first reason is the one reported
		_ = syscall.Kill(-w.pgid, syscall.SIGTERM)
		killT = time.NewTimer(grace)
		kill = killT.C
	}
	for {
		select {
		case <-done:
			terminate(&w.interrupted)
		case <-wall:
			terminate(&w.timedOut)
		case <-idle:
			quiet := time.Since(w.start) - time.Duration(w.last.Load())
			if quiet >= w.req.IdleTimeout {
				terminate(&w.idleTimedOut)
			} else {
				idleT.Reset(w.req.IdleTimeout - quiet)
			}
		case <-kill:
			_ = syscall.Kill(-w.pgid, syscall.SIGKILL)
			kill = nil
		case <-exited:
			if kill != nil {
				// The leader is gone but the group has the rest of its
				// grace, unless it has already let go of our output.
				select {
				case <-kill:
				case <-bothClosed(outDone, errDone):
				}
				killT.Stop()
			}
			// Sweep: nothing the agent started outlives it.
			_ = syscall.Kill(-w.pgid, syscall.SIGKILL)
			return
		}
	}
}

// bothClosed returns a channel closed once a and b are.
func bothClosed(a, b <-chan struct{}) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		<-a
		<-b
		close(c)
	}()
	return c
}

// waitClosed waits up to d for a and b to close.
func waitClosed(d time.Duration, a, b <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-bothClosed(a, b):
		return true
	case <-t.C:
		return false
	}
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// watchReader records when output arrives, for the idle timeout, and tees
// it to the transcript as it arrives. Transcript write errors are the
// writer owner's to observe; the run goes on.
type watchReader struct {
	r     io.Reader
	tee   interface{ Write([]byte) (int, error) }
	last  *atomic.Int64
	start time.Time
}

func (w *watchReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.last.Store(int64(time.Since(w.start)))
		if w.tee != nil {
			_, _ = w.tee.Write(p[:n])
		}
	}
	return n, err
}

// mergeEnv applies set on top of base: a KEY in set replaces every KEY in
// base.
func mergeEnv(base, set []string) []string {
	replaced := make(map[string]bool, len(set))
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		replaced[k] = true
	}
	env := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !replaced[k] {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// lookPath finds name the way the agent's own environment would: on the
// PATH in env, not ralph's. Relative PATH entries are skipped, so a file
// in the project cannot stand in for the agent.
func lookPath(name, dir string, env []string) (string, error) {
	notFound := &exec.Error{Name: name, Err: exec.ErrNotFound}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if !isExecutable(p) {
			return "", notFound
		}
		return name, nil // a relative name is resolved against Dir by exec
	}
	pathList, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			pathList, ok = v, true
		}
	}
	if !ok {
		pathList = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(d) {
			continue
		}
		if p := filepath.Join(d, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", notFound
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
