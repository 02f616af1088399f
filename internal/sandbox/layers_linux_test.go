package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/proc"
)

// gateBox is realBox's box made a gate's, with a user's cache (home/gocache,
// holding entry and old), the agent's writable cache ($XDG_CACHE_HOME,
// holding forged) and pytest's store in the project (holding lastfailed),
// each with what was written there before the gate.
func gateBox(t *testing.T) (root string, box *Box) {
	t.Helper()
	return gateBoxIn(t, t.TempDir())
}

// gateBoxIn is gateBox with its fixture in dir.
func gateBoxIn(t *testing.T, dir string) (root string, box *Box) {
	t.Helper()
	root, box = realBoxIn(t, dir, NetworkOpen)
	files := map[string]string{
		"home/gocache/entry": "user", "home/gocache/old": "user", "home/cache/forged": "agent",
		"proj/.pytest_cache/lastfailed": "agent",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return root, box.ForGates(Layers{Exe: exe, Caches: []string{"~/gocache", "$XDG_CACHE_HOME", "~/missing"},
		Stores: DefaultStores()})
}

// A gate reads the user's cache and writes to a layer of its own,
// discarded; it sees the agent's writable cache and the in-tree store
// empty; and it holds no capability that would undo what hides a path.
func TestGateLayers(t *testing.T) {
	t.Parallel()
	root, box := gateBox(t)
	home := filepath.Join(root, "home")
	attempts := []struct {
		name, script string
		ok           bool
	}{
		{name: "read the user's cache", script: "test \"$(cat ~/gocache/entry)\" = user", ok: true},
		{name: "write the user's cache", script: "echo gate > ~/gocache/entry && echo new > ~/gocache/new && rm ~/gocache/old && mkdir -p ~/gocache/d/e && mv ~/gocache/d ~/gocache/f && test \"$(cat ~/gocache/entry)\" = gate", ok: true},
		{name: "see the agent's cache empty", script: "test -z \"$(ls -A $XDG_CACHE_HOME)\" && echo x > $XDG_CACHE_HOME/x", ok: true},
		{name: "see pytest's store empty", script: "test -z \"$(ls -A .pytest_cache)\" && echo gate > .pytest_cache/lastfailed", ok: true},
		{name: "run as ralph's user", script: "test \"$(id -u):$(id -g)\" = " + strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid()), ok: true},
		{name: "hold a capability", script: "grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status || exit 0; exit 1"},
		{name: "unmount what hides the keys", script: "umount $HOME/.ssh; cat $HOME/.ssh/id_ed25519"},
		{name: "unmount the cache's layer", script: "umount ~/gocache; umount -l ~/gocache; test \"$(cat ~/gocache/entry)\" != user || exit 1; echo forged > ~/gocache/entry"},
		{name: "unmount what hides the keys in a namespace of its own", script: "unshare -Urm sh -c 'umount -l $HOME/.ssh; cat $HOME/.ssh/id_ed25519'"},
	}
	for _, tc := range attempts {
		t.Run(tc.name, func(t *testing.T) {
			code, out := inBox(t, box, filepath.Join(root, "proj"), nil, tc.script)
			if (code == 0) != tc.ok {
				t.Errorf("exit %d (%s): want success=%v", code, out, tc.ok)
			}
			if strings.Contains(out, "PRIVATE KEY") {
				t.Errorf("the key leaked: %s", out)
			}
		})
	}
	for name, want := range map[string]string{"gocache/entry": "user", "gocache/old": "user", "cache/forged": "agent"} {
		if b, err := os.ReadFile(filepath.Join(home, name)); err != nil || string(b) != want {
			t.Errorf("%s is %q, %v: want %q, as before the gate", name, b, err, want)
		}
	}
	for _, name := range []string{"gocache/new", "gocache/f", "cache/x"} {
		if _, err := os.Lstat(filepath.Join(home, name)); err == nil {
			t.Errorf("%s is on the host: a gate's write outlived it", name)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "proj/.pytest_cache/lastfailed")); err != nil || string(b) != "agent" {
		t.Errorf(".pytest_cache/lastfailed is %q, %v: want the agent's, as before the gate", b, err)
	}
}

