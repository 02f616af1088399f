package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/gate"
	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
)

type initOptions struct {
	f      *Factory
	Force  bool
	Format string
	Commit bool
}

func newCmdInit(f *Factory, runF func(*initOptions) error) *cobra.Command {
	opts := &initOptions{f: f}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create ralph.toml, a prompt template and an example plan",
		Long:  initLong,
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runInit(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite existing files")
	cmd.Flags().BoolVar(&opts.Commit, "commit", false, "commit the files it writes, apart from any work (on a terminal it asks)")
	cmd.Flags().StringVar(&opts.Format, "format", "prd", "the plan's `FORMAT`: prd, tasks, progress, checklist, headings or mdjson")
	return cmd
}

const initLong = `Create ralph.toml, a prompt template and an example plan in the
format of the workflow you use. The project's own checks (go vet and go
test with a go.mod, package.json's test, lint and typecheck scripts, cargo
test, pytest, ruff, Makefile targets test, check and lint, Gradle, Maven)
are written into ralph.toml as its quality gates, each with the file that
revealed it: a task is accepted only once they pass.

  prd        prd.json (snarktank/ralph, ralph-tui); the default
  tasks      ral's files: tasks.json, plan.md (the project's details),
             activity.md (the agents' log) and prompt.md, which ralph.toml
             names as the prompt
  progress   progress.md (rslph, portableralph)
  checklist  IMPLEMENTATION_PLAN.md, a markdown checklist
  headings   PLAN.md, "### Task N:" sections (ralphex)
  mdjson     plan.md with a fenced JSON task list

Existing files are not overwritten without --force.

The files are ralph's setup, best committed apart from the work: with
--commit init commits them; on a terminal it asks; otherwise it prints the
command. Left uncommitted, the first run commits them alone, before any
task's commit.`

const examplePRD = `{
  "project": "example",
  "branchName": "ralph/example",
  "description": "An example plan: replace these stories with your own.",
  "userStories": [
    {
      "id": "US-001",
      "title": "Add a greeting script",
      "description": "As a user, I want hello.sh to print a greeting.",
      "acceptanceCriteria": ["hello.sh prints 'hello, world'", "hello.sh is executable"],
      "priority": 1,
      "passes": false,
      "notes": ""
    },
    {
      "id": "US-002",
      "title": "Greet by name",
      "description": "As a user, I want hello.sh NAME to greet NAME.",
      "acceptanceCriteria": ["hello.sh Ada prints 'hello, Ada'", "without an argument it still prints 'hello, world'"],
      "priority": 2,
      "passes": false,
      "notes": "",
      "dependsOn": ["US-001"]
    }
  ]
}
`

// promptFileName is the prompt template init writes for the user to edit.
const promptFileName = "ralph-prompt.md"

func runInit(ctx context.Context, opts *initOptions) error {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	files, err := initFiles(opts.Format)
	if err != nil {
		return err
	}
	checks := detectChecks(opts.f, dir)
	for i := range files {
		if files[i].name == "ralph.toml" {
			files[i].body = withGates(files[i].body, checks)
		}
	}
	if !opts.Force {
		var exist []string
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
				exist = append(exist, f.name)
			}
		}
		if len(exist) > 0 {
			return fmt.Errorf("%s already exist%s; nothing written (use --force to overwrite)",
				strings.Join(exist, ", "), map[bool]string{true: "s", false: ""}[len(exist) == 1])
		}
	}
	var written []string
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.body), 0o644); err != nil {
			return err
		}
		written = append(written, f.name)
		fmt.Fprintf(opts.f.IO.Out, "wrote %s\n", f.name)
		if f.name == "ralph.toml" {
			for _, c := range checks {
				fmt.Fprintf(opts.f.IO.Out, "  gate: %s (%s)\n", c.Command, c.Why)
			}
			// What ralph wrote is what the user asked for; a later
			// change takes effect once they approve it.
			if _, err := opts.f.trustStore().Approve(filepath.Join(dir, f.name), []byte(f.body), time.Now()); err != nil {
				return fmt.Errorf("trust ralph.toml: %w", err)
			}
			fmt.Fprintln(opts.f.IO.Out, "  trusted: after you edit it, run ralph trust (ralph obeys it only at content you approved)")
		}
	}
	if changed, err := state.EnsureGitignore(dir); err != nil {
		return err
	} else if changed {
		fmt.Fprintln(opts.f.IO.Out, "added .ralph/ to .gitignore")
		written = append(written, ".gitignore")
	}
	if err := commitInit(ctx, opts, dir, written); err != nil {
		return err
	}
	_, err = fmt.Fprintf(opts.f.IO.Out, "next: edit %s, then `ralph run --dry-run` to see the first prompt, and `ralph run`\n", files[len(files)-1].name)
	return err
}

