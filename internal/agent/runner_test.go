package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recorder is a Sink that keeps what it is given; safe for the runner's
// reader goroutine and the test.
type recorder struct {
	mu         sync.Mutex
	transcript bytes.Buffer
	events     []Event
}

func (r *recorder) sink() Sink {
	return Sink{
		Transcript: writerFunc(func(p []byte) (int, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.transcript.Write(p)
		}),
		Emit: func(e Event) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.events = append(r.events, e)
		},
	}
}

func (r *recorder) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var texts []string
	for _, e := range r.events {
		if e.Kind == EventText {
			texts = append(texts, e.Text)
		}
	}
	return texts
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// shell is a command agent running a shell script. sh -c rather than a
// script file: exec'ing a file just written races with forks in parallel
// tests (ETXTBSY).
func shell(t *testing.T, script string, args ...string) Adapter {
	t.Helper()
	a, err := New("command", Options{Command: "/bin/sh", Args: append([]string{"-c", script, "sh"}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func testEnv() []string { return []string{"PATH=" + os.Getenv("PATH")} }

func TestRunProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name    string
		a       Adapter
		req     Request
		want    Result
		wantOut string // the transcript
	}{
		{
			name:    "exit code, stderr kept out of the transcript",
			a:       shell(t, "echo out; echo oops >&2; exit 3"),
			want:    Result{RawText: true, FinalText: "out", Messages: []string{"out"}, ExitCode: 3, Stderr: "oops\n"},
			wantOut: "out\n",
		},
		{
			name: "failure without output",
			a:    shell(t, "echo 'bad flag' >&2; exit 2"),
			want: Result{RawText: true, IsError: true, ErrorKind: ErrorOther, ErrorText: "bad flag", ExitCode: 2, Stderr: "bad flag\n"},
		},
		{
			name:    "prompt on stdin",
			a:       shell(t, "cat"),
			req:     Request{Prompt: "line one\nline two"},
			want:    Result{RawText: true, FinalText: "line one\nline two", Messages: []string{"line one\nline two"}},
			wantOut: "line one\nline two",
		},
		{
			name:    "prompt argument, stdin is /dev/null",
			a:       shell(t, `printf '%s\n' "$1"; readlink /proc/self/fd/0; cat`, "{prompt}"),
			req:     Request{Prompt: "the prompt"},
			want:    Result{RawText: true, FinalText: "the prompt\n/dev/null", Messages: []string{"the prompt\n/dev/null"}},
			wantOut: "the prompt\n/dev/null\n",
		},
		{
			name:    "prompt file",
			a:       shell(t, `cat "$1"`, "{prompt_file}"),
			req:     Request{PromptFile: writeFile(t, dir, "prompt.md", "from the file\n")},
			want:    Result{RawText: true, FinalText: "from the file", Messages: []string{"from the file"}},
			wantOut: "from the file\n",
		},
		{
			name: "env on top of the request's, dir",
			a: func() Adapter {
				a, err := New("command", Options{Command: "sh", Args: []string{"-c", `echo "$K1 $K2"; pwd`}, Env: map[string]string{"K1": "new"}})
				if err != nil {
					t.Fatal(err)
				}
				return a
			}(),
			req:     Request{Dir: dir, Env: append(testEnv(), "K1=old", "K2=kept")},
			want:    Result{RawText: true, FinalText: "new kept\n" + dir, Messages: []string{"new kept\n" + dir}},
			wantOut: "new kept\n" + dir + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.req.Env == nil {
				tt.req.Env = testEnv()
			}
			var rec recorder
			got, err := Run(t.Context(), tt.a, tt.req, rec.sink())
			if err != nil {
				t.Fatal(err)
			}
			got.Duration = 0
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantOut, rec.transcript.String()); diff != "" {
				t.Errorf("transcript (-want +got):\n%s", diff)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunClaude runs the Claude adapter against a fake claude that records
// its stdin and replays a fixture.
func TestRunClaude(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fixture, err := filepath.Abs("testdata/claude-stream-sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	stdin := filepath.Join(dir, "stdin")
	a, err := New("claude", Options{Command: "sh", Args: []string{"-c", `cat >"$1"; cat "$2"`, "sh", stdin, fixture}})
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	got, err := Run(t.Context(), a, Request{Prompt: "do the task", Env: testEnv()}, rec.sink())
	if err != nil {
		t.Fatal(err)
	}
	want, wantEvents := decode(t, newClaudeDecoder(), readFixture(t, "claude-stream-sample.jsonl"))
	got.Duration = 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantEvents, rec.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(string(readFixture(t, "claude-stream-sample.jsonl")), rec.transcript.String()); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(stdin); string(b) != "do the task" {
		t.Errorf("agent read %q on stdin, want the prompt", b)
	}
}

// TestRunTimeouts checks that each way of ending a run is reported as
// itself and leaves nothing of the process group alive. The agents print
// their pid (the group id) and their child's pid first.
func TestRunTimeouts(t *testing.T) {
	t.Parallel()
	const stubborn = `echo $$; trap "" TERM; sleep 60 & echo $!; wait`
	tests := []struct {
		name     string
		script   string
		req      Request
		cancel   time.Duration // cancel the context after this long
		want     func(Result) bool
		wantCode int
	}{
		{
			name:     "wall timeout kills a child that ignores SIGTERM",
			script:   stubborn,
			req:      Request{Timeout: 300 * time.Millisecond, Grace: 200 * time.Millisecond},
			want:     func(r Result) bool { return r.TimedOut && !r.IdleTimedOut && !r.Interrupted },
			wantCode: 128 + int(syscall.SIGKILL),
		},
		{
			name:     "idle timeout",
			script:   `echo $$; sleep 60 & echo $!; wait`,
			req:      Request{IdleTimeout: 300 * time.Millisecond, Timeout: time.Minute, Grace: time.Second},
			want:     func(r Result) bool { return r.IdleTimedOut && !r.TimedOut && !r.Interrupted },
			wantCode: 128 + int(syscall.SIGTERM),
		},
		{
			name:     "cancelled",
			script:   stubborn,
			req:      Request{Grace: 100 * time.Millisecond},
			cancel:   200 * time.Millisecond,
			want:     func(r Result) bool { return r.Interrupted && !r.TimedOut && !r.IdleTimedOut },
			wantCode: 128 + int(syscall.SIGKILL),
		},
		{
			name:     "steady output is not idle; a leftover child is swept",
			script:   `echo $$; sleep 60 & echo $!; for i in 1 2 3 4 5 6 7 8 9 10; do echo $i; sleep 0.05; done`,
			req:      Request{IdleTimeout: 400 * time.Millisecond},
			want:     func(r Result) bool { return !r.IdleTimedOut && !r.TimedOut && !r.Interrupted },
			wantCode: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel > 0 {
				time.AfterFunc(tt.cancel, cancel)
			}
			tt.req.Env = testEnv()
			var rec recorder
			got, err := Run(ctx, shell(t, tt.script), tt.req, rec.sink())
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(got) || got.ExitCode != tt.wantCode {
				t.Errorf("got TimedOut %v, IdleTimedOut %v, Interrupted %v, ExitCode %d; want code %d",
					got.TimedOut, got.IdleTimedOut, got.Interrupted, got.ExitCode, tt.wantCode)
			}
			texts := rec.texts()
			if len(texts) < 2 {
				t.Fatalf("agent printed %q, want its pids", texts)
			}
			pgid, _ := strconv.Atoi(texts[0])
			child, _ := strconv.Atoi(texts[1])
			assertGone(t, pgid, child)
		})
	}
}

// assertGone fails unless no process of the group is alive. A killed
// orphan stays a zombie until init reaps it, and where init does not (some
// containers) it stays: zombies count as gone.
func assertGone(t *testing.T, pgid, child int) {
	t.Helper()
	if pgid <= 1 || child <= 1 {
		t.Fatalf("bad pids %d, %d", pgid, child)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
			return
		}
		live := liveMembers(pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d survived: live pids %v (child %d)", pgid, live, child)
		}
		time.Sleep(20 * time.Millisecond)
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
		if len(fields) < 3 || fields[0] == "Z" || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		live = append(live, pid)
	}
	return live
}

func TestRunMissingBinary(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"ralph-no-such-agent", "./ralph-no-such-agent", "/nonexistent/ralph-no-such-agent"} {
		a, err := New("claude", Options{Command: command})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(t.Context(), a, Request{Dir: t.TempDir(), Env: testEnv()}, Sink{})
		if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), command) {
			t.Errorf("Run(%s) = %v, want exec.ErrNotFound naming the command", command, err)
		}
	}
}

// lineAdapter runs a fixed argv and records, validated, the lines its
// decoder is given.
type lineAdapter struct {
	argv  []string
	lines *[][]byte
}

func (lineAdapter) Name() string { return "lines" }
func (a lineAdapter) Invocation(Request) (Invocation, error) {
	return Invocation{Argv: a.argv, Prompt: PromptArg}, nil
}
func (a lineAdapter) NewDecoder() Decoder { return lineDecoder{a.lines} }

type lineDecoder struct{ lines *[][]byte }

func (d lineDecoder) Line(line []byte, _ func(Event)) { *d.lines = append(*d.lines, bytes.Clone(line)) }
func (lineDecoder) Finish() Result                    { return Result{FinalText: "-"} }

func TestRunHugeLine(t *testing.T) {
	t.Parallel()
	line := hugeLine(20 << 20)
	path := writeFile(t, t.TempDir(), "huge.jsonl", string(line)+`{"type":"result"}`+"\n")
	var lines [][]byte
	var rec recorder
	_, err := Run(t.Context(), lineAdapter{argv: []string{"cat", path}, lines: &lines}, Request{Env: testEnv()}, rec.sink())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.transcript.Bytes(), append(line, `{"type":"result"}`+"\n"...)) {
		t.Errorf("transcript is %d bytes, not the %d the agent wrote", rec.transcript.Len(), len(line)+18)
	}
	if len(lines) != 2 || string(lines[1]) != `{"type":"result"}` {
		t.Fatalf("decoder got %d lines", len(lines))
	}
	if !json.Valid(lines[0]) || len(lines[0]) > 64<<10 || !bytes.Contains(lines[0], []byte("bytes elided]")) {
		t.Errorf("decoder got a %d-byte line, valid JSON %v: %.120q", len(lines[0]), json.Valid(lines[0]), lines[0])
	}
}

// TestRunEscapedHolder: a process that left the group (setsid) but holds
// stdout cannot be killed by the sweep; Run gives up on the pipe instead
// of waiting for it.
func TestRunEscapedHolder(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	// The holder outlives any test timeout: a Run that waited for the pipe
	// would hang, not merely be slow.
	pidFile := filepath.Join(t.TempDir(), "holder.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	got, err := Run(t.Context(), shell(t, `setsid sleep 3600 & echo $! > "$1"; echo started`, pidFile),
		Request{Env: testEnv()}, Sink{})
	if err != nil {
		t.Fatal(err)
	}
	if got.FinalText != "started" || got.ExitCode != 0 {
		t.Errorf("got FinalText %q, ExitCode %d", got.FinalText, got.ExitCode)
	}
}
