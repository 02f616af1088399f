package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests drive ralph serve's page in a real Chromium, headless,
// over the DevTools protocol: they run only when RALPH_E2E_CHROMIUM names
// the browser (Debian's /usr/bin/chromium). RALPH_E2E_SCREENSHOTS, when
// set, is the directory the screenshots go to (docs/, for docs/serve.md);
// otherwise a temporary one.

// serveBins builds ralph and the fake agent (as claude) for one test.
func serveBins(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	for out, pkg := range map[string]string{"ralph": "./cmd/ralph", "claude": "./internal/fakeagent/cmd/fakeagent"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, out), pkg)
		build.Dir = ".."
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	return bin
}

// serveEnv is one test's environment: its own HOME and state directory
// (the run registry), the fake agent first on PATH, no sandbox.
type serveEnv struct {
	t         *testing.T
	root, bin string
	env       []string
}

func newServeEnv(t *testing.T) *serveEnv {
	t.Helper()
	root := t.TempDir()
	bin := serveBins(t)
	env := []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + filepath.Join(root, "home"),
		"XDG_STATE_HOME=" + filepath.Join(root, "state"),
		"TMPDIR=" + os.TempDir(),
		"RALPH_SANDBOX_MODE=none",
		// No gates: the fake agent is the worker only, not a reviewer
		// (review.when = "auto" would ask it to review each claim).
		"RALPH_REVIEW_WHEN=off",
		"GIT_AUTHOR_NAME=ralph-e2e", "GIT_AUTHOR_EMAIL=e2e@example.com",
		"GIT_COMMITTER_NAME=ralph-e2e", "GIT_COMMITTER_EMAIL=e2e@example.com",
		"GIT_CONFIG_NOSYSTEM=1",
	}
	return &serveEnv{t: t, root: root, bin: bin, env: env}
}

// project makes a git repository with a prd.json of tasks and a fake
// agent scenario.
func (e *serveEnv) project(name string, tasks []string, scenario string) string {
	e.t.Helper()
	dir := filepath.Join(e.root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	var stories []string
	for i, title := range tasks {
		stories = append(stories, fmt.Sprintf(`{"id": "US-%03d", "title": %q, "passes": false, "priority": %d}`, i+1, title, i+1))
	}
	prd := "{\"userStories\": [\n  " + strings.Join(stories, ",\n  ") + "\n]}\n"
	if err := os.WriteFile(filepath.Join(dir, "prd.json"), []byte(prd), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.root, name+".scenario"), []byte(scenario), 0o644); err != nil {
		e.t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "init"}} {
		e.cmd(dir, "git", args...).run()
	}
	return dir
}

type proc struct {
	t   *testing.T
	cmd *exec.Cmd
}

func (e *serveEnv) cmd(dir, name string, args ...string) proc {
	if name == "ralph" {
		name = filepath.Join(e.bin, name)
	}
	c := exec.Command(name, args...)
	c.Dir = dir
	c.Env = append(append([]string(nil), e.env...),
		"FAKEAGENT_SCRIPT="+filepath.Join(e.root, filepath.Base(dir)+".scenario"),
		"FAKEAGENT_PROMPTS="+filepath.Join(e.root, filepath.Base(dir)+".prompts"))
	return proc{t: e.t, cmd: c}
}

func (p proc) run() {
	p.t.Helper()
	if out, err := p.cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("%s: %v\n%s", strings.Join(p.cmd.Args, " "), err, out)
	}
}

// start starts the process; the test ends it (SIGTERM) if it still runs.
func (p proc) start() {
	p.t.Helper()
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	p.t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-done
	})
}

