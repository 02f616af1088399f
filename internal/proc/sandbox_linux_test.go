package proc_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/proc"
)

// shellWrapper runs the command under a shell that stays its parent in
// the same group, as bwrap does, and says when SIGTERM reached it.
type shellWrapper struct {
	supervisor, detach bool
	env                []string // replaces the environment when set
}

func (w shellWrapper) Wrap(l proc.Launch) (proc.Launch, error) {
	argv := append([]string{"sh", "-c", `trap "echo wrapper-term" TERM; "$@"; echo wrapper-exit`, "sh", l.Path}, l.Argv[1:]...)
	out := proc.Launch{Path: "/bin/sh", Argv: argv, Dir: l.Dir, Env: l.Env, Supervisor: w.supervisor, Detach: w.detach}
	if w.env != nil {
		out.Env = w.env
	}
	return out, nil
}

// The command traps SIGTERM and takes its grace; a supervisor is spared
// the SIGTERM, so that it outlives the command rather than taking it down.
func TestSandboxSupervisorSparedOnStop(t *testing.T) {
	t.Parallel()
	const command = `trap "echo command-term; exit 0" TERM; echo ready; while :; do sleep 0.05; done`
	for _, tc := range []struct {
		supervisor bool
		want       []string
	}{
		{supervisor: true, want: []string{"command-term", "wrapper-exit"}},
		// Without the flag the wrapper gets SIGTERM too (its trap runs
		// once its foreground command has ended).
		{supervisor: false, want: []string{"command-term", "wrapper-term", "wrapper-exit"}},
	} {
		t.Run("supervisor="+strconv.FormatBool(tc.supervisor), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			c := startShell(t, ctx, proc.Cmd{Grace: 10 * time.Second, Sandbox: shellWrapper{supervisor: tc.supervisor}}, command)
			if l := c.next(t); l != "ready" {
				t.Fatalf("got %q, want ready", l)
			}
			cancel()
			res := c.p.Wait()
			if !res.Interrupted {
				t.Errorf("Interrupted = false, want true")
			}
			if diff := cmp.Diff(tc.want, c.rest()); diff != "" {
				t.Errorf("output after the stop (-want +got):\n%s", diff)
			}
		})
	}
}

// The sandbox decides the environment; the family marker still goes on
// top of it, and Detach gives the child a session of its own.
func TestSandboxLaunch(t *testing.T) {
	t.Parallel()
	fam, err := proc.NewFamily("sbx-test", proc.FamilyOptions{})
	if err != nil {
		t.Logf("family: %v", err)
	}
	ctx := proc.WithFamily(t.Context(), fam)
	box := shellWrapper{detach: true, env: []string{"PATH=/usr/bin:/bin", "ONLY=this"}}
	c := startShell(t, ctx, proc.Cmd{Env: []string{"PATH=/usr/bin:/bin", "SECRET=x"}, Sandbox: box},
		`echo "$ONLY/${SECRET:-none}/${`+proc.MarkerVar+`%%.*}"; ps -o sid= -o pgid= -p $$`)
	if l := c.next(t); l != "this/none/sbx-test" {
		t.Errorf("environment seen: %q, want this/none/sbx-test", l)
	}
	ids := strings.Fields(c.next(t))
	pid := strconv.Itoa(c.p.Pid())
	if !slices.Equal(ids, []string{pid, pid}) {
		t.Errorf("session and group %v, want both the wrapper's pid %s", ids, pid)
	}
	c.p.Wait()
}

type failingWrapper struct{}

func (failingWrapper) Wrap(proc.Launch) (proc.Launch, error) {
	return proc.Launch{}, errors.New("no namespaces")
}

// A sandbox that cannot be set up keeps the child from starting.
func TestSandboxFailsClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := proc.Start(t.Context(), proc.Cmd{Argv: []string{"touch", "ran"}, Dir: dir, Sandbox: failingWrapper{}})
	if err == nil || !strings.Contains(err.Error(), "sandbox: no namespaces") {
		t.Fatalf("Start: %v, want the sandbox's error", err)
	}
	if _, err := os.Stat(dir + "/ran"); err == nil {
		t.Errorf("the command ran without its sandbox")
	}
}
