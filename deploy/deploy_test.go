// Package deploy holds the recipes that start ralph workers with engines
// that exist already: a Kubernetes Indexed Job, a GitHub Actions matrix
// workflow and the image they run. Its tests check them: the manifest
// decoded strictly with the upstream Kubernetes API types, the workflow
// linted with actionlint, and both using only the flags, variables and
// exit codes ralph has (the tables of docs/cli.md, generated from the
// commands, and docs/concepts.md, which internal/cli's tests hold to the
// code); and the hardening each promises: a numeric non-root user, no
// privilege escalation, no service-account token, pinned images, actions
// and releases.
package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ralph-loop/ralph/internal/config"
)

// docPage is the text of a page of docs/.
func docPage(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tableRows returns the rows of the first table after heading.
func tableRows(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no %q", heading)
	}
	var rows [][]string
	started := false
	for line := range strings.SplitSeq(rest, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if started {
				break
			}
			continue
		}
		started = true
		if strings.HasPrefix(line, "|---") {
			continue
		}
		var cells []string
		// An escaped \| is a pipe inside a cell.
		line = strings.ReplaceAll(line, `\|`, "\x00")
		for c := range strings.SplitSeq(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, "\x00", "|")))
		}
		rows = append(rows, cells)
	}
	return rows[1:] // the header
}

// runFlags are `ralph run`'s flags as docs/cli.md's table has them: name
// (and shorthand) → whether it takes a value.
func runFlags(t *testing.T) map[string]bool {
	t.Helper()
	cell := regexp.MustCompile("^`(?:-([a-zA-Z]), )?--([a-z][a-z-]*)(?: (\\S+)|\\[=(\\S+)\\])?`$")
	flags := map[string]bool{}
	for _, row := range tableRows(t, docPage(t, "cli.md"), "### `ralph run` flags") {
		m := cell.FindStringSubmatch(row[0])
		if m == nil {
			t.Fatalf("docs/cli.md run flags: cannot read %q", row[0])
		}
		// A value in brackets is optional: --serve=ADDR, never --serve ADDR.
		flags["--"+m[2]] = m[3] != ""
		if m[1] != "" {
			flags["-"+m[1]] = m[3] != ""
		}
	}
	return flags
}

// exitCodes are the exit codes of docs/concepts.md.
func exitCodes(t *testing.T) []int {
	t.Helper()
	var codes []int
	for _, row := range tableRows(t, docPage(t, "concepts.md"), "## Exit codes") {
		n, err := strconv.Atoi(row[0])
		if err != nil {
			t.Fatalf("docs/concepts.md exit codes: %q", row[0])
		}
		codes = append(codes, n)
	}
	return codes
}

// checkRunArgs checks the arguments of a `ralph run` (after "run"): every
// flag is one ralph run has.
func checkRunArgs(t *testing.T, where string, args []string) {
	t.Helper()
	flags := runFlags(t)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, inline := strings.Cut(a, "=")
		takes, ok := flags[name]
		if !ok {
			t.Errorf("%s: ralph run has no flag %s", where, name)
			continue
		}
		if takes && !inline {
			i++ // its value
		}
	}
}

// ralphRuns finds the `ralph run` commands in shell text (lines joined at
// a trailing backslash) and returns the words after "run".
func ralphRuns(script string) [][]string {
	script = strings.ReplaceAll(script, "\\\n", " ")
	var out [][]string
	for line := range strings.SplitSeq(script, "\n") {
		for _, part := range regexp.MustCompile(`[;&|>]`).Split(line, -1) {
			words := strings.Fields(part)
			if i := slices.Index(words, "ralph"); i >= 0 && i+1 < len(words) && words[i+1] == "run" {
				out = append(out, words[i+2:])
			}
		}
	}
	return out
}

// checkEnv checks that the RALPH_* variables set are ralph's config keys.
func checkEnv(t *testing.T, where string, names []string) {
	t.Helper()
	known := map[string]bool{}
	for _, k := range config.Keys() {
		known[k.Env] = true
	}
	known["RALPH_TRUST"] = true // no key: it vouches for the config files
	for _, n := range names {
		if strings.HasPrefix(n, "RALPH_") && !known[n] {
			t.Errorf("%s sets %s, which is no config key's variable", where, n)
		}
	}
}

