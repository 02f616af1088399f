package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ralph-loop/ralph/internal/gittest"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// The kill -9 loop: ralph is killed with SIGKILL at random instants over
// a 5-task plan, cycle after cycle, then runs once to the end. Whatever
// the instant (before the agent, during it, between the done claim and
// the commit, between the commit and the history line, in the middle of
// a write), nothing is lost and nothing is done twice: after every cycle
// the plan is valid, the lock free, the history readable, no task
// committed twice, and every task the plan shows done committed with its
// work (but the one the killed run was accepting, which the next run
// completes); after the clean run every task is done once, in one commit
// holding its work, and the history says so once.
//
// The instant is the n-th time something happens, n random: a line of
// ralph's --json output, the plan replaced, a task's acceptance
// recorded, a commit, a history line (trigger). So kills land
// throughout a run, in the narrow windows too, without any sleep. The
// seed is logged; RALPH_KILL_SEED=N replays the same choices.

const (
	killCycles = 20
	killTasks  = 5
)

// killScenario is the fake agent's every iteration: it reads its task
// from the prompt, ticks it in the plan itself (which runner ownership
// does not allow: ralph must put it back), writes its work in two steps,
// and claims the task.
const killScenario = `exec id=$(printf '%s\n' "$FAKEAGENT_PROMPT" | sed -n 's/^\*\*\([^:]*\):.*/\1/p' | head -n 1); sed "/\"$id\"/s/false/true/" prd.json > prd.tick && mv prd.tick prd.json; echo "start $id" > "work-$id.txt"
say Working on it.
exec id=$(printf '%s\n' "$FAKEAGENT_PROMPT" | sed -n 's/^\*\*\([^:]*\):.*/\1/p' | head -n 1); echo "done $id" >> "work-$id.txt"
say Implemented and checked.
final <promise>TASK_DONE</promise>
`

func TestKill9Loop(t *testing.T) {
	if testing.Short() {
		t.Skip("the kill -9 loop runs ralph a few dozen times")
	}
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RALPH_KILL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RALPH_KILL_SEED: %v", err)
		}
		seed = n
	}
	t.Logf("seed %d (RALPH_KILL_SEED=%d replays this run)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	k := newKillProject(t)
	cycles, rounds := 0, 0
	for cycles < killCycles {
		rounds++
		k.reset(t)
		// Kill until a run gets to the end before its instant; then the
		// clean run, and a new round on a fresh plan while cycles are due.
		for {
			tr := randomTrigger(rng)
			killed := k.runUntil(t, tr)
			if !killed {
				break
			}
			cycles++
			t.Logf("round %d cycle %d: killed at %s", rounds, cycles, tr)
			k.checkAfterKill(t)
		}
		k.cleanRun(t)
		k.checkDone(t)
	}
	t.Logf("%d kill cycles over %d rounds; the next runs reported: %v", cycles, rounds, k.seen)
}

// killProject is the project the loop runs in.
type killProject struct {
	home, dir string
	env       []string
	runs      int
	seen      map[string]int
}

