package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/fakemodel"
)

// readmeSection is the part of README.md a new user follows with their own
// project.
const readmeSection = "## Five minutes with your own project"

// readmeNotTyped lists the commands of that section the test does not
// type, each with why. A command the README gains is typed, or the test
// fails until it is listed here.
var readmeNotTyped = map[string]string{
	"ralph demo":      "step 1's simulated agent, not claude: internal/demo and TestScript/demo_* run it",
	"cd your-project": "the test's project directory is the user's project: every command runs in it",
	`ralph plan "add a --json flag to the export command"`: "the README's other way to a plan; " +
		"the test takes its first, editing prd.json",
	"ralph run --ownership agent --prompt CLAUDE.md prd.json": "an existing snarktank ralph.sh setup, " +
		"whose CLAUDE.md this project does not have",
}

// readmeTyped are the commands the test types and checks (typeCommand),
// by verb: the README must show each, and shows no other but those of
// readmeNotTyped.
var readmeTyped = []string{"init", "doctor", "trust", "run --dry-run", "run", "status", "history", "report", "logs"}

// readmeCommand is one command the README shows: a line of a sh block, or
// a `ralph …` span of its prose.
type readmeCommand struct {
	text string // as typed, without the README's comment
	line int    // README.md's line
	verb string // its subcommand (verb)
}

// readmeCommands reads the commands of README.md's section the test
// types, in the order the README shows them, and the commit subject it
// says a task gets. It fails the test when the README shows a command the
// test neither types nor lists in readmeNotTyped, lacks one of
// readmeTyped, or no longer shows one readmeNotTyped lists.
func readmeCommands(t *testing.T) ([]readmeCommand, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	inline := regexp.MustCompile("`(ralph [^`]*)`")
	subject := regexp.MustCompile("`([a-z]+: US-001 - Title)`")
	comment := regexp.MustCompile(`\s+#\s.*$`)
	var cmds []readmeCommand
	var commit string
	in, fence, found := false, "", false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == readmeSection
			found = found || in
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "```"):
			if fence == "" {
				fence = strings.TrimPrefix(line, "```") + " "
			} else {
				fence = ""
			}
			continue
		}
		switch fence {
		case "sh ", "bash ", "shell ":
			if text := strings.TrimSpace(comment.ReplaceAllString(line, "")); text != "" {
				cmds = append(cmds, readmeCommand{text: text, line: n})
			}
		case "":
			for _, m := range inline.FindAllStringSubmatch(line, -1) {
				cmds = append(cmds, readmeCommand{text: m[1], line: n})
			}
			if m := subject.FindStringSubmatch(line); m != nil {
				commit = m[1]
			}
		}
	}
	if !found {
		t.Fatalf("README.md has no section %q", readmeSection)
	}
	if commit == "" {
		t.Fatalf("README.md's %q no longer shows a task's commit subject (`feat: US-001 - Title`)", readmeSection)
	}
	var typed []readmeCommand
	shown, verbs := map[string]bool{}, map[string]bool{}
	for _, c := range cmds {
		shown[c.text] = true
		if _, skip := readmeNotTyped[c.text]; skip {
			continue
		}
		c.verb = verb(c.text)
		if !slices.Contains(readmeTyped, c.verb) {
			t.Errorf("README.md:%d: %s: the test does not know what it shows: check it in typeCommand, "+
				"or list it in readmeNotTyped with why", c.line, c.text)
			continue
		}
		verbs[c.verb] = true
		typed = append(typed, c)
	}
	for _, v := range readmeTyped {
		if !verbs[v] {
			t.Errorf("README.md's %q shows no `ralph %s`: the journey this test types", readmeSection, v)
		}
	}
	for c := range readmeNotTyped {
		if !shown[c] {
			t.Errorf("README.md's %q no longer shows %s: take it out of readmeNotTyped", readmeSection, c)
		}
	}
	return typed, commit
}

// TestReadmeCommands checks, without the agent CLIs, that TestReadme
// knows every command README.md's section shows: a README change that
// the journey does not follow fails here, in every test run.
func TestReadmeCommands(t *testing.T) {
	cmds, commit := readmeCommands(t)
	for _, c := range cmds {
		t.Logf("README.md:%d: %s", c.line, c.text)
	}
	t.Logf("a task's commit: %s", commit)
}

