package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"

	"github.com/ralph-loop/ralph/internal/gittest"
	"github.com/ralph-loop/ralph/internal/task"
)

// The worker tests run N `ralph run --worker` processes (the real binary),
// each in its own clone of one bare remote, with the fake agent as
// claude. They need no agent CLI, only git, and take tens of seconds, so
// they run when RALPH_E2E_WORKERS is set (.ci/run sets it).

// workerPlan is a 12-task plan with dependencies: chains T01 → T05 → T09
// → T12 and T02 → T06 → T09, T03 → T10 → T12.
func workerPlan() string {
	deps := map[int]string{5: "T01", 6: "T02", 9: "T05, T06", 10: "T03", 12: "T09, T10"}
	var b strings.Builder
	b.WriteString("# Plan\n\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "- [ ] T%02d: task %d\n", i, i)
		if d, ok := deps[i]; ok {
			fmt.Fprintf(&b, "  - Depends on: %s\n", d)
		}
	}
	return b.String()
}

// fleetPlan is a 12-story prd.json whose run branch, ralph/fleet, does
// not exist yet: the workers make it. Its longest chain has five stories,
// T01 → T02 → T03 → T04 → T05; T06 → T07 → T08 → T05 has four,
// T09 → T10 → T12 three. Each story's priority is its place in the file.
func fleetPlan() string {
	deps := map[int][]string{2: {"T01"}, 3: {"T02"}, 4: {"T03"}, 5: {"T04", "T08"}, 7: {"T06"}, 8: {"T07"},
		10: {"T09"}, 12: {"T10", "T11"}}
	var b strings.Builder
	b.WriteString("{\n  \"branchName\": \"ralph/fleet\",\n  \"userStories\": [\n")
	for i := 1; i <= 12; i++ {
		d, _ := json.Marshal(deps[i])
		if deps[i] == nil {
			d = []byte("[]")
		}
		fmt.Fprintf(&b, "    {\"id\": \"T%02d\", \"title\": \"story %d\", \"priority\": %d, \"passes\": false, \"dependsOn\": %s}", i, i, i, d)
		if i < 12 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

// workerScenario is the fake agent's one block, for every task: it writes
// work-<ID>.txt and a progress line, and says the task is done. $BLOCK
// names a task whose first attempt hangs (it touches $MARKS/<ID>.started
// and sleeps until it is killed); $WORK_SECONDS is how long each task
// takes.
const workerScenario = `exec id=$(printf '%s' "$FAKEAGENT_PROMPT" | grep -o '\*\*T[0-9]*:' | head -1 | tr -d '*:'); if [ "$id" = "$BLOCK" ] && [ ! -e "$MARKS/$id.started" ]; then touch "$MARKS/$id.started"; sleep 600; fi; echo "$id done" > "work-$id.txt"; echo "- $id: learned" >> progress.txt; sleep "${WORK_SECONDS:-0}"
final <promise>TASK_DONE</promise>
`

// workerBins builds ralph and the fake agent (as claude) into a new
// directory, or returns RALPH_E2E_WORKERS_BIN, a directory that has both
// built already (another version's, to compare).
func workerBins(t testing.TB) string {
	t.Helper()
	if os.Getenv("RALPH_E2E_WORKERS") == "" {
		t.Skip("RALPH_E2E_WORKERS is not set: the many-worker simulations run from .ci/run")
	}
	if dir := os.Getenv("RALPH_E2E_WORKERS_BIN"); dir != "" {
		return dir
	}
	dir := t.TempDir()
	for out, pkg := range map[string]string{"ralph": "./cmd/ralph", "claude": "./internal/fakeagent/cmd/fakeagent"} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, out), pkg)
		build.Dir = ".."
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	return dir
}

// fleet is one bare remote with a plan, and the environment of the
// workers that share it.
type fleet struct {
	t      testing.TB
	root   string
	remote string
	bin    string
	env    []string
	events *stream
	// planFile is the plan's name, branch the run branch.
	planFile, branch string
}

// newFleet makes a remote whose main holds IMPLEMENTATION_PLAN.md, the
// run branch.
func newFleet(t testing.TB, bin, plan string, env ...string) *fleet {
	t.Helper()
	return newFleetOf(t, bin, "IMPLEMENTATION_PLAN.md", "main", plan, env...)
}

