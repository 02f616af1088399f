package proc_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/proc"
)

// child is a shell script started in Pipes mode, with what it prints on
// stdout as lines.
type child struct {
	p     *proc.Process
	lines <-chan string // closed at EOF
}

func startShell(t *testing.T, ctx context.Context, c proc.Cmd, script string) child {
	t.Helper()
	c.Argv = []string{"sh", "-c", script}
	c.Pipes = true
	p, err := proc.Start(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(p.Stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	go func() { _, _ = io.Copy(io.Discard, p.Stderr) }()
	return child{p: p, lines: lines}
}

// next returns the next line the child printed.
func (c child) next(t *testing.T) string {
	t.Helper()
	l, ok := <-c.lines
	if !ok {
		t.Fatal("the child's output ended early")
	}
	return l
}

func (c child) pid(t *testing.T) int {
	t.Helper()
	l := c.next(t)
	pid, err := strconv.Atoi(l)
	if err != nil || pid <= 1 {
		t.Fatalf("want a pid, got %q", l)
	}
	return pid
}

// rest collects the lines left once the child is done.
func (c child) rest() []string {
	var rest []string
	for l := range c.lines {
		rest = append(rest, l)
	}
	return rest
}

// The script prints its pid (the group's), its child's pid, then "ready",
// and ignores SIGTERM, as does its child.
const stubborn = `trap "" TERM; echo $$; sleep 60 & echo $!; echo ready; wait`

func TestStopKillsTheGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cmd    proc.Cmd
		cancel bool // cancel ctx once the child is ready
		want   func(proc.Result) bool
	}{
		{
			name: "wall timeout",
			cmd:  proc.Cmd{Timeout: 100 * time.Millisecond, Grace: 100 * time.Millisecond},
			want: func(r proc.Result) bool { return r.TimedOut && !r.IdleTimedOut && !r.Interrupted },
		},
		{
			name: "idle timeout",
			cmd:  proc.Cmd{IdleTimeout: 100 * time.Millisecond, Timeout: time.Minute, Grace: 100 * time.Millisecond},
			want: func(r proc.Result) bool { return r.IdleTimedOut && !r.TimedOut && !r.Interrupted },
		},
		{
			name:   "ctx done",
			cmd:    proc.Cmd{Grace: 100 * time.Millisecond},
			cancel: true,
			want:   func(r proc.Result) bool { return r.Interrupted && !r.TimedOut && !r.IdleTimedOut },
		},
		{
			name:   "ctx done, no grace",
			cancel: true,
			want:   func(r proc.Result) bool { return r.Interrupted && !r.TimedOut && !r.IdleTimedOut },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			c := startShell(t, ctx, tt.cmd, stubborn)
			pgid, grandchild := c.pid(t), c.pid(t)
			if pgid != c.p.Pid() {
				t.Errorf("the script's pid is %d, Pid() %d", pgid, c.p.Pid())
			}
			exited := watchExit(t, grandchild)
			if c.next(t) != "ready" {
				t.Fatal("want ready")
			}
			if tt.cancel {
				cancel()
			}
			got := c.p.Wait()
			if !tt.want(got) || got.ExitCode != 137 || got.Signal != syscall.SIGKILL {
				t.Errorf("got %+v, want the reason alone and SIGKILL (137)", got)
			}
			waitExited(t, exited, grandchild)
			assertGroupGone(t, pgid)
		})
	}
}

func TestCancelTermsThenKills(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The script notes SIGTERM and goes on waiting for its child, which
	// ignores it.
	c := startShell(t, ctx, proc.Cmd{Grace: 100 * time.Millisecond},
		`trap "" TERM; sleep 60 & trap "echo TERM" TERM; echo ready; while :; do wait; done`)
	if c.next(t) != "ready" {
		t.Fatal("want ready")
	}
	cancel()
	got := c.p.Wait()
	if !got.Interrupted || got.ExitCode != 137 {
		t.Errorf("got %+v, want interrupted, killed", got)
	}
	if diff := cmp.Diff([]string{"TERM"}, c.rest()); diff != "" {
		t.Errorf("the child saw (-want +got):\n%s", diff)
	}
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script  string
		code    int
		signal  syscall.Signal
		wantErr string
	}{
		{"exit 0", 0, 0, ""},
		{"exit 3", 3, 0, "exit status 3"},
		{"kill -TERM $$", 143, syscall.SIGTERM, "signal: terminated"},
		{"kill -KILL $$", 137, syscall.SIGKILL, "signal: killed"},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			got, err := proc.Run(t.Context(), proc.Cmd{Argv: []string{"sh", "-c", tt.script}})
			if err != nil {
				t.Fatal(err)
			}
			if got.ExitCode != tt.code || got.Signal != tt.signal || got.TimedOut || got.Interrupted {
				t.Errorf("got %+v, want code %d, signal %v", got, tt.code, tt.signal)
			}
			gotErr := ""
			if err := got.Err(); err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("Err() = %q, want %q", gotErr, tt.wantErr)
			}
		})
	}
}

// TestSweep: what the child left running in its group dies when it exits.
func TestSweep(t *testing.T) {
	t.Parallel()
	c := startShell(t, t.Context(), proc.Cmd{}, `echo $$; sleep 60 & echo $!`)
	pgid, grandchild := c.pid(t), c.pid(t)
	exited := watchExit(t, grandchild)
	if got := c.p.Wait(); got.ExitCode != 0 || got.Err() != nil {
		t.Errorf("got %+v, want exit 0", got)
	}
	waitExited(t, exited, grandchild)
	assertGroupGone(t, pgid)
}