// verb is a command's subcommand, with --dry-run for a dry run.
func verb(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) < 2 || f[0] != "ralph" {
		return ""
	}
	if f[1] == "run" && strings.Contains(cmd, " --dry-run") {
		return "run --dry-run"
	}
	return f[1]
}

// The user's project: a Makefile whose test target init finds as the
// gate, and the plan the user writes in place of init's example.
const (
	readmeMakefile = "test:\n\t@sh tests/greetings.sh\n"
	readmeTest     = `# Every greeting file says hello.
for f in hello-*.txt; do
  [ -e "$f" ] || continue
  grep -qx hello "$f" || { echo "$f does not say hello"; exit 1; }
done
echo greetings ok
`
	readmeTasks = 3
)

func readmePlan() string {
	var stories []string
	for i := 1; i <= readmeTasks; i++ {
		stories = append(stories, fmt.Sprintf(`    {"id": "US-00%d", "title": "Greeting %d", `+
			`"description": "Write hello-%d.txt holding the line hello.", "acceptanceCriteria": ["make test passes"], `+
			`"priority": %d, "passes": false, "notes": ""}`, i, i, i, i))
	}
	return `{
  "project": "greetings",
  "branchName": "ralph/greetings",
  "description": "Greeting files.",
  "userStories": [
` + strings.Join(stories, ",\n") + `
  ]
}
`
}

// readmeTurns is the model's side of the run: each task written with the
// shell tool, then claimed done.
func readmeTurns() []fakemodel.Turn {
	var turns []fakemodel.Turn
	for i := 1; i <= readmeTasks; i++ {
		turns = append(turns,
			fakemodel.Shell(fmt.Sprintf("echo hello > hello-%d.txt", i)),
			fakemodel.Text(fmt.Sprintf("Wrote hello-%d.txt. <promise>TASK_DONE</promise>", i)))
	}
	return turns
}

// readmeModel is the model the user chooses in ralph.toml after init,
// an edit they then approve with ralph trust.
const readmeModel = "claude-sonnet-4-5"

// TestReadme types README.md's "Five minutes with your own project" as a
// user would, in a fresh git repository of a tiny project with a
// Makefile: every command of the section's sh blocks and every `ralph …`
// of its prose, read from README.md itself, in its order, with ralph built
// from this tree and the real Claude Code on PATH against the fake model
// server, in ralph's default sandbox (bubblewrap); ralph run in a terminal
// (tmux), where its live view shows. Between init and trust the user edits
// prd.json and ralph.toml, as the README says; before trust the edit is
// refused with its diff. Each command is checked for what the README says
// it does; those of readmeNotTyped are the only ones not typed.
func TestReadme(t *testing.T) {
	cmds, commitSubject := readmeCommands(t)
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
	cli := agentCLIs()[0]
	if cli.name != "claude" {
		t.Fatalf("the first agent CLI is %s: the README's default is claude", cli.name)
	}
	if _, err := os.Stat(filepath.Join(toolsBin, cli.bin)); err != nil {
		t.Skipf("%s is not installed in %s", cli.bin, toolsBin)
	}
	// ralph's default sandbox hides /tmp: the project is elsewhere.
	p := newUser(t, cli, outsideTmp(t), readmeTurns()...)
	cli.setup(p)
	if p.toml.Len() != 0 {
		t.Fatalf("claude's setup writes ralph.toml lines %q: init writes ralph.toml here", p.toml.String())
	}
	// The fake model server is on the host's loopback, which the
	// sandbox's network reaches only when named (a user's agent reaches
	// its API through ralph's proxy without this).
	p.setenv("RALPH_SANDBOX_ALLOW_HOSTS=" + strings.TrimPrefix(p.server.URL, "http://"))
	p.write("Makefile", readmeMakefile)
	p.write("tests/greetings.sh", readmeTest)
	p.git("init", "-q", "-b", "main")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "greetings project")

	term := p.newTerminal()
	edited := false
	for _, c := range cmds {
		if !edited && c.verb != "init" && c.verb != "doctor" {
			// Step 2's prose: the user writes their plan and edits
			// ralph.toml, and a change nobody approved is refused.
			p.userEdits()
			edited = true
		}
		t.Run(strings.ReplaceAll(c.text, " ", "_"), func(t *testing.T) {
			p.t = t
			p.typeCommand(t, term, c, commitSubject)
		})
		p.t = t
	}
	for c, why := range readmeNotTyped {
		t.Logf("not typed: %s: %s", c, why)
	}
}