// serve starts ralph serve with args and returns the address it printed.
func (e *serveEnv) serve(args ...string) string {
	e.t.Helper()
	p := e.cmd(e.root, "ralph", append([]string{"serve"}, args...)...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	p.start()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		e.t.Fatalf("ralph serve printed no address: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	url := regexp.MustCompile(`https?://\S+`).FindString(line)
	if url == "" {
		e.t.Fatalf("ralph serve: %q", line)
	}
	return url
}

// runID is the API's id of the project in dir.
func runID(t *testing.T, base, dir string) string {
	t.Helper()
	resp, err := http.Get(base + "api/v1/runs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Runs []struct{ ID, Dir string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	for _, r := range body.Runs {
		if r.Dir == real || r.Dir == dir {
			return r.ID
		}
	}
	t.Fatalf("the server does not watch %s: %+v", dir, body.Runs)
	return ""
}

func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("RALPH_E2E_CHROMIUM")
	if path == "" {
		t.Skip("RALPH_E2E_CHROMIUM is not set: point it at a Chromium (/usr/bin/chromium) to run the browser tests")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return bctx
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitFor waits until the page's JavaScript expression is true.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		if navigated(err) && time.Now().Before(deadline) {
			continue // the page was replaced under the poll (a redirect): poll the new one
		}
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// navigated reports the errors of an evaluation whose page went away
// under it, as when the login redirect replaces the page.
func navigated(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") ||
		strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Inspected target navigated or closed")
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func screenshotDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("RALPH_E2E_SCREENSHOTS"); d != "" {
		return d
	}
	return t.TempDir()
}

// noHorizontalScroll checks the page is no wider than the viewport.
func noHorizontalScroll(t *testing.T, ctx context.Context, size string) {
	t.Helper()
	if w := eval[[]int](t, ctx, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`); w[0] > w[1] {
		t.Errorf("at %s the page scrolls sideways: %d px wide in a %d px viewport", size, w[0], w[1])
	}
}

func TestServeBrowser(t *testing.T) {
	ctx := browser(t)
	e := newServeEnv(t)
	gate := t.TempDir()
	waitFile := func(name string) string {
		return fmt.Sprintf(`exec while [ ! -e %s ]; do sleep 0.05; done`, filepath.Join(gate, name))
	}
	open := func(name string) {
		if err := os.WriteFile(filepath.Join(gate, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// alpha: a task the test finishes, one during which the page pauses the
	// run, and one whose agent asks a question before it can finish.
	alpha := e.project("alpha", []string{"Create the greeting", "Greet by name", "Pick the greeting word"}, strings.Join([]string{
		"say Writing greet.go\ntool Write greet.go\n" + waitFile("go1") + "\nusage 1200 300\ncost 0.0125\nfinal done <promise>TASK_DONE</promise>",
		"say Adding the name\ntool Bash go test ./...\n" + waitFile("go2") + "\nusage 900 200\ncost 0.01\nfinal done <promise>TASK_DONE</promise>",
		"say The spec does not say.\nusage 400 80\ncost 0.004\nfinal I looked at the spec and the tests.\\n<promise>QUESTION</promise> Should the greeting say hello or hi?",
		"final nobody answered <promise>TASK_FAILED</promise> no answer\nif-prompt Answer: hi\nsay Using hi, as answered.\nfinal done <promise>TASK_DONE</promise>\nend-if",
	}, "\n---\n"))
	// beta: a project whose run is over, for two projects at once.
	beta := e.project("beta", []string{"Write the README"}, "say Writing it\ntool Write README.md\nusage 500 100\ncost 0.002\nfinal <promise>TASK_DONE</promise>")
	e.cmd(beta, "ralph", "run", "--no-tui").run()

	// The address printed carries the control token: the page takes it,
	// the API's reads need none on loopback.
	page := e.serve(alpha, beta, "--addr", "127.0.0.1:0")
	base, _, _ := strings.Cut(page, "?")
	e.cmd(alpha, "ralph", "run", "--no-tui").start()
	alphaID, betaID := runID(t, base, alpha), runID(t, base, beta)
	card := func(id string) string { return `section.run[data-run="` + id + `"]` }
	task := func(id, tid, status string) string {
		return fmt.Sprintf(`!!document.querySelector('%s li[data-task="%s"][data-status="%s"]')`, card(id), tid, status)
	}

	do(t, ctx, "open the page", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(page))
	waitFor(t, ctx, "both projects", `document.querySelectorAll('section.run').length === 2`)
	waitFor(t, ctx, "beta done", task(betaID, "US-001", "done"))
	waitFor(t, ctx, "US-001 running live", task(alphaID, "US-001", "running"))
	waitFor(t, ctx, "the agent's text live", fmt.Sprintf(`document.querySelector('%s ol.live').textContent.includes('Writing greet.go')`, card(alphaID)))
	// A mark the page keeps only as long as it is not reloaded.
	eval[bool](t, ctx, `window.__noReload = true`)
	open("go1")
	waitFor(t, ctx, "US-001 done without a reload", task(alphaID, "US-001", "done"))
	if !eval[bool](t, ctx, `window.__noReload === true`) {
		t.Fatal("the page was reloaded")
	}

	// Pause on the page pauses the run, after the iteration it is in.
	waitFor(t, ctx, "US-002 running", task(alphaID, "US-002", "running"))
	do(t, ctx, "click pause", chromedp.Click(chromedp.CSS(card(alphaID)+` button[data-verb="pause"]`)))
	open("go2")
	waitFor(t, ctx, "the run paused", fmt.Sprintf(`document.querySelector('%s').dataset.status === 'paused'`, card(alphaID)))
	if st := readStatus(t, alpha); st != "paused" {
		t.Fatalf("state.json says %q, want paused", st)
	}
	do(t, ctx, "click resume", chromedp.Click(chromedp.CSS(card(alphaID)+` button[data-verb="resume"]`)))

	// The agent's question shows; the screenshots are taken while it waits.
	waitFor(t, ctx, "the question", fmt.Sprintf(`!document.querySelector('%s .question').hidden && document.querySelector('%[1]s .q-text').textContent.includes('hello or hi')`, card(alphaID)))
	waitFor(t, ctx, "US-003 waiting", task(alphaID, "US-003", "waiting"))
	dir := screenshotDir(t)
	for _, size := range []struct {
		name string
		w, h int64
	}{{"serve-desktop.png", 1280, 800}, {"serve-phone.png", 390, 844}} {
		do(t, ctx, "resize", chromedp.EmulateViewport(size.w, size.h))
		waitFor(t, ctx, "layout", fmt.Sprintf(`document.documentElement.clientWidth === %d`, size.w))
		noHorizontalScroll(t, ctx, fmt.Sprintf("%dx%d", size.w, size.h))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, size.name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Answered on the page (at phone size), the answer reaches the next
	// prompt and the task is done.
	do(t, ctx, "answer", chromedp.SendKeys(chromedp.CSS(card(alphaID)+` .answer textarea`), "hi"),
		chromedp.Click(chromedp.CSS(card(alphaID)+` .answer button`)))
	waitFor(t, ctx, "US-003 done", task(alphaID, "US-003", "done"))
	waitFor(t, ctx, "the run done", fmt.Sprintf(`document.querySelector('%s').dataset.status === 'done'`, card(alphaID)))
	prompt, err := os.ReadFile(filepath.Join(e.root, "alpha.prompts", "prompt-4.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Question: Should the greeting say hello or hi?", "Answer: hi"} {
		if !strings.Contains(string(prompt), want) {
			t.Errorf("the prompt after the answer lacks %q:\n%s", want, prompt)
		}
	}
	noHorizontalScroll(t, ctx, "390x844, run over")

	// An iteration's transcript, rendered as ralph logs renders it.
	do(t, ctx, "open a transcript", chromedp.Click(chromedp.CSS(card(betaID)+` ol.history li button`)))
	waitFor(t, ctx, "the transcript", fmt.Sprintf(`(document.querySelector('%s ol.history pre') || {}).textContent?.includes('→ Write README.md')`, card(betaID)))

	// A server off loopback: nothing without the token, the page with it.
	url := e.serve("--addr", "0.0.0.0:0", alpha)
	m := regexp.MustCompile(`^https?://[^/]+:(\d+)/\?token=([0-9a-f]+)$`).FindStringSubmatch(url)
	if m == nil {
		t.Fatalf("off loopback, ralph serve printed %q, want the address with its token", url)
	}
	local := "http://127.0.0.1:" + m[1] + "/"
	for _, path := range []string{"", "api/v1/runs", "api/v1/events"} {
		resp, err := http.Get(local + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /%s without the token: %d, want 401", path, resp.StatusCode)
		}
	}
	do(t, ctx, "open without the token", chromedp.Navigate(local))
	if body := eval[string](t, ctx, `document.body.textContent`); !strings.Contains(body, "token required") {
		t.Errorf("the page without the token: %q", body)
	}
	do(t, ctx, "open with the token", chromedp.Navigate(local+"?token="+m[2]))
	waitFor(t, ctx, "the page with the token", fmt.Sprintf(`!!document.querySelector('%s') && location.search === ''`, card(alphaID)))
	if html := eval[string](t, ctx, `document.documentElement.outerHTML`); strings.Contains(html, m[2]) {
		t.Error("the page holds the token")
	}
}

func readStatus(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".ralph", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Status string }
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st.Status
}