// A store the agent turned into a link is refused: the gate would read
// what it points to, as the agent left it.
func TestGateLayersRefuseALinkedStore(t *testing.T) {
	t.Parallel()
	root, box := gateBox(t)
	proj := filepath.Join(root, "proj")
	if err := os.Symlink("src", filepath.Join(proj, ".turbo")); err != nil {
		t.Fatal(err)
	}
	code, out := inBox(t, box, proj, nil, "echo ran")
	if code == 0 || strings.Contains(out, "ran") || !strings.Contains(out, ".turbo is a link or a file") {
		t.Errorf("exit %d (%s): want the gate refused, naming .turbo", code, out)
	}
}

// watched runs script in a gate run of box (Watch) in dir, and returns
// its exit code, output and what ralph saw of it.
func watched(t *testing.T, box *Box, dir, script string) (int, string, Seen) {
	t.Helper()
	w, seen, err := box.Watch()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := proc.Run(t.Context(), proc.Cmd{Argv: []string{"sh", "-c", script}, Dir: dir,
		Env: box.env, Sandbox: w, Stdout: &out, Stderr: &out})
	s := seen()
	if err != nil {
		t.Fatal(err)
	}
	return res.ExitCode, strings.TrimSpace(out.String()), s
}

// A gate run writes anywhere in the home: the writes the read-only home
// refused land in a throwaway layer, which ralph lists and removes; the
// project's writes stay, the caches keep their own layers, the keys stay
// hidden.
func TestGateHomeLayerTurnsRefusedWritesIntoSeenOnes(t *testing.T) {
	t.Parallel()
	root, box := gateBox(t)
	home, proj := filepath.Join(root, "home"), filepath.Join(root, "proj")
	script := `mkdir -p ~/.config/tool && echo state > ~/.config/tool/state && test "$(cat ~/.config/tool/state)" = state &&
		echo kept > src/built.txt && echo gate > ~/gocache/entry && test -d ~/.claude &&
		if cat ~/.ssh/id_ed25519; then exit 3; fi`
	code, out, seen := watched(t, box, proj, script)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if diff := cmp.Diff([]string{"~/.config/tool/state"}, seen.Discarded); diff != "" || seen.More != 0 || len(seen.ReadOnly) > 0 {
		t.Errorf("discarded (-want +got):\n%s(more %d, read-only: %q)", diff, seen.More, seen.ReadOnly)
	}
	if _, err := os.Lstat(filepath.Join(home, ".config")); err == nil {
		t.Error("~/.config is on the host: the gate's write outlived it")
	}
	if b, err := os.ReadFile(filepath.Join(proj, "src/built.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("the project's write: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(home, "gocache/entry")); err != nil || string(b) != "user" {
		t.Errorf("the user's cache: %q, %v", b, err)
	}
}

// The usual case: the project is in the home. The gate's writes to the
// project stay (the layer over the home does not take them), the others
// in the home go.
func TestGateHomeLayerKeepsAProjectInTheHome(t *testing.T) {
	t.Parallel()
	root := tree(t, "home/.ssh/id_ed25519", "home/work/proj/src/", "tmp/")
	home, proj := filepath.Join(root, "home"), filepath.Join(root, "home/work/proj")
	exe, err := proc.LookPath("bwrap", "", nil)
	if err != nil {
		t.Skip("bubblewrap is not installed (CI installs Debian's bubblewrap): ", err)
	}
	box, err := NewBox(KindBwrap, exe, Policy{Project: proj, Hidden: []string{"~/.ssh"}, Network: NetworkOpen},
		[]string{"HOME=" + home, "PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	box.tmp = filepath.Join(root, "tmp")
	if err := box.Probe(t.Context()); err != nil {
		t.Skip("bubblewrap cannot run here: ", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	box = box.ForGates(Layers{Exe: self})
	code, out, seen := watched(t, box, proj, "echo kept > src/built.txt && mkdir -p ~/.cache/tool && echo x > ~/.cache/tool/z && rm -r ~/.ssh 2>/dev/null; true")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(proj, "src/built.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("the project's write: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(home, ".cache")); err == nil {
		t.Error("~/.cache is on the host: the gate's write outlived it")
	}
	if _, err := os.Stat(filepath.Join(home, ".ssh/id_ed25519")); err != nil {
		t.Errorf("the key: %v", err)
	}
	if diff := cmp.Diff([]string{"~/.cache/tool/z"}, seen.Discarded); diff != "" {
		t.Errorf("discarded (-want +got):\n%s", diff)
	}
}

// A gate run's writes that read-only mounts refused (the host's
// directories, the git directory's config and hooks, ralph's state, a
// hidden directory) land in throwaway layers, which ralph lists and
// removes: the sandbox refuses the gate no write the host would allow, so
// no gate fails on one, and none reaches the host.
func TestGateThrowawayLayersTakeTheWritesMountsRefused(t *testing.T) {
	t.Parallel()
	// In /tmp, which no layer takes (it holds the layers), and in
	// /var/tmp, where the project, the git directory and ralph's state
	// are in /var's layer and the project is bound over it: its read-only
	// paths must stay the layers', not the host's.
	dirs := map[string]string{"in /tmp": t.TempDir()}
	if isDir("/var/tmp") {
		dir, err := os.MkdirTemp("/var/tmp", "ralph-sandbox-unit-") //nolint:usetesting // outside /tmp on purpose: /tmp gets no layer
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeTree(dir) })
		dirs["in /var/tmp"] = dir
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			throwawayWrites(t, dir)
		})
	}
}

func throwawayWrites(t *testing.T, dir string) {
	t.Helper()
	root, box := gateBoxIn(t, dir)
	proj := filepath.Join(root, "proj")
	for _, f := range []string{".git/config", "ralph.toml"} {
		if err := os.WriteFile(filepath.Join(proj, f), []byte("[core]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	box.policy.ReadOnly = append(box.policy.ReadOnly, "ralph.toml")
	sys := filepath.Join("/var/tmp", "ralph-gate-test-"+strconv.Itoa(os.Getpid())+"-"+filepath.Base(dir))
	t.Cleanup(func() { _ = os.Remove(sys) })
	script := `echo sys > ` + sys + ` && test "$(cat ` + sys + `)" = sys &&
		cp .git/config .git/config.lock && echo '[gate]' >> .git/config.lock && mv .git/config.lock .git/config &&
		echo hook > .git/hooks/pre-commit && echo state > .ralph/state.json &&
		echo host > ~/.ssh/known_hosts && test ! -e ~/.ssh/id_ed25519 && echo '[gates]' >> ralph.toml && echo kept > src/built.txt`
	code, out, seen := watched(t, box, proj, script)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	// Five named, the hidden directory's, laid last, counted.
	want := []string{sys, proj + "/.git/config", proj + "/.git/hooks/pre-commit", proj + "/.ralph/state.json", proj + "/ralph.toml"}
	got := slices.Sorted(slices.Values(seen.Discarded))
	if diff := cmp.Diff(slices.Sorted(slices.Values(want)), got); diff != "" || seen.More != 1 || len(seen.ReadOnly) > 0 {
		t.Errorf("discarded (-want +got):\n%s(more %d, read-only: %q)", diff, seen.More, seen.ReadOnly)
	}
	for _, p := range []string{sys, proj + "/.git/hooks/pre-commit", proj + "/.ralph/state.json", root + "/home/.ssh/known_hosts"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is on the host: the gate's write outlived it", p)
		}
	}
	for _, f := range []string{".git/config", "ralph.toml"} {
		if b, err := os.ReadFile(filepath.Join(proj, f)); err != nil || string(b) != "[core]\n" {
			t.Errorf("%s: %q, %v", f, b, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(proj, "src/built.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("the project's write: %q, %v", b, err)
	}
}

func TestUnescapeMount(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{`/mnt/a\040b`: "/mnt/a b", `/x\134y`: `/x\y`, `/tab\011`: "/tab\t", `/plain`: "/plain", `/odd\04`: `/odd\04`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// A gate run's directory that a killed ralph left is removed by the next
// gate run's; a live ralph's, and one just made, stay.
func TestSweepGateDirs(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{"ralph-gate-dead": strconv.Itoa(gone.Process.Pid), "ralph-gate-live": strconv.Itoa(os.Getpid()),
		"ralph-gate-old": "", "ralph-gate-new": ""}
	for name, owner := range owners {
		dir := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(dir, scratchDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(parent, "ralph-gate-old"), old, old); err != nil {
		t.Fatal(err)
	}
	sweepGateDirs(parent)
	var left []string
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if diff := cmp.Diff([]string{"ralph-gate-live", "ralph-gate-new"}, left); diff != "" {
		t.Errorf("left (-want +got):\n%s", diff)
	}
}

// As in a container, where files are mounted over /etc/hosts and the
// like: in a mount namespace of the test's own, a file mounted over
// /etc/hostname. /etc, with a mount below it, can take no overlay: it
// gets a synthetic stand-in. The gate's write to the mounted file goes to
// a copy, one into /etc/apt to /etc/apt's layer, a new file in /etc and
// a change to one of its own files to the stand-in, all listed; a
// mounted file cannot be replaced, as on the host. The host's files never
// change.
func TestGateThrowawayLayersWithAFileMounted(t *testing.T) {
	if os.Getenv("RALPH_TEST_MOUNTED_FILE") == "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root, to mount a file in a namespace of the test's own")
		}
		unshare, err := exec.LookPath("unshare")
		if err != nil || !isDir("/etc/apt") || !isFile("/etc/issue") {
			t.Skip("needs unshare, /etc/apt and /etc/issue")
		}
		over := filepath.Join(t.TempDir(), "hostname")
		if err := os.WriteFile(over, []byte("box\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), unshare, "--mount", "--propagation", "private", "sh", "-c",
			`mount --bind "$1" /etc/hostname && exec "$2" -test.run '^TestGateThrowawayLayersWithAFileMounted$' -test.v`,
			"sh", over, os.Args[0])
		cmd.Env = append(os.Environ(), "RALPH_TEST_MOUNTED_FILE="+over)
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS")) {
			t.Fatalf("in a mount namespace of its own: %v\n%s", err, out)
		}
		if b, err := os.ReadFile(over); err != nil || string(b) != "box\n" {
			t.Errorf("the mounted file: %q, %v", b, err)
		}
		return
	}
	root, box := gateBox(t)
	proj := filepath.Join(root, "proj")
	script := `echo gate >> /etc/hostname && test "$(tail -n 1 /etc/hostname)" = gate &&
		echo gate > /etc/apt/ralph-gate-test && test -f /etc/apt/ralph-gate-test &&
		echo gate > /etc/ralph-gate-test && test -f /etc/ralph-gate-test && echo '# gate' >> /etc/issue &&
		if mv /etc/ralph-gate-test /etc/hostname; then exit 3; fi`
	code, out, seen := watched(t, box, proj, script)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	want := []string{"/etc/apt/ralph-gate-test", "/etc/hostname", "/etc/issue", "/etc/ralph-gate-test"}
	if diff := cmp.Diff(want, slices.Sorted(slices.Values(seen.Discarded))); diff != "" || len(seen.ReadOnly) > 0 {
		t.Errorf("discarded (-want +got):\n%s(read-only: %q)", diff, seen.ReadOnly)
	}
	if b, err := os.ReadFile("/etc/issue"); err != nil || strings.Contains(string(b), "# gate") {
		t.Errorf("/etc/issue on the host: %q, %v", b, err)
	}
	for _, p := range []string{"/etc/apt/ralph-gate-test", "/etc/ralph-gate-test"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is on the host", p)
		}
	}
	if b, err := os.ReadFile("/etc/hostname"); err != nil || string(b) != "box\n" {
		t.Errorf("the mounted /etc/hostname: %q, %v", b, err)
	}
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// helperLaunch starts a command as LayersCommand with args before it, in
// a user and mount namespace of its own, as a gate's box does.
type helperLaunch struct {
	exe  string
	args []string
}

func (h helperLaunch) Wrap(l proc.Launch) (proc.Launch, error) {
	argv := slices.Concat([]string{h.exe, LayersCommand}, h.args, []string{"--", l.Path}, l.Argv[1:])
	return proc.Launch{Path: h.exe, Argv: argv, Dir: l.Dir, Env: l.Env, Namespaced: true}, nil
}

// A layer LayersCommand cannot lay (over /dev, which has things mounted
// below it: a user namespace's overlay refuses it) is not bound: the
// gate sees the host's, read-only, and ralph is told why. A protected one
// (the git directory's kind) is bound read-only instead, never left to
// what is bound above it, which may be writable.
func TestLayersCommandDropsWhatItCannotLay(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proc.LookPath("bwrap", "", nil); err != nil {
		t.Skip("no bubblewrap here, so perhaps no user namespaces either: ", err)
	}
	for _, opt := range []string{"--layer", "--protected"} {
		t.Run(opt, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(base, reportSocket), Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			scratch := filepath.Join(base, scratchDir)
			merged := filepath.Join(scratch, "0", "merged")
			box := helperLaunch{exe: exe, args: []string{"--scratch", scratch, "--report", filepath.Join(base, reportSocket),
				"--upper", filepath.Join(scratch, "0"), opt, "/dev"}}
			var out bytes.Buffer
			res, err := proc.Run(t.Context(), proc.Cmd{Argv: []string{"sh", "-c", `echo "$@"`, "sh", "--ro-bind", "/", "/",
				"--bind", merged, "/dev", "--", "true"}, Dir: base, Env: os.Environ(), Sandbox: box, Stdout: &out, Stderr: &out})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exit %d, %v: %s", res.ExitCode, err, out.String())
			}
			bound := strings.Contains(out.String(), "--bind "+merged+" /dev")
			if want := opt == "--protected"; bound != want {
				t.Errorf("bwrap's arguments %q: the bind there is %v, want %v", out.String(), bound, want)
			}
			root, ok := received(ln)
			if !ok {
				t.Fatal("no layers' tmpfs received")
			}
			defer closeFD(root)
			_, _, readOnly := discarded(fmt.Sprintf("/proc/self/fd/%d", root), "")
			if len(readOnly) != 1 || !strings.HasPrefix(readOnly[0], "/dev (") {
				t.Errorf("read-only: %q, want /dev's with why", readOnly)
			}
		})
	}
}

func TestWithoutBinds(t *testing.T) {
	t.Parallel()
	argv := []string{"bwrap", "--bind", "/s/0/merged", "/usr", "--bind", "/proj", "/proj", "--", "sh", "--bind", "/s/0/merged", "x"}
	want := []string{"bwrap", "--bind", "/proj", "/proj", "--", "sh", "--bind", "/s/0/merged", "x"}
	if diff := cmp.Diff(want, withoutBinds(argv, []string{"/s/0/merged"})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDiffers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB: several blocks
	changed := slices.Clone(big)
	changed[len(changed)-1] = 'x'
	files := map[string][]byte{"orig": big, "same": big, "changed": changed, "longer": append(slices.Clone(big), 'y'), "empty": nil, "empty2": nil}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		orig, copied string
		want         bool
	}{{"orig", "same", false}, {"orig", "changed", true}, {"orig", "longer", true}, {"empty", "empty2", false}, {"gone", "same", true}} {
		if got, err := differs(filepath.Join(dir, tt.orig), filepath.Join(dir, tt.copied)); err != nil || got != tt.want {
			t.Errorf("differs(%s, %s) = %v, %v; want %v", tt.orig, tt.copied, got, err, tt.want)
		}
	}
	if _, err := differs(filepath.Join(dir, "orig"), filepath.Join(dir, "no copy")); err == nil {
		t.Error("no copy: want an error")
	}
}