func TestKubernetesJob(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("kubernetes", "ralph-workers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	// Strict: a misspelt or misplaced field is an error, not ignored.
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		t.Fatalf("ralph-workers.yaml is no valid batch/v1 Job: %v", err)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Errorf("apiVersion/kind %s/%s", job.APIVersion, job.Kind)
	}
	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		t.Error("want completionMode: Indexed")
	}
	if spec.Parallelism == nil || spec.Completions == nil || *spec.Parallelism != *spec.Completions || *spec.Parallelism < 2 {
		t.Error("want parallelism N = completions N, N > 1: every worker runs at once, and each exits 0 once the plan is done")
	}
	pod := spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q: a podFailurePolicy needs Never", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	// The image's entry point runs `ralph run --worker` with the args.
	checkRunArgs(t, "the worker's args", c.Args)
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
	}
	checkEnv(t, "the worker", env)
	if !slices.Contains(env, "RALPH_WORKER_ID") {
		t.Error("the worker should be named after its pod (RALPH_WORKER_ID from metadata.name)")
	}

	// Exit codes: the ones that a retry cannot fix fail the Job; a
	// crash (1) is retried; all of them are ralph's.
	codes := exitCodes(t)
	var failJob []int32
	if spec.PodFailurePolicy == nil {
		t.Fatal("want a podFailurePolicy")
	}
	for _, r := range spec.PodFailurePolicy.Rules {
		if r.OnExitCodes == nil {
			continue
		}
		if r.OnExitCodes.ContainerName == nil || *r.OnExitCodes.ContainerName != c.Name {
			t.Errorf("exit code rule for container %v, want %s", r.OnExitCodes.ContainerName, c.Name)
		}
		for _, v := range r.OnExitCodes.Values {
			if !slices.Contains(codes, int(v)) {
				t.Errorf("podFailurePolicy names exit code %d, which ralph does not have", v)
			}
		}
		if r.Action == batchv1.PodFailurePolicyActionFailJob && r.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn {
			failJob = append(failJob, r.OnExitCodes.Values...)
		}
	}
	for _, want := range []int32{3, 4} {
		if !slices.Contains(failJob, want) {
			t.Errorf("exit code %d (a limit, stuck) should fail the Job, not be retried", want)
		}
	}
	if slices.Contains(failJob, 1) {
		t.Error("exit code 1 (an error, a crash) should be retried")
	}
}

