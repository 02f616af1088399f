package notify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/proc"
)

// TestCommandNamingTheAgentsFilesRefused: a command that names a file in
// the project (relative, absolute, through a variable, as an option's
// value) or in another place the agent can write is refused at start,
// with the way out; one naming files elsewhere, or URLs, is not.
func TestCommandNamingTheAgentsFilesRefused(t *testing.T) {
	t.Parallel()
	project, shared, home := t.TempDir(), t.TempDir(), t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "P=" + project}
	programs := proc.NewOutside(env, []string{project, shared})
	for _, c := range []struct {
		cmd     string
		refused bool
	}{
		{"sh scripts/notify.sh", true},
		{"./notify.sh", true},
		{"sh " + project + "/x.sh", true},
		{"sh $P/x.sh", true},
		{"sh \"${P}/x.sh\"", true},
		{"cd " + project + " && make notify", true},
		{"curl --data-binary=@" + shared + "/body https://example.com/x", true},
		{"X=" + shared + "/bin/tool run", true},
		{"curl -d \"$RALPH_MESSAGE\" https://hooks.example.com/a/b", false},
		{"notify-send ralph \"$RALPH_MESSAGE\"", false},
		{"echo $RALPH_EVENT >> ~/ralph-events.log", false},
		{"/usr/bin/env true", false},
	} {
		err := checkWords(c.cmd, project, env, programs)
		if c.refused != (err != nil) {
			t.Errorf("%q: %v; want refused %v", c.cmd, err, c.refused)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "notify.sandbox = true") {
			t.Errorf("%q: %v; want the way out named", c.cmd, err)
		}
	}
}

// TestCommandRunsOutsideTheProject: the command's shell is ralph's, its
// PATH has none of the project's directories, and it runs outside the
// project; a relative name in it is not the project's file.
func TestCommandRunsOutsideTheProject(t *testing.T) {
	t.Parallel()
	project, home, out := t.TempDir(), t.TempDir(), t.TempDir()
	venv := filepath.Join(project, ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	canary := filepath.Join(out, "canary")
	fake := "#!/bin/sh\necho fake >> " + canary + "\nexec /bin/sh \"$@\"\n"
	if err := os.WriteFile(filepath.Join(venv, "sh"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + venv + ":" + os.Getenv("PATH"), "HOME=" + home}
	cfg := config.Notify{Command: "pwd > " + filepath.Join(out, "where") + "; echo $PATH > " + filepath.Join(out, "path"),
		Events: []string{"started"}}
	n, err := New(cfg, Options{Dir: project, Environ: env, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range run()[:1] {
		n.Handle(e)
	}
	n.Close(nil)
	if _, err := os.Stat(canary); err == nil {
		t.Error("the project's .venv/bin/sh ran")
	}
	where, err := os.ReadFile(filepath.Join(out, "where"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(home, strings.TrimSpace(string(where))); diff != "" {
		t.Errorf("working directory (-want +got):\n%s", diff)
	}
	path, err := os.ReadFile(filepath.Join(out, "path"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(path), project) {
		t.Errorf("PATH %s has the project's directory", path)
	}
}

// TestCommandSandboxNeedsASandbox: notify.sandbox without a sandbox is
// an error at start, not a command run unconfined.
func TestCommandSandboxNeedsASandbox(t *testing.T) {
	t.Parallel()
	_, err := New(config.Notify{Command: "sh scripts/notify.sh", Sandbox: true}, Options{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "has none") {
		t.Errorf("got %v; want an error saying the run has no sandbox", err)
	}
}

func TestShellWords(t *testing.T) {
	t.Parallel()
	got := shellWords(`sh "a b"/c 'd e' f\ g;h|i>j&&k $(l) ` + "`m`")
	want := []string{"sh", "a b/c", "d e", "f g", "h", "i", "j", "k", "$", "l", "m"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("words (-want +got):\n%s", diff)
	}
}

func FuzzShellWords(f *testing.F) {
	for _, s := range []string{"sh scripts/notify.sh", `a "b\"c" 'd`, `x\`, "a;b|c", `"unterminated`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range shellWords(s) {
			if len(w) > len(s) {
				t.Fatalf("word %q longer than the command %q", w, s)
			}
		}
	})
}