// TestEscapedHolder: a process that left the group (setsid) but holds
// stdout cannot be swept; Wait gives up on the pipe after WaitDelay.
func TestEscapedHolder(t *testing.T) {
	t.Parallel()
	if _, err := proc.LookPath("setsid", "", nil); err != nil {
		t.Skip("no setsid")
	}
	var out bytes.Buffer
	// The holder outlives any test timeout: a Wait that waited for the
	// pipe would hang, not merely be slow.
	p, err := proc.Start(t.Context(), proc.Cmd{
		Argv:      []string{"sh", "-c", `setsid sleep 3600 & echo $!`},
		Stdout:    &out,
		WaitDelay: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := p.Wait()
	if pid, err := strconv.Atoi(strings.TrimSpace(out.String())); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	} else {
		t.Errorf("output %q, want the holder's pid", out.String())
	}
	if got.ExitCode != 0 {
		t.Errorf("got %+v", got)
	}
}

func TestIO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name       string
		cmd        proc.Cmd
		script     string
		out, errs  string
		sameWriter bool
	}{
		{name: "stdin from a reader", cmd: proc.Cmd{Stdin: strings.NewReader("the prompt")}, script: "cat", out: "the prompt"},
		{name: "no stdin is /dev/null", script: `cat; readlink /proc/self/fd/0 || echo /dev/null`, out: "/dev/null\n"},
		{name: "a child that does not read its stdin", cmd: proc.Cmd{Stdin: strings.NewReader(strings.Repeat("x", 1<<20))}, script: "echo done", out: "done\n"},
		{name: "stdout and stderr apart", script: "echo out; echo err >&2", out: "out\n", errs: "err\n"},
		{name: "one writer for both", script: "echo out; echo err >&2; echo out", out: "out\nerr\nout\n", sameWriter: true},
		{name: "dir and env", cmd: proc.Cmd{Dir: dir, Env: []string{"K=v"}}, script: `echo "$K"; pwd`, out: "v\n" + dir + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errs bytes.Buffer
			c := tt.cmd
			c.Argv = []string{"/bin/sh", "-c", tt.script}
			c.Stdout, c.Stderr = &out, &errs
			if tt.sameWriter {
				c.Stderr = &out
			}
			got, err := proc.Run(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			if got.ExitCode != 0 {
				t.Errorf("exit %d, stderr %q", got.ExitCode, errs.String())
			}
			if diff := cmp.Diff(tt.out, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.errs, errs.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	_, err := proc.Run(t.Context(), proc.Cmd{Argv: []string{"ralph-no-such-program"}})
	if !proc.IsNotFound(err) || !strings.Contains(err.Error(), "ralph-no-such-program") {
		t.Errorf("missing program: %v, want not found, naming it", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := proc.Run(ctx, proc.Cmd{Argv: []string{"true"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("ctx done: %v, want context.Canceled", err)
	}
	if _, err := proc.Run(t.Context(), proc.Cmd{Argv: []string{"true"}, Pipes: true, Stdout: io.Discard}); err == nil {
		t.Error("Pipes with Stdout: no error")
	}
}

func TestRunsOnTheChildsPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "ralph-proc-hello"), []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err := proc.Run(t.Context(), proc.Cmd{Argv: []string{"ralph-proc-hello"}, Env: []string{"PATH=" + bin}, Stdout: &out})
	if err != nil || out.String() != "hello\n" {
		t.Errorf("on the child's PATH: %v, %q", err, out.String())
	}
	// Relative entries are skipped: a file in the project cannot stand in
	// for a program.
	_, err = proc.Run(t.Context(), proc.Cmd{Argv: []string{"ralph-proc-hello"}, Dir: dir, Env: []string{"PATH=bin"}})
	if !proc.IsNotFound(err) {
		t.Errorf("on a relative PATH entry: %v, want not found", err)
	}
}

func TestLookPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"tool": 0o755, "plain": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir string
		env       []string
		want      string // "" for not found
	}{
		{"tool", "", []string{"PATH=/nonexistent:" + dir}, filepath.Join(dir, "tool")},
		{"tool", "", []string{"PATH=/nonexistent"}, ""},
		{"plain", "", []string{"PATH=" + dir}, ""},
		{"adir", "", []string{"PATH=" + dir}, ""},
		{"tool", dir, []string{"PATH=.:" + filepath.Base(dir)}, ""},
		{"./tool", dir, nil, "./tool"},
		{"./plain", dir, nil, ""},
		{filepath.Join(dir, "tool"), "", nil, filepath.Join(dir, "tool")},
		{"sh", "", nil, "found on ralph's PATH"},
	}
	for _, tt := range tests {
		got, err := proc.LookPath(tt.name, tt.dir, tt.env)
		switch {
		case tt.want == "":
			if !proc.IsNotFound(err) {
				t.Errorf("LookPath(%q, %q, %q) = %q, %v; want not found", tt.name, tt.dir, tt.env, got, err)
			}
		case tt.want == "found on ralph's PATH":
			if err != nil || !filepath.IsAbs(got) {
				t.Errorf("LookPath(%q) with no PATH in env = %q, %v; want ralph's", tt.name, got, err)
			}
		case err != nil || got != tt.want:
			t.Errorf("LookPath(%q, %q, %q) = %q, %v; want %q", tt.name, tt.dir, tt.env, got, err, tt.want)
		}
	}
}

// assertGroupGone fails unless no live process is left in group pgid; by
// then every member the test knew of has been seen to exit. A killed
// orphan stays a zombie until init reaps it, and where init does not (some
// containers) it stays: zombies count as gone.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return
	}
	if live := liveMembers(pgid); len(live) > 0 {
		t.Errorf("process group %d survived: live pids %v", pgid, live)
	}
}

// liveMembers lists the non-zombie processes in group pgid, from /proc.
func liveMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		live = append(live, pid)
	}
	return live
}