// newFleetOf makes a remote with only main, which holds the plan
// planFile; branch is the run branch the plan names.
func newFleetOf(t testing.TB, bin, planFile, branch, plan string, env ...string) *fleet {
	t.Helper()
	root := t.TempDir()
	f := &fleet{t: t, root: root, remote: filepath.Join(root, "remote.git"), bin: bin, events: &stream{changed: make(chan struct{})},
		planFile: planFile, branch: branch}
	seed := filepath.Join(root, "seed")
	mustWrite(t, filepath.Join(seed, planFile), plan)
	mustWrite(t, filepath.Join(seed, ".gitignore"), ".ralph/\n")
	mustWrite(t, filepath.Join(seed, "progress.txt"), "# progress\n")
	gittest.Init(t, seed)
	gittest.Git(t, root, "clone", "-q", "--bare", seed, f.remote)
	mustWrite(t, filepath.Join(root, "scenario"), workerScenario)
	marks := filepath.Join(root, "marks")
	if err := os.MkdirAll(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	f.env = append(gittest.Env(root), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+root, "FAKEAGENT_SCRIPT="+filepath.Join(root, "scenario"), "MARKS="+marks,
		"RALPH_SANDBOX_MODE=none", "NO_COLOR=1",
		// The fleet's plan has no gates, so review.when = "auto" would
		// have each claim reviewed; the fake agent's scenario is the
		// workers' alone.
		"RALPH_REVIEW_WHEN=off")
	f.env = append(f.env, env...)
	return f
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// clone makes a clone of the remote for one worker.
func (f *fleet) clone(name string) string {
	dir := filepath.Join(f.root, name)
	gittest.Git(f.t, f.root, "clone", "-q", f.remote, dir)
	return dir
}

// workerProc is one running worker.
type workerProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	code int
	errb strings.Builder
}

// start starts `ralph run --worker` in a new clone; its --json events go
// to the fleet's stream.
func (f *fleet) start(ctx context.Context, name string, args ...string) *workerProc {
	return f.startIn(ctx, f.clone(name), name, args...)
}

// fleetLease is the workers' lease: short, so that a killed worker's
// task is taken over within the test, yet long enough for a heartbeat
// (a push every third of it) to get through on a loaded 2-core CI machine,
// where 2 s let a live worker's claim run out (CI, stop 42).
const fleetLease = "8s"

// startIn starts `ralph run --worker` in dir, a clone of the remote.
func (f *fleet) startIn(ctx context.Context, dir, name string, args ...string) *workerProc {
	argv := append([]string{filepath.Join(f.bin, "ralph"), "run", "--worker", "--json", "--worker-id", name, "--lease", fleetLease}, args...)
	return f.launch(ctx, dir, name, nil, argv...)
}

// launch starts argv in dir, with env added to the fleet's, as worker
// name: a worker's --json events on its stdout go to the fleet's stream.
func (f *fleet) launch(ctx context.Context, dir, name string, env []string, argv ...string) *workerProc {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, append(slices.Clip(f.env), env...)
	w := &workerProc{name: name, cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &w.errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				e.from = name
				f.events.add(e)
			}
		}
		_ = cmd.Wait()
		w.code = cmd.ProcessState.ExitCode()
	}()
	return w
}

// wait waits for the worker to exit and returns its exit code.
func (w *workerProc) wait(t testing.TB) int {
	t.Helper()
	<-w.done
	if w.code != 0 {
		t.Logf("worker %s exited %d; stderr:\n%s", w.name, w.code, w.errb.String())
	}
	return w.code
}

// event is the part of a --json event these tests read.
type event struct {
	Kind     string `json:"event"`
	WorkerID string `json:"worker_id"`
	Message  string `json:"message"`
	Task     *struct {
		ID string `json:"id"`
	} `json:"task"`
	from string
}

// stream collects the workers' events; waiters are woken on each one.
type stream struct {
	mu      sync.Mutex
	all     []event
	changed chan struct{}
}

func (s *stream) add(e event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, e)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *stream) snapshot() ([]event, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.all), s.changed
}