// userEdits is what the README's step 2 has the user do after init:
// write the plan, edit ralph.toml. Before trust the edit is refused, with
// its diff.
func (p *project) userEdits() {
	p.t.Helper()
	p.write("prd.json", readmePlan())
	toml, err := os.ReadFile(filepath.Join(p.dir, "ralph.toml"))
	if err != nil {
		p.t.Fatal(err)
	}
	choice := fmt.Sprintf("model = %q", readmeModel)
	edited := strings.Replace(string(toml), `# model = ""`, choice, 1)
	if edited == string(toml) {
		p.t.Fatalf("the ralph.toml init wrote has no `# model = \"\"` line to edit:\n%s", toml)
	}
	p.write("ralph.toml", edited)
	r := p.typed(time.Minute, "ralph run --dry-run")
	diff := r.stdout + r.stderr
	// Off a terminal, where a pager would show it, the diff is in a file
	// the refusal names.
	if m := regexp.MustCompile(`the whole diff is in (\S+)\)`).FindStringSubmatch(diff); m != nil {
		b, err := os.ReadFile(m[1])
		if err != nil {
			p.t.Errorf("the refusal names the diff's file: %v", err)
		}
		diff = string(b)
	}
	if r.code == 0 || !strings.Contains(diff, "\n+"+choice) {
		p.t.Errorf("ralph run --dry-run on an edit not approved: exit %d, want it refused with the diff (+%s):\n%s%s\ndiff:\n%s",
			r.code, choice, r.stdout, r.stderr, diff)
	}
}

