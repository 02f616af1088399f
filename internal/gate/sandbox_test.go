package gate

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/sandbox"
)

// watcher is a sandbox that confines nothing and reports refused as
// refused to every command it watched; watched counts the commands, ended
// those whose refusals were asked for.
type watcher struct {
	refused             []sandbox.Refusal
	discarded, readOnly []string
	watched, ended      int
}

func (w *watcher) Wrap(l proc.Launch) (proc.Launch, error) { return l, nil }

func (w *watcher) Watch() (proc.Wrapper, func() sandbox.Seen, error) {
	w.watched++
	return w, func() sandbox.Seen {
		w.ended++
		return sandbox.Seen{Refused: w.refused, Discarded: w.discarded, ReadOnly: w.readOnly}
	}, nil
}

func TestAFailingGateRefusedByTheSandboxIsASandboxError(t *testing.T) {
	t.Parallel()
	host := sandbox.Refusal{Host: "gate.example:80", Key: "sandbox.allow-hosts", Reason: "gate.example:80 is not in sandbox.allow-hosts"}
	tests := []struct {
		name    string
		command string
		timeout time.Duration
		refused []sandbox.Refusal
		want    bool // a SandboxError
	}{
		{"failed, a host refused", "echo fetching; exit 2", 0, []sandbox.Refusal{host}, true},
		{"timed out, a host refused", "sleep 10", 50 * time.Millisecond, []sandbox.Refusal{host}, true},
		{"passed, a host refused", "true", 0, []sandbox.Refusal{host}, false},
		{"failed, nothing refused", "exit 2", 0, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := &watcher{refused: tt.refused}
			r := &Runner{Dir: t.TempDir(), Env: os.Environ(), Sandbox: w, Timeout: tt.timeout}
			res, err := r.RunCommand(t.Context(), tt.command)
			if w.watched != 1 || w.ended != 1 {
				t.Errorf("watched %d runs, asked %d for their refusals; want 1 and 1", w.watched, w.ended)
			}
			var se *SandboxError
			if got := errors.As(err, &se); got != tt.want {
				t.Fatalf("RunCommand = %+v, %v; want a SandboxError: %v", res, err, tt.want)
			}
			if !tt.want {
				return
			}
			if se.Result.ExitCode == 0 || se.Result.Command != tt.command {
				t.Errorf("the error's result = %+v", se.Result)
			}
			for _, want := range []string{"`" + tt.command + "`", "gate.example:80 is not in sandbox.allow-hosts", "the sandbox's failure, not the work's"} {
				if !strings.Contains(se.Summary(), want) {
					t.Errorf("summary %q lacks %q", se.Summary(), want)
				}
			}
			if tt.command == "echo fetching; exit 2" && !strings.Contains(se.Error(), "\n    fetching") {
				t.Errorf("the error lacks the gate's output: %q", se.Error())
			}
		})
	}
}

func TestRefusalNamesItsKey(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		r    sandbox.Refusal
		want string
	}{
		{sandbox.Refusal{Host: "a:80", Key: "sandbox.allow-hosts", Reason: "a:80 is not in sandbox.allow-hosts"}, "a:80 is not in sandbox.allow-hosts"},
		{sandbox.Refusal{Host: "a:80", Key: "sandbox.allow-hosts", Reason: "a:80: the host's own addresses cannot be listed"},
			"a:80: the host's own addresses cannot be listed (sandbox.allow-hosts)"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.r, got, tt.want)
		}
	}
}

// A write the throwaway layer over the home took is no refusal: the gate
// failed on its own, and its output says what was discarded, for the
// reader of the failure; a gate that passed says nothing of it.
func TestDiscardedWritesAreNotedNotBlamed(t *testing.T) {
	t.Parallel()
	w := &watcher{discarded: []string{"~/.config/go/telemetry/local/go.count"}}
	r := &Runner{Dir: t.TempDir(), Env: os.Environ(), Sandbox: w}
	res, err := r.RunCommand(t.Context(), "echo FAIL; exit 1")
	if err != nil {
		t.Fatalf("RunCommand: %v; want a plain failure", err)
	}
	if want := "ralph: the gate wrote outside the places a gate keeps, into throwaway layers, discarded after it: ~/.config/go/telemetry/local/go.count"; !strings.Contains(res.Output, want) {
		t.Errorf("output %q lacks %q", res.Output, want)
	}
	res, err = r.RunCommand(t.Context(), "true")
	if err != nil || strings.Contains(res.Output, "throwaway") {
		t.Errorf("a passing gate: %q, %v", res.Output, err)
	}
}

// Where the layers could not be laid (a kernel without them), a failing
// gate's note names what it found read-only, five of them and a count.
func TestPlacesFoundReadOnlyAreNoted(t *testing.T) {
	t.Parallel()
	w := &watcher{readOnly: []string{"/a (x)", "/b (x)", "/c (x)", "/d (x)", "/e (x)", "/f (x)", "/g (x)"}}
	r := &Runner{Dir: t.TempDir(), Env: os.Environ(), Sandbox: w}
	res, err := r.RunCommand(t.Context(), "exit 1")
	if err != nil {
		t.Fatalf("RunCommand: %v; want a plain failure", err)
	}
	if want := "ralph: the gate found these read-only (no throwaway layer could be laid over them): /a (x); /b (x); /c (x); /d (x); /e (x) and 2 more"; !strings.Contains(res.Output, want) {
		t.Errorf("output %q lacks %q", res.Output, want)
	}
}
