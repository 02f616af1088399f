// Package scaffold is what ralph init writes into a new project: the
// configuration with its comments, the prompt file and an example plan in
// each format, and ralph's own setup files a run recognises as such.
package scaffold

import (
	"fmt"
	"strings"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/gate"
	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/task"
)

// ExamplePRD is the example plan ralph init writes as prd.json.
const ExamplePRD = `{
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

// PromptFileName is the prompt template init writes for the user to edit.
const PromptFileName = "ralph-prompt.md"

// ConfigTemplate is a short ralph.toml: the keys a newcomer sets first,
// commented out at their defaults (init sets its choices over them), and
// where the others are listed. The gates come last, as dotted keys, so
// that no table swallows a key the user adds above them.
func ConfigTemplate() string {
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

// WithGates writes the project's checks into the config template as its
// gates, where the template has gates.commands commented out.
func WithGates(cfg string, checks []gate.Check) string {
	const line = "# gates.commands = []"
	return strings.Replace(cfg, line, gatesBlock(checks), 1)
}

// File is one file `ralph init` writes.
type File struct{ Name, Body string }

// Files are the files `ralph init --format F` writes, the plan last.
func Files(format string) ([]File, error) {
	name, err := task.FormatName(format)
	if err != nil {
		return nil, fmt.Errorf("--format: %w", err)
	}
	// A new project starts with the tamper guard that rejects: a task
	// whose diff weakens the checks is not done; and with a reviewer for
	// the run that has no gate (the default), said where the user sees
	// what it costs. The line stays a comment: a [review] table added
	// later would clash with a dotted review.when key.
	cfg := SetConfigKey(ConfigTemplate(), "guard", "strict")
	cfg = strings.Replace(cfg, "\n# review.when = ", "\n"+reviewCostNote+"# review.when = ", 1)
	switch name {
	case task.FormatPRD:
		return []File{
			{"ralph.toml", SetConfigKey(cfg, "prompt", PromptFileName)},
			{PromptFileName, prompt.Default("runner")},
			{"prd.json", ExamplePRD},
		}, nil
	case task.FormatTasksJSON:
		// ral's scaffold-json: the task list, the project's details, the
		// agents' log, and a prompt that points at them.
		tasks, err := task.Encode(name, ExamplePlan(true))
		if err != nil {
			return nil, err
		}
		return []File{
			{"ralph.toml", SetConfigKey(cfg, "prompt", "prompt.md")},
			{"prompt.md", ralPrompt},
			{"plan.md", ralPlanDetails},
			{"activity.md", ralActivity},
			{"tasks.json", string(tasks)},
		}, nil
	}
	plan, err := task.Encode(name, ExamplePlan(name != task.FormatHeadingPlan))
	if err != nil {
		return nil, err
	}
	file := task.DefaultFile(name)
	if !discovered(file) {
		cfg = SetConfigKey(cfg, "tasks", file)
	}
	return []File{
		{"ralph.toml", SetConfigKey(cfg, "prompt", PromptFileName)},
		{PromptFileName, prompt.Default("runner")},
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

// SetConfigKey turns the commented-out default of key in the config
// template into a setting; without one, the setting goes first.
func SetConfigKey(cfg, key, value string) string {
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

// ExamplePlan is the greeter example of prd.json in other formats: with
// ids by position where the format knows tasks by position.
func ExamplePlan(positional bool) *task.Plan {
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