// typeCommand types one README command and checks what the README says
// it does. ralph run is typed in the terminal, where its live view is.
func (p *project) typeCommand(t *testing.T, term *terminal, c readmeCommand, commitSubject string) {
	t.Helper()
	v := c.verb
	headBefore := p.head()
	histBefore := p.historyLen()
	var r result
	live := false
	switch {
	case v == "run" && term != nil:
		start := time.Now()
		r.code, r.stdout, live = term.typeLine(runDeadline, c.text)
		r.duration = time.Since(start)
	case v == "run":
		r = p.typed(runDeadline, c.text)
	default:
		r = p.typed(time.Minute, c.text)
	}
	out := r.stdout + r.stderr
	t.Logf("README.md:%d: %s: exit %d in %s\n%s", c.line, c.text, r.code, r.duration.Round(time.Millisecond), out)
	if r.code != 0 {
		t.Errorf("%s: exit %d, want 0", c.text, r.code)
	}
	switch v {
	case "init":
		// ralph.toml with the project's checks as gates, ralph-prompt.md,
		// an example prd.json.
		for _, f := range []string{"ralph.toml", "ralph-prompt.md", "prd.json"} {
			if !p.exists(f) {
				t.Errorf("init wrote no %s", f)
			}
		}
		if toml, _ := os.ReadFile(filepath.Join(p.dir, "ralph.toml")); !strings.Contains(string(toml), `"make test"`) {
			t.Errorf("ralph.toml has not the project's check (make test) as a gate:\n%s", toml)
		}
	case "doctor":
		// The agent installed and logged in, git, config, plan, gates,
		// sandbox.
		for _, want := range []string{"agent claude", "credentials  ANTHROPIC_API_KEY is set", "git", "config", "plan",
			"make test    passed", "bwrap works", "all checks passed"} {
			if !strings.Contains(out, want) {
				t.Errorf("doctor says nothing of %q", want)
			}
		}
	case "trust":
		if r := p.typed(time.Minute, "ralph run --dry-run"); r.code != 0 {
			t.Errorf("ralph run --dry-run after ralph trust: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	case "run --dry-run":
		// The exact agent command, environment changes, gates and first
		// prompt.
		words := strings.Join(strings.Fields(out), " ") // the argv is shown one word a line
		for _, want := range []string{"claude", "--model " + readmeModel, "make test", "US-001 - Greeting 1", "hello-1.txt"} {
			if !strings.Contains(words, want) {
				t.Errorf("the dry run does not show %q", want)
			}
		}
		if p.head() != headBefore || p.historyLen() != histBefore {
			t.Errorf("the dry run committed or recorded something")
		}
	case "run":
		p.checkNoOrphans()
		if histBefore == 0 {
			// The loop, with a live view, and the summary left on the
			// terminal once it ends.
			if term != nil && !live {
				t.Errorf("ralph run in a terminal showed no live view (its task list)")
			}
			if !strings.Contains(out, fmt.Sprintf("ralph done: all tasks done · %d/%d tasks done", readmeTasks, readmeTasks)) {
				t.Errorf("ralph run left no summary saying all tasks done")
			}
			p.checkReadmeRun(t, commitSubject)
			break
		}
		// Running again continues where it stopped: here, nothing left.
		if p.head() != headBefore || p.historyLen() != histBefore {
			t.Errorf("running again with every task done made a commit or an iteration")
		}
		if !strings.Contains(out, "all tasks done") {
			t.Errorf("running again does not say all tasks done")
		}
	case "status":
		// Where the run stands (the latest: here the one that found the
		// plan done), its cost.
		for _, want := range []string{"status     done: all tasks done", "agent      claude " + readmeModel, "cost       $"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status does not say %q", want)
			}
		}
	case "history":
		// A receipt per task (--by-task): iterations, time, tokens, cost,
		// what checked it.
		for i := 1; i <= readmeTasks; i++ {
			row := regexp.MustCompile(fmt.Sprintf(`(?m)^.*US-00%d .*$`, i)).FindString(r.stdout)
			if !strings.Contains(row, "task_done") || !strings.Contains(row, "$") {
				t.Errorf("history has no task_done row with a cost for US-00%d", i)
			}
			if strings.Contains(c.text, "--by-task") && !strings.Contains(row, "gates 1/1 ok") {
				t.Errorf("history --by-task does not say what checked US-00%d (gates 1/1 ok)", i)
			}
		}
	case "report":
		// The receipt: a row per task, verified, with its cost; then the
		// cost per verified task (every task here passed its gate).
		for i := 1; i <= readmeTasks; i++ {
			row := regexp.MustCompile(fmt.Sprintf(`(?m)^US-00%d .*$`, i)).FindString(r.stdout)
			if !strings.Contains(row, " yes ") || !strings.Contains(row, "task_done") || !strings.Contains(row, "$") {
				t.Errorf("report has no verified task_done row with a cost for US-00%d: %q", i, row)
			}
		}
		want := fmt.Sprintf("%d tasks, %d verified", readmeTasks, readmeTasks)
		if !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "per verified task") {
			t.Errorf("report does not say %q and the cost per verified task:\n%s", want, r.stdout)
		}
	case "logs":
		// Iteration N's agent output, readable.
		f := strings.Fields(c.text)
		n, err := strconv.Atoi(f[len(f)-1])
		if err != nil || n < 1 || n > readmeTasks {
			t.Fatalf("%s: the test's run has iterations 1 to %d", c.text, readmeTasks)
		}
		want := fmt.Sprintf("Wrote hello-%d.txt.", n)
		if !strings.Contains(r.stdout, want) {
			t.Errorf("%s does not show iteration %d's output (%q)", c.text, n, want)
		}
		if strings.Contains(r.stdout, `{"type":`) {
			t.Errorf("%s shows the raw stream, not readable text", c.text)
		}
	default:
		t.Errorf("README.md:%d: %s: typeCommand has no check for %s", c.line, c.text, v)
	}
}

// checkReadmeRun checks the run that does the plan: each task written,
// its gate passed, committed with the subject the README shows, and
// nothing left behind.
func (p *project) checkReadmeRun(t *testing.T, commitSubject string) {
	t.Helper()
	log := p.gitOut("log", "--format=%s")
	for i := 1; i <= readmeTasks; i++ {
		id, title := fmt.Sprintf("US-00%d", i), fmt.Sprintf("Greeting %d", i)
		want := strings.NewReplacer("US-001", id, "Title", title).Replace(commitSubject)
		if !strings.Contains("\n"+log, "\n"+want+"\n") {
			t.Errorf("no commit %q in git log:\n%s", want, log)
		}
		if b, err := os.ReadFile(filepath.Join(p.dir, fmt.Sprintf("hello-%d.txt", i))); err != nil || string(b) != "hello\n" {
			t.Errorf("hello-%d.txt: %q, %v", i, b, err)
		}
	}
	if n := len(p.history()); n != readmeTasks {
		t.Errorf("%d iterations in history, want %d", n, readmeTasks)
	}
	if st := p.gitOut("status", "--porcelain"); st != "" {
		t.Errorf("the run left changes behind:\n%s", st)
	}
	p.checkShellRan(readmeTasks)
}

