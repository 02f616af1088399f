package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/proc"
)

// tree makes the directories and files named (a trailing / is a
// directory) under root, which it returns with its links resolved.
func tree(t *testing.T, names ...string) string {
	t.Helper()
	return treeIn(t, t.TempDir(), names...)
}

// treeIn is tree in dir, which it empties of nothing: the caller owns it.
func treeIn(t *testing.T, dir string, names ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := filepath.Join(root, n)
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fixture is a home with secrets and an agent's directory, and a project
// with ralph's state, its git directory and a task's worktree.
func fixture(t *testing.T) (root string, p Policy, env []string) {
	t.Helper()
	return fixtureIn(t, t.TempDir())
}

// fixtureIn is fixture in dir.
func fixtureIn(t *testing.T, dir string) (root string, p Policy, env []string) {
	t.Helper()
	root = treeIn(t, dir, "home/.ssh/id_ed25519", "home/.netrc", "home/.claude/", "home/.claude.json", "home/cache/",
		"proj/.git/hooks/", "proj/.git/config", "proj/.ralph/worktrees/1/src/", "proj/src/", "proj/.env", "bin/agent")
	p = Policy{
		Project:   filepath.Join(root, "proj"),
		Worktrees: filepath.Join(root, "proj/.ralph/worktrees"),
		GitDir:    filepath.Join(root, "proj/.git"),
		ReadOnly:  []string{".ralph", filepath.Join(root, "proj/.git/hooks"), filepath.Join(root, "proj/.git/config")},
		Writable:  []string{"~/.claude", "~/.claude.json", "$XDG_CACHE_HOME", "~/missing"},
		Hidden:    []string{"~/.ssh", "~/.netrc", "~/.aws", "$XDG_RUNTIME_DIR", ".env"},
		Env:       []string{"ANTHROPIC_*", "FAKE"},
		Network:   NetworkOpen,
	}
	env = []string{"HOME=" + filepath.Join(root, "home"), "XDG_CACHE_HOME=" + filepath.Join(root, "home/cache"),
		"PATH=" + filepath.Join(root, "bin") + ":/usr/bin:/bin"}
	return root, p, env
}

func TestBwrapArgs(t *testing.T) {
	t.Parallel()
	root, p, env := fixture(t)
	box, err := NewBox(KindBwrap, "/usr/bin/bwrap", p, env)
	if err != nil {
		t.Fatal(err)
	}
	box.tmp = filepath.Join(root, "bin") // as if the executable were in /tmp
	r := func(rel string) string { return filepath.Join(root, rel) }
	runEnv := slices.Concat(env, []string{"ANTHROPIC_API_KEY=k", "GITHUB_TOKEN=secret", "AWS_SECRET_ACCESS_KEY=s", "FAKE=1",
		"FAKEX=no", "LC_ALL=C", "TMPDIR=/var/folders/x", "IS_SANDBOX=1"})
	common := []string{"/usr/bin/bwrap", "--unshare-all", "--share-net", "--die-with-parent", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", r("bin")}
	hiddenArgs := []string{"--tmpfs", r("home/.ssh"), "--remount-ro", r("home/.ssh"), "--ro-bind", "/dev/null", r("home/.netrc"),
		"--ro-bind", "/dev/null", r("proj/.env")}

	for _, tc := range []struct {
		name, dir string
		binds     []string
	}{
		{name: "project", dir: r("proj/src"), binds: []string{
			"--bind", r("proj"), r("proj"),
			"--bind", r("proj/.git"), r("proj/.git"),
			"--bind", r("home/.claude"), r("home/.claude"),
			"--bind", r("home/.claude.json"), r("home/.claude.json"),
			"--bind", r("home/cache"), r("home/cache"),
			"--ro-bind", r("proj/.ralph"), r("proj/.ralph"),
			"--ro-bind", r("proj/.git/hooks"), r("proj/.git/hooks"),
			"--ro-bind", r("proj/.git/config"), r("proj/.git/config"),
		}},
		// A task's worktree: that worktree and the git directory, not the
		// project.
		{name: "worktree", dir: r("proj/.ralph/worktrees/1/src"), binds: []string{
			"--bind", r("proj/.git"), r("proj/.git"),
			"--bind", r("home/.claude"), r("home/.claude"),
			"--bind", r("home/.claude.json"), r("home/.claude.json"),
			"--bind", r("home/cache"), r("home/cache"),
			"--ro-bind", r("proj/.git/hooks"), r("proj/.git/hooks"),
			"--ro-bind", r("proj/.git/config"), r("proj/.git/config"),
			"--bind", r("proj/.ralph/worktrees/1"), r("proj/.ralph/worktrees/1"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := box.Passing([]string{"IS_SANDBOX"}).Wrap(proc.Launch{Path: r("bin/agent"), Argv: []string{"agent", "-p"}, Dir: tc.dir, Env: runEnv})
			if err != nil {
				t.Fatal(err)
			}
			want := append(append(append(common, tc.binds...), hiddenArgs...),
				"--chdir", tc.dir, "--", r("bin/agent"), "-p")
			if diff := cmp.Diff(want, got.Argv); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
			wantEnv := slices.Concat(env, []string{"ANTHROPIC_API_KEY=k", "FAKE=1", "LC_ALL=C", "IS_SANDBOX=1", "TMPDIR=" + r("bin")})
			if diff := cmp.Diff(wantEnv, got.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if got.Path != "/usr/bin/bwrap" || !got.Supervisor || !got.Detach {
				t.Errorf("launch %s supervisor=%v detach=%v, want bwrap, a detached supervisor", got.Path, got.Supervisor, got.Detach)
			}
		})
	}
}

// A copy is mounted in its path's place, after the writable paths (so
// at one depth it wins), its read-only paths from the host over it; a
// copy whose source or path is missing is left out. sandbox-exec cannot
// mount one: the path is writable there.
func TestCopies(t *testing.T) {
	t.Parallel()
	root, p, env := fixture(t)
	r := func(rel string) string { return filepath.Join(root, rel) }
	for _, d := range []string{"copies/claude/local", "home/.claude/local"} {
		if err := os.MkdirAll(r(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.Writable = []string{"~/.claude"} // sandbox.allow-write, say
	copies := []Copy{
		{Path: r("home/.claude"), Source: r("copies/claude"), ReadOnly: []string{r("home/.claude/local"), r("home/.claude/gone")}},
		{Path: r("home/.claude.json"), Source: r("copies/missing.json")},
		{Path: r("home/.missing"), Source: r("copies/claude")},
	}
	box, err := NewBox(KindBwrap, "/usr/bin/bwrap", p, env)
	if err != nil {
		t.Fatal(err)
	}
	box = box.WithCopies(copies)
	got, err := box.Wrap(proc.Launch{Path: r("bin/agent"), Argv: []string{"agent"}, Dir: r("proj"), Env: env})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(got.Argv, " ")
	copyBind := strings.Join([]string{"--bind", r("home/.claude"), r("home/.claude"), "--bind", r("copies/claude"), r("home/.claude")}, " ")
	roBind := strings.Join([]string{"--ro-bind", r("home/.claude/local"), r("home/.claude/local")}, " ")
	if i, j := strings.Index(args, copyBind), strings.Index(args, roBind); i < 0 || j < i {
		t.Errorf("argv\n%s\nwant\n%s\nthen\n%s", args, copyBind, roBind)
	}
	if strings.Contains(args, "missing") || strings.Contains(args, "gone") {
		t.Errorf("argv mounts what is missing: %s", args)
	}
	reach, err := box.Reach()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(reach.Writable, r("home/.claude")+" (a per-run copy)") {
		t.Errorf("Reach().Writable = %q, want the copy named", reach.Writable)
	}

	sx, err := NewBox(KindSandboxExec, "/usr/bin/sandbox-exec", Policy{Project: p.Project}, env)
	if err != nil {
		t.Fatal(err)
	}
	got, err = sx.WithCopies(copies).Wrap(proc.Launch{Path: r("bin/agent"), Argv: []string{"agent"}, Dir: r("proj"), Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Argv[2], `(allow file-write* (subpath "`+r("home/.claude")+`"))`) {
		t.Errorf("sandbox-exec's profile does not make the path writable:\n%s", got.Argv[2])
	}
}

func TestWrapRefuses(t *testing.T) {
	t.Parallel()
	root, p, env := fixture(t)
	for _, tc := range []struct {
		name string
		edit func(*Policy)
		dir  string
		want string
	}{
		{name: "outside the project", dir: filepath.Join(root, "home"), want: "is outside the project"},
		{name: "relative", dir: "proj", want: "not absolute"},
		{name: "project hidden", dir: filepath.Join(root, "proj"), edit: func(p *Policy) { p.Hidden = []string{"~/../proj"} },
			want: "hidden (sandbox.deny) but holds the project"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := p
			if tc.edit != nil {
				tc.edit(&p)
			}
			box, err := NewBox(KindBwrap, "/usr/bin/bwrap", p, env)
			if err != nil {
				t.Fatal(err)
			}
			_, err = box.Wrap(proc.Launch{Path: "/bin/true", Argv: []string{"true"}, Dir: tc.dir})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Wrap: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSandboxExecProfile(t *testing.T) {
	t.Parallel()
	r := layout{
		cwd: "/Users/me/proj",
		binds: []bind{{path: "/Users/me/proj", writable: true}, {path: "/Users/me/.claude", writable: true},
			{path: "/Users/me/proj/.ralph"}, {path: `/Users/me/odd "dir"`, writable: true}},
		hidden: []hidden{{path: "/Users/me/.ssh", dir: true}, {path: "/Users/me/.netrc"}},
	}
	want := `(version 1)
(allow default)
(deny file-write*)
(allow file-write*
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper")
  (regex #"^/dev/tty") (regex #"^/dev/fd/")
  (subpath "/private/tmp") (subpath "/private/var/folders"))
(allow file-write* (subpath "/Users/me/proj"))
(allow file-write* (subpath "/Users/me/.claude"))
(deny file-write* (subpath "/Users/me/proj/.ralph"))
(allow file-write* (subpath "/Users/me/odd \"dir\""))
(deny file-read* file-write* (subpath "/Users/me/.ssh"))
(deny file-read* file-write* (literal "/Users/me/.netrc"))
(deny signal)
(allow signal (target same-sandbox))
`
	if diff := cmp.Diff(want, profile(r, NetworkOpen, nil)); diff != "" {
		t.Errorf("profile with the network on (-want +got):\n%s", diff)
	}
	if got := profile(r, NetworkOff, nil); got != want+"(deny network*)\n" {
		t.Errorf("profile with the network off ends:\n%s", got[len(got)-60:])
	}
}

func TestSandboxExecWrap(t *testing.T) {
	t.Parallel()
	root, p, env := fixture(t)
	box, err := NewBox(KindSandboxExec, "/usr/bin/sandbox-exec", p, env)
	if err != nil {
		t.Fatal(err)
	}
	got, err := box.Wrap(proc.Launch{Path: filepath.Join(root, "bin/agent"), Argv: []string{"agent", "-p"}, Dir: p.Project,
		Env: append(env, "TMPDIR=/var/folders/x", "GITHUB_TOKEN=t")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Argv) != 5 || got.Argv[0] != "/usr/bin/sandbox-exec" || got.Argv[1] != "-p" ||
		!strings.Contains(got.Argv[2], "(deny file-read* file-write* (subpath \""+filepath.Join(root, "home/.ssh")+"\"))") ||
		got.Argv[4] != "-p" {
		t.Errorf("argv %q: want sandbox-exec -p PROFILE AGENT -p", got.Argv)
	}
	if diff := cmp.Diff(append(env, "TMPDIR=/var/folders/x"), got.Env); diff != "" {
		t.Errorf("env (-want +got): macOS keeps its TMPDIR:\n%s", diff)
	}
	if got.Supervisor || !got.Detach {
		t.Errorf("supervisor=%v detach=%v: sandbox-exec runs the command in its own place", got.Supervisor, got.Detach)
	}
}

func TestDiagnose(t *testing.T) {
	t.Parallel()
	e := diagnose(KindBwrap, 1, "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.")
	if !strings.Contains(e.Error(), "bwrap cannot run here: ") || !strings.Contains(e.Fix, "--sandbox none") {
		t.Errorf("error %q: want the reason and a fix", e)
	}
	if e := missing(KindBwrap); !strings.Contains(e.Error(), "apt-get install bubblewrap") {
		t.Errorf("missing bwrap: %q", e)
	}
}