func newKillProject(t *testing.T) *killProject {
	t.Helper()
	home := t.TempDir()
	k := &killProject{home: home, dir: filepath.Join(home, "project"), seen: map[string]int{}}
	k.env = append(gittest.Env(home), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"FAKEAGENT_SCRIPT="+filepath.Join(home, "scenario"), "NO_COLOR=1",
		"RALPH_SANDBOX_MODE=none", // the fake agent reads variables a sandbox drops
		"RALPH_TRUST=1")           // the ralph.toml written here is the user's
	if err := os.WriteFile(filepath.Join(home, "scenario"), []byte(killScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

// reset starts a round: a fresh repository holding the plan.
func (k *killProject) reset(t *testing.T) {
	t.Helper()
	if err := os.RemoveAll(k.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(k.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("{\"project\": \"kill\", \"userStories\": [\n")
	for i := 1; i <= killTasks; i++ {
		sep := ","
		if i == killTasks {
			sep = ""
		}
		fmt.Fprintf(&b, "  {\"id\": \"US-%03d\", \"title\": \"Task %d\", \"passes\": false}%s\n", i, i, sep)
	}
	b.WriteString("]}\n")
	files := map[string]string{
		"prd.json": b.String(),
		// A gate widens the window between the done claim and the commit.
		"ralph.toml": "[gates]\ncommands = [\"true\"]\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(k.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Init(t, k.dir)
}

// trigger is the instant a cycle kills ralph: the n-th time something
// happens, as ralph's output or the files say, never a time.
type trigger struct {
	// kind is what is counted: "line" (of --json output), "plan" (the
	// plan replaced: the agent's mark, ralph putting it back, ralph's
	// mark), "state" (a task's acceptance recorded: its file created or
	// renamed, or state.json written saying so), "commit" (the branch moved),
	// "history" (a line appended).
	kind string
	n    int
}

func (tr trigger) String() string { return fmt.Sprintf("%s #%d", tr.kind, tr.n) }

// randomTrigger picks a trigger. An iteration writes a dozen lines, and
// replaces the plan up to three times.
func randomTrigger(rng *rand.Rand) trigger {
	switch rng.IntN(5) {
	case 0, 1:
		return trigger{"line", 1 + rng.IntN(30)}
	case 2:
		return trigger{"plan", 1 + rng.IntN(6)}
	case 3:
		return trigger{[]string{"state", "commit", "history"}[rng.IntN(3)], 1 + rng.IntN(2)}
	}
	return trigger{"line", 1 + rng.IntN(14)}
}

// runUntil runs ralph and kills it with SIGKILL at the trigger. It
// reports whether it killed ralph (false: the run ended first, and must
// have ended well).
func (k *killProject) runUntil(t *testing.T, tr trigger) bool {
	t.Helper()
	k.runs++
	w := watchFiles(t, k.dir, filepath.Join(k.dir, ".ralph"), filepath.Join(k.dir, ".git", "refs", "heads"))
	defer w.close()
	cmd := exec.Command("ralph", "run", "--json")
	cmd.Dir, cmd.Env = k.dir, k.env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	count, killed := 0, false
	hit := func() {
		if count++; count == tr.n && !killed {
			killed = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) == nil
		}
	}
	for out := lines; out != nil; {
		select {
		case line, ok := <-out:
			if !ok {
				out = nil
				continue
			}
			k.note(line)
			if tr.kind == "line" {
				hit()
			}
		case ev := <-w.events:
			if tr.kind == eventKind(k.dir, ev) {
				hit()
			}
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if killed && errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
		return true
	}
	if err != nil {
		t.Fatalf("run %d: ralph ended with %v before %s\nstderr:\n%s", k.runs, err, tr, stderr.String())
	}
	return false
}

// eventKind is the trigger kind a file event counts for, "" for none.
func eventKind(dir string, ev fileEvent) string {
	switch {
	case ev.path == filepath.Join(dir, "prd.json") && ev.mask&unix.IN_MOVED_TO != 0:
		return "plan"
	case filepath.Dir(ev.path) == filepath.Join(dir, ".ralph") && strings.HasPrefix(filepath.Base(ev.path), "accepting.") &&
		ev.mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		return "state"
	case ev.path == filepath.Join(dir, ".ralph", "state.json") && ev.mask&unix.IN_MOVED_TO != 0:
		if b, err := os.ReadFile(ev.path); err == nil && strings.Contains(string(b), `"accepting"`) {
			return "state"
		}
	case ev.path == filepath.Join(dir, ".ralph", "history.jsonl") && ev.mask&unix.IN_MODIFY != 0:
		return "history"
	case filepath.Dir(ev.path) == filepath.Join(dir, ".git", "refs", "heads") && ev.mask&unix.IN_MOVED_TO != 0:
		return "commit"
	}
	return ""
}

// fileEvent is one inotify event.
type fileEvent struct {
	path string
	mask uint32
}

// fileWatch reports what happens to the files of a few directories.
type fileWatch struct {
	f      *os.File
	events chan fileEvent
	done   chan struct{}
}

// watchFiles watches dirs (created if missing) for files created, renamed
// into them and written.
func watchFiles(t *testing.T, dirs ...string) *fileWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	names := map[int]string{}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_MODIFY)
		if err != nil {
			t.Fatal(err)
		}
		names[wd] = d
	}
	w := &fileWatch{f: os.NewFile(uintptr(fd), "inotify"), events: make(chan fileEvent, 1024), done: make(chan struct{})}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := w.f.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				off += unix.SizeofInotifyEvent + int(ev.Len)
				select {
				case w.events <- fileEvent{path: filepath.Join(names[int(ev.Wd)], name), mask: ev.Mask}:
				case <-w.done:
					return
				}
			}
		}
	}()
	return w
}