// typed runs a command line as the user's shell would, in the project.
func (p *project) typed(deadline time.Duration, line string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	return p.command(ctx, "sh", "-c", line)
}

// gitOut is git's output in the project.
func (p *project) gitOut(args ...string) string {
	p.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = p.dir, p.env
	out, err := cmd.Output()
	if err != nil {
		p.t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

func (p *project) head() string { return strings.TrimSpace(p.gitOut("rev-parse", "HEAD")) }

// historyLen is the number of iterations recorded so far.
func (p *project) historyLen() int {
	if _, err := os.Stat(filepath.Join(p.dir, ".ralph", "history.jsonl")); err != nil {
		return 0
	}
	return len(p.history())
}

// terminal is the user's terminal: a tmux session whose shell has the
// user's environment, where `ralph run` draws its live view.
type terminal struct {
	p     *project
	tmux  string
	sock  string
	typed int // commands typed so far: each one's exit line is its own
}

// newTerminal starts the session; nil without tmux.
func (p *project) newTerminal() *terminal {
	p.t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		p.t.Log("tmux is not installed: ralph run is typed without a terminal, its live view unchecked")
		return nil
	}
	term := &terminal{p: p, tmux: tmux, sock: filepath.Join(p.tmp, "tmux.sock")}
	term.cmd("new-session", "-d", "-s", "user", "-x", "120", "-y", "40", "-c", p.dir, "env", "PS1=$ ", "sh")
	p.t.Cleanup(func() { _ = exec.Command(tmux, "-S", term.sock, "kill-server").Run() })
	// The terminal and its shell outlive each ralph on purpose.
	for _, f := range []string{"#{pid}", "#{pane_pid}"} {
		pid, err := strconv.Atoi(strings.TrimSpace(term.cmd("display-message", "-p", "-t", "user", f)))
		if err != nil {
			p.t.Fatalf("tmux %s: %v", f, err)
		}
		p.keep = append(p.keep, pid)
	}
	return term
}

func (term *terminal) cmd(args ...string) string {
	term.p.t.Helper()
	cmd := exec.Command(term.tmux, append([]string{"-S", term.sock, "-f", "/dev/null"}, args...)...)
	cmd.Env = term.p.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		term.p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// typeLine types line and Enter, and waits for the command to exit. It
// returns the exit code, what the terminal holds after the line (its
// scrollback included), and whether ralph's live view (its task list)
// was on the screen meanwhile.
func (term *terminal) typeLine(deadline time.Duration, line string) (code int, screen string, live bool) {
	term.p.t.Helper()
	term.typed++
	mark := fmt.Sprintf("readme-exit-%d=", term.typed)
	term.cmd("send-keys", "-t", "user", "-l", line+"; echo "+mark+"$?")
	term.cmd("send-keys", "-t", "user", "Enter")
	exit := regexp.MustCompile(`(?m)^` + mark + `(\d+)$`)
	for end := time.Now().Add(deadline); ; time.Sleep(100 * time.Millisecond) {
		s := term.cmd("capture-pane", "-p", "-t", "user")
		live = live || strings.Contains(s, "── tasks")
		if m := exit.FindStringSubmatch(s); m != nil {
			code, _ = strconv.Atoi(m[1])
			break
		}
		if time.Now().After(end) {
			term.cmd("send-keys", "-t", "user", "C-c")
			term.p.t.Fatalf("%s: still running after %s; the screen:\n%s", line, deadline, s)
		}
	}
	all := term.cmd("capture-pane", "-p", "-J", "-S", "-", "-t", "user")
	if i := strings.LastIndex(all, line+"; echo "+mark); i >= 0 {
		all = all[i:]
	}
	return code, strings.TrimRight(all, "\n ") + "\n", live
}
