// Package prompt builds the text each iteration sends to the agent: the
// embedded default templates for both ownership modes, the rendering of a
// user's own prompt file, the Codebase Patterns and recent entries read from
// progress.txt, and the size budget that keeps the prompt bounded. It also
// holds the planning prompt of `ralph plan` (RenderPlan), the section that
// names a plan's companion files (PlanContext), and the rewriting of @file
// references for agents that do not resolve them (ResolveFileRefs).
//
// It reads files it is given and renders text; it never runs the agent,
// never edits the plan and does not know the plan formats (package task):
// the loop copies what the templates need into Data.
//
// # User prompt files
//
// A prompt file without "{{" is sent verbatim, so a snarktank prompt.md or
// CLAUDE.md works unchanged. A file containing "{{" is a Go text/template
// (https://pkg.go.dev/text/template) executed with Data; errors name the
// file and line ("prompt.md:3: ..."). The file is the prompt key of
// ralph.toml (per project) or of ~/.config/ralph/config.toml (per user), or
// --prompt; `ralph run --dry-run` prints the rendered result.
//
// # Template variables
//
//	.Task.ID            the task's id ("US-003", "3")
//	.Task.Title         its title
//	.Task.Description   its description (may be empty)
//	.Task.Criteria      acceptance criteria or steps, a list of strings
//	.Task.Notes         notes from the plan (may be empty)
//	.Task.Priority      priority as an integer, 0 when the plan has none
//	.Task.DependsOn     ids of the tasks it depends on, all done already
//	.Plan.Path          the plan file, as given to ralph ("prd.json")
//	.Plan.Name          the project or plan name (may be empty)
//	.Plan.Description   the plan's description (may be empty)
//	.Plan.Branch        the branch the plan names (prd.json branchName)
//	.Plan.Total         number of tasks in the plan
//	.Plan.Done          number of tasks done
//	.Plan.Open          number of tasks not done yet (open, or failed in
//	                    the plan)
//	.Ownership          "runner" (ralph marks tasks done) or "agent" (the
//	                    agent ticks them itself)
//	.ProgressFile       the progress log, "progress.txt" unless configured
//	.CodebasePatterns   the body of its "## Codebase Patterns" section
//	.RecentProgress     its last few entries, oldest first
//	.Attempts           this task's earlier failed attempts, oldest first;
//	                    each has .Iteration, .Outcome (no_marker, timeout,
//	                    gate_failed, ...), .Error and .Output (the tail of
//	                    the agent's output, at most MaxAttemptOutput bytes)
//	.Answers            the questions earlier iterations asked about this
//	                    task (<promise>QUESTION</promise>) and the answers
//	                    a human gave, oldest first; each has .Question and
//	                    .Answer. Kept until the task is done
//	.Iteration          this iteration's number, from 1
//	.MaxIterations      the run's iteration limit, 0 for none
//
// Functions besides text/template's built-ins:
//
//	join LIST SEP   strings.Join
//	trim TEXT       strings.TrimSpace
//	fence TEXT      TEXT in a ``` block whose fence is longer than any
//	                backtick run inside it, so output cannot break out
//	explain OUTCOME an outcome such as gate_failed in words, "" if unknown
//
// # Planning template variables
//
// `ralph plan` renders the embedded plan.md.tmpl with PlanData:
//
//	.Spec        the specification file to plan from ("spec.md"), or ""
//	.Idea        the goal in the user's words, or "" (one of the two is set)
//	.PlanFile    where the agent writes the plan ("prd.json")
//	.Format      the plan's format name ("prd.json", "checklist", ...)
//	.Example     an example plan in that format, written by package task
//	.OpenRule    how the format marks a task open (`"passes": false.`)
//	.Exists      PlanFile exists already: the agent revises it, keeping
//	             the tasks that are done
//	.Problems    what ralph found wrong with the plan of the last round,
//	             one line each ("prd.json:4: userStories[0].passes: ...");
//	             empty in the first round
//	.Round       this round, from 1
//	.MaxRounds   the last round (--max-rounds)
//
// # Plan context
//
// Some plans come with files the agent should read: ral keeps the
// project's details in plan.md and the agents' log in activity.md next to
// tasks.json. PlanContext renders a "## Plan Context" section naming them,
// which the loop appends to prompts rendered from the default templates; a
// user's own prompt names them itself, as ral's "@plan.md @activity.md"
// first line does.
//
// # @file references
//
// Claude Code reads the file behind "@plan.md" in a prompt; other agent
// CLIs see the text. ResolveFileRefs turns @path.md and @path.json
// references into plain paths (optionally under a directory) and leaves
// everything else alone: e-mail addresses, @scope/package names, mentions
// and other extensions.
//
// # Size budget
//
// Render keeps the prompt under Data.MaxBytes (DefaultMaxBytes when 0): it
// trims RecentProgress first (oldest text goes), then the attempts' outputs
// (oldest attempt first, keeping each output's tail). The task, the plan
// context and the Codebase Patterns are never cut; if the prompt is still
// over budget it is returned as it is.
package prompt