func (w *fileWatch) close() {
	close(w.done)
	_ = w.f.Close()
}

// recoveries are what the runs after a kill reported settling, counted
// by what they said.
var recoveries = []string{"which it had accepted: finished", "opened US-", "recorded as interrupted", "stopped unexpectedly after iteration"}

// note counts the recoveries a line of --json output reports.
func (k *killProject) note(line []byte) {
	for _, r := range recoveries {
		if strings.Contains(string(line), r) {
			k.seen[r]++
		}
	}
}

// checkAfterKill checks what must hold at every instant.
func (k *killProject) checkAfterKill(t *testing.T) {
	t.Helper()
	plan := k.plan(t)
	k.lockFree(t)
	k.fsck(t)
	hist := k.history(t)
	commits := k.taskCommits(t)
	st, err := k.store(t).LoadState()
	if err != nil {
		t.Fatalf("state: %v", err)
	}
	for id, n := range commits {
		if n > 1 {
			t.Fatalf("task %s committed %d times", id, n)
		}
	}
	head := k.headPlan(t)
	for _, tk := range plan.Tasks {
		if tk.Status != task.StatusDone {
			continue
		}
		if hp, _ := head.Task(tk.ID); hp.Status == task.StatusDone && commits[tk.ID] == 1 && k.committed(t, "work-"+tk.ID+".txt") {
			continue
		}
		// Only the task the killed run was working on may be ahead of
		// its commit: the next run settles it.
		if tk.ID != st.CurrentTask {
			t.Fatalf("task %s is done in the plan but not committed with its work (current task %q)\nhistory: %d lines",
				tk.ID, st.CurrentTask, len(hist))
		}
	}
}

// checkDone checks the end of a round: every task done once.
func (k *killProject) checkDone(t *testing.T) {
	t.Helper()
	plan := k.plan(t)
	k.lockFree(t)
	k.fsck(t)
	hist := k.history(t)
	commits := k.taskCommits(t)
	done := map[string]int{}
	for _, rec := range hist {
		if rec.Outcome == "task_done" {
			done[rec.TaskID]++
		}
	}
	for _, tk := range plan.Tasks {
		if tk.Status != task.StatusDone {
			t.Errorf("task %s is %s after the clean run", tk.ID, tk.Status)
		}
		if commits[tk.ID] != 1 {
			t.Errorf("task %s has %d commits, want 1", tk.ID, commits[tk.ID])
		}
		if done[tk.ID] != 1 {
			t.Errorf("task %s has %d task_done lines in history, want 1", tk.ID, done[tk.ID])
		}
		if !k.committed(t, "work-"+tk.ID+".txt") {
			t.Errorf("work-%s.txt is not committed", tk.ID)
		}
	}
	if out := gittest.Git(t, k.dir, "status", "--porcelain"); out != "" {
		t.Errorf("the tree is not clean after the clean run:\n%s", out)
	}
	if t.Failed() {
		t.Fatalf("git log:\n%s", gittest.Git(t, k.dir, "log", "--format=%h %s"))
	}
}