// configTemplate is a short ralph.toml: the keys a newcomer sets first,
// commented out at their defaults (init sets its choices over them), and
// where the others are listed. The gates come last, as dotted keys, so
// that no table swallows a key the user adds above them.
func configTemplate() string {
	var b strings.Builder
	b.WriteString("# ralph settings: only what differs from the defaults. `ralph config --all` lists\n")
	b.WriteString("# every key with its value and where it came from; docs/configuration.md says what\n")
	b.WriteString("# each does. Precedence: defaults < ~/.config/ralph/config.toml < this file\n")
	b.WriteString("# < RALPH_<KEY> environment variables < command-line flags.\n\n")
	for _, k := range config.Keys() {
		switch k.Key {
		case "tasks", "agent", "model", "prompt", "guard", "review.when":
			fmt.Fprintf(&b, "# %s\n# %s = %s\n\n", k.Doc, k.Key, k.Default)
		}
	}
	b.WriteString("# gates.commands = []\n")
	return b.String()
}

// reviewCostNote is what init says above review.when: the reviewer auto
// brings in is paid for.
const reviewCostNote = "# With no gate that can reject a task (none above, or all advisory under\n" +
	"# --allow-failing-gates), auto has a reviewer check each done claim: one more agent\n" +
	"# run per claim, its tokens and cost counted in the task's receipt and against --budget.\n" +
	"# off leaves such a run to the agent's word; task reviews every claim whatever the gates.\n"

// withGates writes the project's checks into the config template as its
// gates, where the template has gates.commands commented out.
func withGates(cfg string, checks []gate.Check) string {
	const line = "# gates.commands = []"
	return strings.Replace(cfg, line, gatesBlock(checks), 1)
}

// initFile is one file `ralph init` writes.
type initFile struct{ name, body string }

// initFiles are the files `ralph init --format F` writes, the plan last.
func initFiles(format string) ([]initFile, error) {
	name, err := task.FormatName(format)
	if err != nil {
		return nil, usageError(fmt.Errorf("--format: %w", err))
	}
	// A new project starts with the tamper guard that rejects: a task
	// whose diff weakens the checks is not done; and with a reviewer for
	// the run that has no gate (the default), said where the user sees
	// what it costs. The line stays a comment: a [review] table added
	// later would clash with a dotted review.when key.
	cfg := setConfigKey(configTemplate(), "guard", "strict")
	cfg = strings.Replace(cfg, "\n# review.when = ", "\n"+reviewCostNote+"# review.when = ", 1)
	switch name {
	case task.FormatPRD:
		return []initFile{
			{"ralph.toml", setConfigKey(cfg, "prompt", promptFileName)},
			{promptFileName, prompt.Default("runner")},
			{"prd.json", examplePRD},
		}, nil
	case task.FormatTasksJSON:
		// ral's scaffold-json: the task list, the project's details, the
		// agents' log, and a prompt that points at them.
		tasks, err := task.Encode(name, examplePlan(true))
		if err != nil {
			return nil, err
		}
		return []initFile{
			{"ralph.toml", setConfigKey(cfg, "prompt", "prompt.md")},
			{"prompt.md", ralPrompt},
			{"plan.md", ralPlanDetails},
			{"activity.md", ralActivity},
			{"tasks.json", string(tasks)},
		}, nil
	}
	plan, err := task.Encode(name, examplePlan(name != task.FormatHeadingPlan))
	if err != nil {
		return nil, err
	}
	file := task.DefaultFile(name)
	if !discovered(file) {
		cfg = setConfigKey(cfg, "tasks", file)
	}
	return []initFile{
		{"ralph.toml", setConfigKey(cfg, "prompt", promptFileName)},
		{promptFileName, prompt.Default("runner")},
		{file, string(plan)},
	}, nil
}

// discovered reports whether ralph finds a plan of that name without the
// tasks key.
func discovered(name string) bool {
	switch name {
	case "prd.json", "tasks.json", "progress.md", "IMPLEMENTATION_PLAN.md", "fix_plan.md":
		return true
	}
	return false
}

// setConfigKey turns the commented-out default of key in the config
// template into a setting; without one, the setting goes first.
func setConfigKey(cfg, key, value string) string {
	line := fmt.Sprintf("%s = %q", key, value)
	lines := strings.Split(cfg, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "# "+key+" = ") {
			lines[i] = line
			return strings.Join(lines, "\n")
		}
	}
	head, rest, _ := strings.Cut(cfg, "\n\n")
	return head + "\n\n" + line + "\n\n" + rest
}

// examplePlan is the greeter example of prd.json in other formats: with
// ids by position where the format knows tasks by position.
func examplePlan(positional bool) *task.Plan {
	id1, id2 := "US-001", "US-002"
	if positional {
		id1, id2 = "1", "2"
	}
	return &task.Plan{
		Name:        "example",
		Description: "An example plan: replace these tasks with your own.",
		Tasks: []task.Task{
			{ID: id1, Title: "Add a greeting script", Description: "As a user, I want hello.sh to print a greeting.",
				Criteria: []string{"hello.sh prints 'hello, world'", "hello.sh is executable"}, Priority: 1, Status: task.StatusOpen, Category: "setup"},
			{ID: id2, Title: "Greet by name", Description: "As a user, I want hello.sh NAME to greet NAME.",
				Criteria: []string{"hello.sh Ada prints 'hello, Ada'", "without an argument it still prints 'hello, world'"},
				Priority: 2, DependsOn: []string{id1}, Status: task.StatusOpen, Category: "feature"},
		},
	}
}

