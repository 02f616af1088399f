package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
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
// agent exits is killed too, so no orphan outlives the run; when ctx
// carries the run's process family (proc.WithFamily), so are the daemons
// the agent started outside its group, and the agent dies with ralph. The
// process itself is proc's; this is the streaming on top of it.
//
// The agent's environment is req.Env (os.Environ() when nil) with the
// invocation's EnvSet on top; its executable is looked up on that PATH.
// The error is non-nil only when the agent could not be started; a missing
// executable matches proc.ErrNotFound (IsNotFound). Everything the agent
// did wrong is in the Result. A process killed by a signal has ExitCode
// 128+signal, as in a shell (143 for SIGTERM, 137 for SIGKILL).
func Run(ctx context.Context, a Adapter, req Request, sink Sink) (Result, error) {
	if _, ok := a.(Scratcher); ok && req.ScratchDir == "" {
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
	l, box, err := launch(inv, req)
	if err != nil {
		return Result{}, fmt.Errorf("start %s agent: %w", a.Name(), err)
	}

	c := proc.Cmd{
		Argv: inv.Argv, Path: l.Path, Dir: req.Dir, Env: l.Env, Sandbox: box,
		// The runner reads the output itself: lines of any length, the
		// raw bytes teed to the transcript as they arrive.
		Pipes:   true,
		Timeout: req.Timeout, IdleTimeout: req.IdleTimeout,
		Grace:     cmp.Or(req.Grace, defaultGrace),
		WaitDelay: drainDelay,
	}
	if inv.Prompt == PromptStdin {
		c.Stdin = strings.NewReader(inv.Stdin)
	}
	// Otherwise Stdin stays nil, which is /dev/null: never our own stdin,
	// since some agents (Codex) read a piped stdin as more prompt.
	p, err := proc.Start(ctx, c)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return Result{Interrupted: true}, nil // done since the check above
		}
		return Result{}, fmt.Errorf("start %s agent %q: %w", a.Name(), inv.Argv[0], err)
	}
	if req.OnStart != nil {
		req.OnStart(p.Pid())
	}

	emit := sink.Emit
	if emit == nil {
		emit = func(Event) {}
	}
	dec := a.NewDecoder()
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		lr := newLineReader(teeReader{r: p.Stdout, tee: sink.Transcript}, defaultLineLimits())
		for {
			line, err := lr.Next()
			if err != nil {
				return
			}
			dec.Line(line, emit)
		}
	}()
	stderr := proc.NewTail(maxStderr)
	errDone := make(chan struct{})
	go func() {
		defer close(errDone)
		_, _ = io.Copy(stderr, p.Stderr)
	}()

	// Wait returns once the output is drained or given up on (its pipes
	// closed), so the readers are about to finish.
	pr := p.Wait()
	<-outDone
	<-errDone

	res := dec.Finish()
	res.ExitCode = pr.ExitCode
	res.TimedOut, res.IdleTimedOut, res.Interrupted = pr.TimedOut, pr.IdleTimedOut, pr.Interrupted
	res.Duration = pr.Duration
	res.Stderr = stderr.String()
	complete(a, req, &res)
	return res, nil
}

// launch is how Run starts inv, before its sandbox: the executable found
// on the PATH of the environment the agent gets (req.Env, os.Environ()
// when nil, with the invocation's EnvSet on top); and the sandbox, which
// lets the EnvSet in.
func launch(inv Invocation, req Request) (proc.Launch, proc.Wrapper, error) {
	base := req.Env
	if base == nil {
		base = os.Environ()
	}
	env := mergeEnv(base, inv.EnvSet)
	path, err := proc.LookPath(inv.Argv[0], req.Dir, env)
	if err != nil {
		return proc.Launch{}, nil, err
	}
	l := proc.Launch{Path: path, Argv: inv.Argv, Dir: req.Dir, Env: env}
	if req.Sandbox == nil {
		return l, nil, nil
	}
	names := make([]string, len(inv.EnvSet))
	for i, kv := range inv.EnvSet {
		names[i], _, _ = strings.Cut(kv, "=")
	}
	return l, req.Sandbox.Passing(names), nil
}

// Command is the process Run would start for inv: inside req.Sandbox
// when it is set, the sandbox's command line and the environment it
// passes in. --dry-run prints it. A missing executable matches
// proc.ErrNotFound.
func Command(inv Invocation, req Request) (proc.Launch, error) {
	if len(inv.Argv) == 0 {
		return proc.Launch{}, errors.New("no command to run")
	}
	l, box, err := launch(inv, req)
	if err != nil || box == nil {
		return l, err
	}
	return box.Wrap(l)
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

// teeReader copies what is read to the transcript as it arrives.
// Transcript write errors are the writer owner's to observe; the run goes
// on.
type teeReader struct {
	r   io.Reader
	tee interface{ Write([]byte) (int, error) }
}

func (t teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 && t.tee != nil {
		_, _ = t.tee.Write(p[:n])
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