// fsck checks every object and ref with git fsck --strict, and that no
// lock of git's is left behind: a commit a kill cut short must leave the
// repository as git would.
func (k *killProject) fsck(t *testing.T) {
	t.Helper()
	cmd := exec.Command("git", "fsck", "--strict", "--no-progress", "--no-dangling")
	cmd.Dir, cmd.Env = k.dir, k.env
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
	for _, lock := range []string{"index.lock", "HEAD.lock", filepath.Join("refs", "heads", "main.lock")} {
		if _, err := os.Lstat(filepath.Join(k.dir, ".git", lock)); err == nil {
			t.Fatalf(".git/%s is left behind", lock)
		}
	}
}

// cleanRun runs ralph to the end.
func (k *killProject) cleanRun(t *testing.T) {
	t.Helper()
	cmd := exec.Command("ralph", "run", "--no-tui")
	cmd.Dir, cmd.Env = k.dir, k.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the clean run: %v\n%s", err, out)
	}
}

func (k *killProject) plan(t *testing.T) *task.Plan {
	t.Helper()
	f, err := task.Load(filepath.Join(k.dir, "prd.json"))
	if err != nil {
		t.Fatalf("the plan is not valid: %v", err)
	}
	return f.Plan()
}

func (k *killProject) headPlan(t *testing.T) *task.Plan {
	t.Helper()
	p, err := task.Parse("prd.json", []byte(gittest.Git(t, k.dir, "show", "HEAD:prd.json")))
	if err != nil {
		t.Fatalf("the committed plan is not valid: %v", err)
	}
	return p
}

func (k *killProject) store(t *testing.T) *state.Store {
	t.Helper()
	s, err := state.Open(k.dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// lockFree checks that the lock is free once the killed run's processes
// are gone: a child ralph was starting when it died holds the lock's
// descriptor until its exec closes it, and the guardian stops the agent
// within its grace.
func (k *killProject) lockFree(t *testing.T) {
	t.Helper()
	f, err := os.Open(filepath.Join(k.dir, state.Dir, state.LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A blocking shared flock returns the moment the last holder lets go:
	// the wait is on the kernel's event, not a poll.
	freed := make(chan error, 1)
	go func() {
		for {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH)
			if !errors.Is(err, syscall.EINTR) {
				freed <- err
				return
			}
		}
	}()
	select {
	case err := <-freed:
		if err != nil {
			t.Fatal(err)
		}
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	case <-time.After(5 * time.Second):
		holders := lockHolders(filepath.Join(k.dir, state.Dir))
		// The blocked flock ends with the holder, after the test.
		t.Fatalf("the lock is still held 5s after the kill, by: %s", holders)
	}
}

// lockHolders lists the processes that have the lock file open.
func lockHolders(dir string) string {
	lock := filepath.Join(dir, state.LockFile)
	var who []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == lock {
			pid := strings.Split(fd, "/")[2]
			cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			who = append(who, pid+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return strings.Join(who, "; ")
}

func (k *killProject) history(t *testing.T) []state.Record {
	t.Helper()
	hist, err := k.store(t).History()
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	return hist
}

var featRE = regexp.MustCompile(`^feat: (US-\d+) - `)

// taskCommits counts the commits of each task.
func (k *killProject) taskCommits(t *testing.T) map[string]int {
	t.Helper()
	n := map[string]int{}
	for s := range strings.SplitSeq(gittest.Git(t, k.dir, "log", "--format=%s"), "\n") {
		if m := featRE.FindStringSubmatch(s); m != nil {
			n[m[1]]++
		}
	}
	return n
}

// committed reports whether HEAD holds a file with its whole work.
func (k *killProject) committed(t *testing.T, name string) bool {
	t.Helper()
	cmd := exec.Command("git", "show", "HEAD:"+name)
	cmd.Dir, cmd.Env = k.dir, k.env
	out, err := cmd.Output()
	return err == nil && strings.Contains(string(out), "done ")
}