// ralPrompt is prompt.md of the tasks workflow: ral's prompt, as a ralph
// template that names the one task (ral inserted it at a placeholder).
const ralPrompt = `@plan.md @activity.md

## Instructions

1. Read activity.md to understand the current state and what was recently accomplished.
2. Study plan.md for the project's context and details.
3. Work on exactly ONE task, the one below: complete all its steps. Important: ONLY WORK ON THIS TASK.
4. Verify the task is working: run the tests and/or the program.
5. Append a dated entry to activity.md describing what you changed and how you verified it.

IMPORTANT: Do NOT edit tasks.json. ralph marks the task done once it has checked your work.

## Current Task

**Task {{.Task.ID}}: {{.Task.Title}}**
{{- with .Task.Description}}

{{.}}
{{- end}}
{{- with .Task.Criteria}}

**Steps:**
{{- range .}}
- {{.}}
{{- end}}
{{- end}}
{{- with .Attempts}}

## Earlier Attempts at This Task
{{- range .}}

- Iteration {{.Iteration}}: {{.Outcome}}{{with .Error}}: {{.}}{{end}}
{{- end}}
{{- end}}

## Activity Log

After completing the task, append a dated progress entry to activity.md describing what you changed, and the result of verifying the task is working.

If any problems or mistakes are discovered, append a dated entry to activity.md describing what happened, and what should be avoided in the future.

Make note of any dependencies that were installed, and why.

## Dependencies

Reduce dependencies when possible. Use only well known dependencies.

## Completion

Output <promise>TASK_DONE</promise> (ral's <promise>success</promise> works too) ONLY when:
- All steps of the current task are complete
- The implementation has been tested and verified to work
- The activity log has been updated

If you cannot finish the task, end your reply with <promise>TASK_FAILED</promise> and a one-line reason.
`

// ralPlanDetails is plan.md of the tasks workflow: the project's details;
// the tasks live in tasks.json.
const ralPlanDetails = `# Project Plan

## Project Overview

[Describe the project: what it is, who it is for, and its constraints. The
tasks are in tasks.json.]

## Technical Details

[Languages, libraries, layout, and how the project is built and tested.]

## Success Criteria

- [Describe what done looks like for the whole project.]
`

// ralActivity is activity.md of the tasks workflow: the agents' log.
const ralActivity = `# Project Build - Activity Log

## Current Status
**Tasks Completed:** 0
**Current Task:** Ready to begin

---

## Session Log

Add dated entries here as you complete tasks. Include:
- Task name and description
- Changes made
- Testing and verification results
- Dependencies installed and why
- Any problems encountered and lessons learned
`

// commitInit commits the files init wrote, apart from any work: with
// --commit, or when the user says yes on a terminal; otherwise it says
// how. Outside a git repository there is nothing to commit.
func commitInit(ctx context.Context, opts *initOptions, dir string, files []string) error {
	g, err := vcs.Open(ctx, dir, opts.f.Environ())
	if err != nil {
		return nil // not a repository, or no git: nothing to commit
	}
	w := opts.f.IO.Out
	paths := make([]string, len(files))
	for i, f := range files {
		rel, err := filepath.Rel(g.Root, filepath.Join(dir, f))
		if err != nil {
			return err
		}
		paths[i] = filepath.ToSlash(rel)
	}
	commit := opts.Commit
	if !commit && opts.f.IO.TTY && stdinTerminal(opts.f.IO.In) {
		fmt.Fprint(w, "commit these files now, apart from any work? [y/N] ")
		line, _ := bufio.NewReader(opts.f.IO.In).ReadString('\n')
		commit = strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes")
	}
	if !commit {
		_, err := fmt.Fprintf(w, "to commit them apart from the work: git add %s && git commit -m 'ralph: setup'\n"+
			"  (left uncommitted, the first run commits them alone, before any task)\n", strings.Join(paths, " "))
		return err
	}
	hash, err := g.CommitFiles(ctx, "ralph: setup ("+strings.Join(paths, ", ")+")", paths)
	if err != nil {
		return fmt.Errorf("committing ralph's setup files: %w", err)
	}
	if hash != "" {
		_, err = fmt.Fprintf(w, "committed %s (%s)\n", strings.Join(paths, ", "), hash[:min(7, len(hash))])
	}
	return err
}

// stdinTerminal reports whether in is a terminal someone can answer on.
func stdinTerminal(in io.Reader) bool {
	f, ok := in.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