// waitFor waits until an event matches, and returns it.
func (s *stream) waitFor(ctx context.Context, t testing.TB, what string, match func(event) bool) event {
	t.Helper()
	for {
		all, changed := s.snapshot()
		for _, e := range all {
			if match(e) {
				return e
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no event %s before the deadline", what)
		}
	}
}

// count counts the events that match.
func (s *stream) count(match func(event) bool) int {
	all, _ := s.snapshot()
	n := 0
	for _, e := range all {
		if match(e) {
			n++
		}
	}
	return n
}

func workerSays(prefix string) func(event) bool {
	return func(e event) bool { return e.Kind == "worker" && strings.HasPrefix(e.Message, prefix) }
}

// checkLedger checks the remote's run branch: every task done, one commit
// per task holding its own work, no task twice, dependencies landed
// before their dependents.
func (f *fleet) checkLedger(t *testing.T, tasks int) {
	t.Helper()
	check := f.clone("check")
	branch := "origin/" + f.branch
	subjects := strings.Split(gittest.Git(t, check, "log", "--reverse", "--format=%s", branch), "\n")[1:]
	if len(subjects) != tasks {
		t.Fatalf("run branch has %d task commits, want %d:\n%s", len(subjects), tasks, strings.Join(subjects, "\n"))
	}
	at := map[string]int{}
	for i, s := range subjects {
		id := strings.TrimSuffix(strings.Fields(strings.TrimPrefix(s, "feat: "))[0], "")
		if _, twice := at[id]; twice {
			t.Errorf("task %s landed twice", id)
		}
		at[id] = i
		files := gittest.Git(t, check, "show", "--name-only", "--format=", fmt.Sprintf("%s~%d", branch, tasks-1-i))
		want := []string{f.planFile, "progress.txt", "work-" + id + ".txt"}
		slices.Sort(want)
		if files != strings.Join(want, "\n") {
			t.Errorf("%s's commit changes\n%s\nwant\n%s", id, files, strings.Join(want, "\n"))
		}
	}
	plan, err := task.Parse(f.planFile, []byte(gittest.Git(t, check, "show", branch+":"+f.planFile)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range plan.Tasks {
		if tk.Status != task.StatusDone {
			t.Errorf("%s is %s on the run branch", tk.ID, tk.Status)
		}
		for _, d := range tk.DependsOn {
			if at[d] >= at[tk.ID] {
				t.Errorf("%s landed before its dependency %s", tk.ID, d)
			}
		}
	}
	progress := gittest.Git(t, check, "show", branch+":progress.txt")
	if n := strings.Count(progress, ": learned"); n != tasks {
		t.Errorf("progress.txt has %d tasks' lines, want %d:\n%s", n, tasks, progress)
	}
	if refs := gittest.Git(t, check, "ls-remote", f.remote, "refs/ralph/*"); refs != "" {
		t.Errorf("claims left on the remote after the plan is done:\n%s", refs)
	}
}

// remoteStatus runs `ralph status --remote --json` in a clone of its own.
func (f *fleet) remoteStatus(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	cmd := exec.Command(filepath.Join(f.bin, "ralph"), "status", "--remote", "--json")
	cmd.Dir, cmd.Env = dir, f.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ralph status --remote: %v", err)
	}
	var r struct {
		Tasks []map[string]any `json:"tasks"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("ralph status --remote --json: %v\n%s", err, out)
	}
	byID := map[string]map[string]any{}
	for _, tk := range r.Tasks {
		byID[tk["id"].(string)] = tk
	}
	return byID
}

func TestWorkers(t *testing.T) {
	bin := workerBins(t)

	t.Run("four_workers_one_killed", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		f := newFleet(t, bin, workerPlan(), "BLOCK=T05")
		viewer := f.clone("viewer")
		var ws []*workerProc
		for _, name := range []string{"w1", "w2", "w3", "w4"} {
			ws = append(ws, f.start(ctx, name))
		}
		// Whoever gets T05 hangs in its agent: kill that worker outright
		// once its task run is under way.
		started := f.events.waitFor(ctx, t, "T05 started", func(e event) bool {
			return e.Kind == "iteration_started" && e.Task != nil && e.Task.ID == "T05"
		})
		victim := started.WorkerID
		st := f.remoteStatus(t, viewer)
		if got := st["T05"]; got["state"] != "claimed" || got["worker"] != victim {
			t.Errorf("status --remote during the run: T05 %v, want claimed by %s", got, victim)
		}
		if got := st["T01"]["state"]; got != "done" {
			t.Errorf("status --remote: T01 is %v, want done (T05 depends on it)", got)
		}
		for _, w := range ws {
			if w.name == victim {
				if err := w.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			}
		}
		f.events.waitFor(ctx, t, "T05 taken over", func(e event) bool {
			return workerSays("claimed T05 (taken over from "+victim)(e) && e.WorkerID != victim
		})
		for _, w := range ws {
			if code := w.wait(t); w.name != victim && code != 0 {
				t.Errorf("worker %s exited %d, want 0", w.name, code)
			}
		}
		f.checkLedger(t, 12)
		landed := f.events.count(workerSays("landed "))
		if landed != 12 {
			t.Errorf("%d landings, want 12", landed)
		}
		st = f.remoteStatus(t, viewer)
		for id, tk := range st {
			if tk["state"] != "done" {
				t.Errorf("status --remote after the run: %s is %v", id, tk["state"])
			}
		}
		// Every worker's events carry its id.
		all, _ := f.events.snapshot()
		for _, e := range all {
			if e.WorkerID != e.from {
				t.Fatalf("an event of %s says worker_id %q: %+v", e.from, e.WorkerID, e)
			}
		}
	})

	t.Run("two_workers_race_for_one_task", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		f := newFleet(t, bin, "# Plan\n\n- [ ] T01: the only one\n")
		a, b := f.start(ctx, "a"), f.start(ctx, "b")
		if a.wait(t) != 0 || b.wait(t) != 0 {
			t.Fatal("a worker failed")
		}
		if n := f.events.count(workerSays("claimed T01")); n != 1 {
			t.Errorf("T01 claimed %d times, want once", n)
		}
		f.checkLedger(t, 1)
	})

	// Not in parallel with the others: four more workers at once make
	// the leases of the others too short on a busy machine.
	t.Run("kubernetes_recipe_on_a_fresh_plan", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		// The Job's pods, as deploy/kubernetes/ralph-workers.yaml makes
		// them: its parallelism, the container's args and environment, the
		// entry point deploy/ralph-worker.sh. prd.json names ralph/fleet,
		// which nobody made: the remote has only main. One pod makes the
		// branch from main, the others take it, and none fails for it.
		f := newFleetOf(t, bin, "prd.json", "ralph/fleet", fleetPlan())
		main := gittest.Git(t, f.root, "--git-dir", f.remote, "rev-parse", "main")
		pods, args, env := kubernetesWorkers(t, map[string]string{"ralph-git/REPO_URL": f.remote, "ralph-agent/ANTHROPIC_API_KEY": "unused"})
		script, err := filepath.Abs(filepath.Join("..", "deploy", "ralph-worker.sh"))
		if err != nil {
			t.Fatal(err)
		}
		var ws []*workerProc
		for i := range pods {
			pod := fmt.Sprintf("ralph-workers-%d-x7k9p", i)
			podEnv := []string{"WORK_DIR=" + filepath.Join(f.root, pod)}
			for _, e := range env {
				podEnv = append(podEnv, strings.ReplaceAll(e, "$(POD_NAME)", pod))
			}
			// The Job asks for bubblewrap (the image has it); here the fake
			// agent reads its scenario through variables a sandbox drops,
			// from a directory under /tmp, which the sandbox hides.
			podEnv = append(podEnv, "RALPH_SANDBOX_MODE=none")
			ws = append(ws, f.launch(ctx, f.root, pod, podEnv, append([]string{"sh", script}, args...)...))
		}
		for _, w := range ws {
			if code := w.wait(t); code != 0 {
				t.Errorf("pod %s exited %d, want 0", w.name, code)
			}
		}
		if n := f.events.count(workerSays("made the run branch ralph/fleet on origin from main")); n != 1 {
			t.Errorf("%d pods say they made the run branch, want 1", n)
		}
		f.checkLedger(t, 12)
		if got := gittest.Git(t, f.root, "--git-dir", f.remote, "rev-parse", "main"); got != main {
			t.Errorf("main moved from %s to %s: the workers land on ralph/fleet only", main, got)
		}
	})

	t.Run("remote_refuses_pushes_for_a_while", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		f := newFleet(t, bin, workerPlan())
		refuse := filepath.Join(f.root, "refuse")
		mustWrite(t, refuse, "")
		hook := filepath.Join(f.remote, "hooks", "pre-receive")
		mustWrite(t, hook, "#!/bin/sh\nif [ -e '"+refuse+"' ]; then echo 'read-only for maintenance' >&2; exit 1; fi\n")
		if err := os.Chmod(hook, 0o755); err != nil {
			t.Fatal(err)
		}
		a, b := f.start(ctx, "a"), f.start(ctx, "b")
		for _, name := range []string{"a", "b"} {
			f.events.waitFor(ctx, t, name+" refused", func(e event) bool {
				return e.WorkerID == name && e.Kind == "worker" && strings.Contains(e.Message, "the remote refused")
			})
		}
		if err := os.Remove(refuse); err != nil {
			t.Fatal(err)
		}
		if a.wait(t) != 0 || b.wait(t) != 0 {
			t.Fatal("a worker failed")
		}
		f.checkLedger(t, 12)
	})
}

// kubernetesWorkers reads deploy/kubernetes/ralph-workers.yaml: how many
// pods run at once, and their container's args and environment
// ("NAME=value"), with secrets' values from secrets ("secret/key") and
// the pod's name as $(POD_NAME).
func kubernetesWorkers(t *testing.T, secrets map[string]string) (pods int, args, env []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "kubernetes", "ralph-workers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.Unmarshal(data, &job); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		v := e.Value
		switch from := e.ValueFrom; {
		case from == nil:
		case from.FieldRef != nil && from.FieldRef.FieldPath == "metadata.name":
			v = "$(POD_NAME)"
		case from.SecretKeyRef != nil:
			s, ok := secrets[from.SecretKeyRef.Name+"/"+from.SecretKeyRef.Key]
			if !ok {
				t.Fatalf("ralph-workers.yaml: %s from secret %s, key %s: the test has no value for it", e.Name, from.SecretKeyRef.Name, from.SecretKeyRef.Key)
			}
			v = s
		default:
			t.Fatalf("ralph-workers.yaml: %s: a value from %+v, which the test cannot make", e.Name, from)
		}
		env = append(env, e.Name+"="+v)
	}
	return int(*job.Spec.Parallelism), c.Args, env
}

// BenchmarkWorkers times the 12-task plan with 1, 2 and 4 workers, each
// task's agent working 0.5 s (BENCHMARKS.md).
func BenchmarkWorkers(b *testing.B) {
	bin := workerBins(b)
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				f := newFleet(b, bin, workerPlan(), "WORK_SECONDS=0.5")
				b.StartTimer()
				var ws []*workerProc
				for i := range n {
					ws = append(ws, f.start(b.Context(), fmt.Sprintf("w%d", i+1)))
				}
				for _, w := range ws {
					if w.wait(b) != 0 {
						b.Fatal("a worker failed")
					}
				}
			}
		})
	}
}

// BenchmarkFleet times a fresh 12-story prd.json whose longest chain is
// five stories (fleetPlan), each story's agent working 1 s, with 1, 2, 4
// and 8 workers at the default lease (2 m): from the workers' start, each
// in a clone made beforehand, until the last one exits with the plan done
// (BENCHMARKS.md). The run branch is not on the remote: the workers make
// it, unless RALPH_BENCH_BRANCH_MADE is set, which pushes it beforehand,
// as a ralph that cannot make it needs.
func BenchmarkFleet(b *testing.B) {
	bin := workerBins(b)
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				f := newFleetOf(b, bin, "prd.json", "ralph/fleet", fleetPlan(), "WORK_SECONDS=1")
				if os.Getenv("RALPH_BENCH_BRANCH_MADE") != "" {
					gittest.Git(b, f.root, "--git-dir", f.remote, "branch", f.branch, "main")
				}
				dirs := make([]string, n)
				for i := range dirs {
					dirs[i] = f.clone(fmt.Sprintf("w%d", i+1))
				}
				b.StartTimer()
				ws := make([]*workerProc, n)
				for i, dir := range dirs {
					ws[i] = f.startIn(b.Context(), dir, fmt.Sprintf("w%d", i+1), "--lease", "2m")
				}
				for _, w := range ws {
					if w.wait(b) != 0 {
						b.Fatal("a worker failed")
					}
				}
			}
		})
	}
}