func TestGitHubWorkflow(t *testing.T) {
	t.Parallel()
	// TestWorkflowsPinned lints it with actionlint.
	data, err := os.ReadFile(filepath.Join("github", "ralph-workers.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Concurrency struct {
			Group string `json:"group"`
		} `json:"concurrency"`
		Jobs map[string]struct {
			Strategy struct {
				Matrix map[string]any `json:"matrix"`
			} `json:"strategy"`
			Steps []struct {
				Uses string            `json:"uses"`
				Run  string            `json:"run"`
				Env  map[string]string `json:"env"`
				With map[string]any    `json:"with"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	if wf.Concurrency.Group == "" {
		t.Error("want a concurrency group")
	}
	codes := exitCodes(t)
	for name, job := range wf.Jobs {
		if len(job.Strategy.Matrix) == 0 {
			t.Errorf("job %s: want a matrix of workers", name)
		}
		runs, uploads := 0, false
		for _, s := range job.Steps {
			var env []string
			for k, v := range s.Env {
				env = append(env, k)
				if strings.Contains(strings.ToUpper(k), "KEY") && !strings.Contains(v, "secrets.") {
					t.Errorf("job %s: %s should come from secrets", name, k)
				}
			}
			checkEnv(t, "job "+name, env)
			for _, args := range ralphRuns(s.Run) {
				runs++
				checkRunArgs(t, "job "+name, args)
				if !slices.Contains(args, "--worker") {
					t.Errorf("job %s: ralph run without --worker", name)
				}
			}
			for _, m := range regexp.MustCompile(`(?m)^\s*(\d+)\)`).FindAllStringSubmatch(s.Run, -1) {
				if n, _ := strconv.Atoi(m[1]); !slices.Contains(codes, n) {
					t.Errorf("job %s handles exit code %d, which ralph does not have", name, n)
				}
			}
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") && strings.Contains(s.With["path"].(string), ".ralph/") {
				uploads = true
			}
		}
		if runs == 0 {
			t.Errorf("job %s runs no ralph run --worker", name)
		}
		if !uploads {
			t.Errorf("job %s does not upload .ralph/", name)
		}
	}
}

func TestImage(t *testing.T) {
	t.Parallel()
	docker, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(docker)
	var user string
	for _, m := range regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllStringSubmatch(text, -1) {
		user = m[1]
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("the image's last USER is %q: want a numeric user other than root (Kubernetes' runAsNonRoot checks it)", user)
	}
	for _, m := range regexp.MustCompile(`(?m)^FROM\s+(?:--platform=\S+\s+)?(\S+)`).FindAllStringSubmatch(text, -1) {
		ref := m[1]
		if ref == "scratch" || !strings.Contains(ref, ":") && !strings.Contains(ref, "@") && strings.HasPrefix(ref, "$") {
			continue // a stage of this file
		}
		if !pinnedImage(ref) {
			t.Errorf("FROM %s is not pinned to a version", ref)
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", " git ", "ENTRYPOINT [\"ralph-worker\"]", "COPY deploy/ralph-worker.sh",
		"bubblewrap", "TARGETARCH", "RALPH_SANDBOX_MODE=bwrap", "seccomp=unconfined"} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile: no %q", want)
		}
	}
	script, err := os.ReadFile("ralph-worker.sh")
	if err != nil {
		t.Fatal(err)
	}
	runs := ralphRuns(string(script))
	if len(runs) != 1 || !slices.Contains(runs[0], "--worker") {
		t.Fatalf("ralph-worker.sh should run ralph run --worker once: %q", runs)
	}
	checkRunArgs(t, "ralph-worker.sh", runs[0])
}

// pinnedImage says whether an image reference names one version: a digest,
// or a tag that is neither missing nor latest.
func pinnedImage(ref string) bool {
	if strings.Contains(ref, "@sha256:") {
		return true
	}
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return false // no tag: latest
	}
	tag := ref[i+1:]
	return tag != "latest" && tag != "" && !strings.Contains(tag, "$")
}

func TestKubernetesJobHardened(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("kubernetes", "ralph-workers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		t.Fatal(err)
	}
	pod := job.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("want automountServiceAccountToken: false: the agent runs in the pod and needs no Kubernetes API")
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("want the pod's securityContext: runAsNonRoot: true and a numeric runAsUser other than 0")
	}
	for _, c := range pod.Containers {
		if !pinnedImage(c.Image) {
			t.Errorf("container %s: image %q is not pinned (a version tag or a digest, never latest)", c.Name, c.Image)
		}
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s: no securityContext", c.Name)
			continue
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s: want allowPrivilegeEscalation: false", c.Name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("container %s: privileged", c.Name)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, corev1.Capability("ALL")) || len(sc.Capabilities.Add) > 0 {
			t.Errorf("container %s: want capabilities: drop [ALL], add none", c.Name)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			t.Errorf("container %s: runs as root", c.Name)
		}
	}
}

// usesRE finds the actions a workflow uses, with the reference after @.
var usesRE = regexp.MustCompile(`(?m)^\s*-?\s*uses:\s*([^@\s]+)@(\S+)`)

// TestWorkflowsPinned lints the recipe and the repository's own workflows
// with actionlint and checks that each action is pinned by commit.
func TestWorkflowsPinned(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("..", ".github", "workflows", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join("github", "ralph-workers.yml"))
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		linter, err := actionlint.NewLinter(os.Stderr, &actionlint.LinterOptions{Color: actionlint.ColorOptionKindNever})
		if err != nil {
			t.Fatal(err)
		}
		errs, err := linter.Lint(path, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errs {
			t.Errorf("actionlint: %s", e)
		}
		uses := usesRE.FindAllStringSubmatch(string(data), -1)
		if len(uses) == 0 {
			t.Errorf("%s uses no action", path)
		}
		for _, m := range uses {
			if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(m[2]) {
				t.Errorf("%s: %s@%s is not pinned to a commit", path, m[1], m[2])
			}
		}
	}
}

// TestWorkflowInstallsPinnedRelease: the recipe installs a named release of
// ralph and checks its checksum, rather than building whatever is latest.
func TestWorkflowInstallsPinnedRelease(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("github", "ralph-workers.yml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if strings.Contains(text, "@latest") || strings.Contains(text, "go install") {
		t.Error("the recipe builds ralph with go install: install a pinned release instead")
	}
	if !regexp.MustCompile(`RALPH_VERSION: \d+\.\d+\.\d+`).MatchString(text) {
		t.Error("want RALPH_VERSION: X.Y.Z, the release the workers run")
	}
	for _, want := range []string{"checksums.txt", "sha256sum --check"} {
		if !strings.Contains(text, want) {
			t.Errorf("the recipe does not check the archive's checksum (no %q)", want)
		}
	}
}
