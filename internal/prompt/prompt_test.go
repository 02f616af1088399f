package prompt

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/golden"
	"github.com/ralph-loop/ralph/internal/task"
)

// fullData uses every variable.
func fullData() Data {
	return Data{
		Task: Task{
			ID:          "US-003",
			Title:       "Add priority filter to the task list",
			Description: "As a user, I want to filter tasks by priority so that I can focus on what matters.",
			Criteria: []string{
				"Filter dropdown with All, High, Medium, Low",
				"Filter state persists in the URL",
				"Typecheck passes",
			},
			Notes:     "The list component is in src/components/TaskList.tsx.",
			Priority:  3,
			DependsOn: []string{"US-001", "US-002"},
		},
		Plan: Plan{
			Path:        "prd.json",
			Name:        "TaskApp",
			Description: "Task priority system: add priorities to tasks.",
			Branch:      "ralph/task-priority",
			Total:       5,
			Done:        2,
			Open:        3,
		},
		Ownership:        string(task.OwnerRunner),
		ProgressFile:     "progress.txt",
		CodebasePatterns: "- Use `sql<number>` template for aggregations\n- Migrations use IF NOT EXISTS",
		RecentProgress:   "## 2026-11-21 10:00 - US-002\n- Added the priority column\n- **Learnings for future iterations:**\n  - run `npm run db:push` after schema changes",
		Attempts: []Attempt{
			{Iteration: 4, Outcome: "gate_failed", Error: "npm test: 2 failing", Output: "FAIL src/TaskList.test.tsx\n  ✕ filters by priority\n```\nnested fence\n```"},
			{Iteration: 5, Outcome: "no_marker", Output: "I updated the dropdown."},
		},
		Iteration:     6,
		MaxIterations: 50,
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name+".golden"), got)
}

func TestDefaultTemplatesGolden(t *testing.T) {
	minimal := Data{
		Task: Task{ID: "1", Title: "Create the database schema"},
		Plan: Plan{Path: "IMPLEMENTATION_PLAN.md"},
	}
	agentData := fullData()
	agentData.Ownership = string(task.OwnerAgent)
	tests := []struct {
		name      string
		ownership task.Ownership
		data      Data
	}{
		{"runner", task.OwnerRunner, fullData()},
		{"runner-minimal", task.OwnerRunner, minimal},
		{"agent", task.OwnerAgent, agentData},
		{"agent-minimal", task.OwnerAgent, minimal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(DefaultName(tt.ownership), Default(tt.ownership), tt.data)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.name, got)
		})
	}
}

func TestDefaultTemplatesContract(t *testing.T) {
	t.Parallel()
	d := fullData()
	runner, err := Render("runner", Default(task.OwnerRunner), d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"US-003: Add priority filter", "- Filter state persists in the URL", "The list component is in",
		"Do NOT edit it", "progress.txt", "Codebase Patterns", "quality checks",
		"\n<promise>TASK_DONE</promise>\n", "\n<promise>TASK_FAILED</promise> ", "never both",
		"### Iteration 4: gate_failed", "Error: npm test: 2 failing", "I updated the dropdown.",
	} {
		if !strings.Contains(runner, want) {
			t.Errorf("runner prompt lacks %q", want)
		}
	}
	if strings.Contains(runner, "<promise>COMPLETE</promise>") {
		t.Error("runner prompt asks for COMPLETE: only the runner decides the plan is done")
	}
	d.Ownership = string(task.OwnerAgent)
	agent, err := Render("agent", Default(task.OwnerAgent), d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`prd.json`", "**highest priority**", "passes: true", "\n<promise>COMPLETE</promise>\n", "`ralph/task-priority`"} {
		if !strings.Contains(agent, want) {
			t.Errorf("agent prompt lacks %q", want)
		}
	}
	if strings.Contains(agent, "TASK_DONE") {
		t.Error("agent prompt mentions the runner's TASK_DONE marker")
	}
	if Default("") != Default(task.OwnerRunner) || Default("bogus") != Default(task.OwnerRunner) {
		t.Error("Default of an unknown ownership is not the runner template")
	}
}

func TestRenderFileVerbatim(t *testing.T) {
	t.Parallel()
	// snarktank's prompt.md: no template actions, shell-looking variables.
	text := "# Ralph Agent Instructions\n\nRead the PRD at `prd.json`.\nThread: https://ampcode.com/threads/$AMP_CURRENT_THREAD_ID\n{ \"passes\": true } and } {\n<promise>COMPLETE</promise>\n"
	got, err := RenderFile("prompt.md", text, fullData())
	if err != nil {
		t.Fatal(err)
	}
	if got != text {
		t.Errorf("verbatim file changed:\n%s", cmp.Diff(text, got))
	}
}

func TestRenderFileTemplate(t *testing.T) {
	t.Parallel()
	text := "Task {{.Task.ID}} ({{.Plan.Done}}/{{.Plan.Total}}): {{.Task.Title}}\n" +
		"{{range .Task.Criteria}}* {{.}}\n{{end}}" +
		"deps: {{join .Task.DependsOn \", \"}}; progress: {{.ProgressFile}}\n"
	d := fullData()
	d.ProgressFile = "" // default filled in
	got, err := RenderFile("prompt.md", text, d)
	if err != nil {
		t.Fatal(err)
	}
	want := "Task US-003 (2/5): Add priority filter to the task list\n" +
		"* Filter dropdown with All, High, Medium, Low\n* Filter state persists in the URL\n* Typecheck passes\n" +
		"deps: US-001, US-002; progress: progress.txt\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RenderFile (-want +got):\n%s", diff)
	}
}

func TestRenderErrorsNameLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, want string
		line             int
	}{
		{"unclosed", "line one\nline two\n{{if .Task.ID}}", "prompt.md:3: unexpected EOF (an {{if}}, {{range}}, {{with}} or {{block}} lacks its {{end}})", 3},
		{"bad action", "a\n{{.Task.ID}\n", "prompt.md:2: bad character U+007D '}'", 2},
		{"unknown function", "a\n\n{{nope .Task.ID}}\n", `prompt.md:3: function "nope" not defined`, 3},
		{"unknown field", "a\nb\nc\nd {{.Story.ID}}\n", "prompt.md:4: at <.Story.ID>: can't evaluate field Story in type prompt.Data", 4},
		{"exec error", "{{index .Task.Criteria 9}}", "prompt.md:1: at <index .Task.Criteria 9>: error calling index: index out of range: 9", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := RenderFile("prompt.md", tt.text, fullData())
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\n   want %q", err, tt.want)
			}
			var te *TemplateError
			if !errors.As(err, &te) || te.Line != tt.line || te.Name != "prompt.md" {
				t.Errorf("error %#v is not a *TemplateError at prompt.md:%d", err, tt.line)
			}
		})
	}
}

func TestRenderBudget(t *testing.T) {
	t.Parallel()
	tmpl := "TASK {{.Task.ID}} {{.Task.Description}}\n" +
		"PROGRESS {{.RecentProgress}}\n" +
		"{{range .Attempts}}ATTEMPT {{.Iteration}} {{.Error}} OUT {{.Output}}\n{{end}}"
	d := Data{
		Task:           Task{ID: "T1", Description: strings.Repeat("d", 300)},
		RecentProgress: "old entry\n" + strings.Repeat("p", 500) + "\nnewest line",
		Attempts: []Attempt{
			{Iteration: 1, Error: "first error", Output: strings.Repeat("a", 400) + "\nfirst tail"},
			{Iteration: 2, Error: "second error", Output: strings.Repeat("b", 400) + "\nsecond tail"},
		},
	}
	full, err := Render("t", tmpl, Data{Task: d.Task, RecentProgress: d.RecentProgress, Attempts: d.Attempts, MaxBytes: -1})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("fits", func(t *testing.T) {
		t.Parallel()
		d := d
		d.MaxBytes = len(full)
		got, err := Render("t", tmpl, d)
		if err != nil || got != full {
			t.Errorf("a prompt within budget was changed (err %v)", err)
		}
	})
	t.Run("progress trimmed first", func(t *testing.T) {
		t.Parallel()
		d := d
		d.MaxBytes = len(full) - 200
		got, err := Render("t", tmpl, d)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > d.MaxBytes {
			t.Errorf("len %d > budget %d", len(got), d.MaxBytes)
		}
		for _, want := range []string{strings.Repeat("d", 300), "[… earlier text trimmed …]", "newest line", "first tail", "second tail", strings.Repeat("a", 400)} {
			if !strings.Contains(got, want) {
				t.Errorf("prompt lacks %.40q", want)
			}
		}
		if strings.Contains(got, "old entry") {
			t.Error("the oldest progress survived")
		}
	})
	t.Run("then attempt outputs, oldest first", func(t *testing.T) {
		t.Parallel()
		d := d
		d.MaxBytes = len(full) - 700
		got, err := Render("t", tmpl, d)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > d.MaxBytes {
			t.Errorf("len %d > budget %d", len(got), d.MaxBytes)
		}
		if strings.Contains(got, "newest line") || strings.Contains(got, strings.Repeat("a", 400)) {
			t.Errorf("progress or the oldest output not trimmed:\n%s", got)
		}
		for _, want := range []string{strings.Repeat("d", 300), "first error", "second error", strings.Repeat("b", 400) + "\nsecond tail"} {
			if !strings.Contains(got, want) {
				t.Errorf("prompt lacks %.40q", want)
			}
		}
	})
	t.Run("task never cut", func(t *testing.T) {
		t.Parallel()
		d := d
		d.MaxBytes = 100
		got, err := Render("t", tmpl, d)
		if err != nil {
			t.Fatal(err)
		}
		want := "TASK T1 " + strings.Repeat("d", 300) + "\nPROGRESS \nATTEMPT 1 first error OUT \nATTEMPT 2 second error OUT \n"
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("over-budget prompt (-want +got):\n%s", diff)
		}
	})
	t.Run("caller's attempts untouched", func(t *testing.T) {
		t.Parallel()
		d := d
		d.Attempts = append([]Attempt(nil), d.Attempts...)
		before := append([]Attempt(nil), d.Attempts...)
		d.MaxBytes = 100
		if _, err := Render("t", tmpl, d); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, d.Attempts); diff != "" {
			t.Errorf("Render changed the caller's attempts:\n%s", diff)
		}
	})
}

func TestRenderBoundsAttempts(t *testing.T) {
	t.Parallel()
	d := Data{Attempts: []Attempt{{Iteration: 1, Error: strings.Repeat("e", 5000), Output: "head\n" + strings.Repeat("o", 10000) + "\nTAIL"}}, MaxBytes: -1}
	got, err := Render("t", "{{range .Attempts}}{{.Error}}|{{.Output}}{{end}}", d)
	if err != nil {
		t.Fatal(err)
	}
	errPart, out, _ := strings.Cut(got, "|")
	if len(errPart) > MaxAttemptError || len(out) > MaxAttemptOutput {
		t.Errorf("attempt not bounded: error %d bytes, output %d bytes", len(errPart), len(out))
	}
	if !strings.HasSuffix(out, "\nTAIL") || strings.Contains(out, "head") {
		t.Error("output bound does not keep the tail")
	}
}

func TestFence(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"plain":         "```\nplain\n```",
		"a ``` b\n":     "````\na ``` b\n````",
		"x `````` y":    "```````\nx `````` y\n```````",
		"":              "```\n\n```",
		"single ` tick": "```\nsingle ` tick\n```",
	}
	for in, want := range tests {
		if got := fence(in); got != want {
			t.Errorf("fence(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAnswersInBothDefaultTemplates(t *testing.T) {
	t.Parallel()
	for _, own := range []task.Ownership{task.OwnerRunner, task.OwnerAgent} {
		tp, err := Parse(DefaultName(own), Default(own))
		if err != nil {
			t.Fatal(err)
		}
		d := Data{Task: Task{ID: "US-002", Title: "Greet"}, ProgressFile: "progress.txt",
			Answers: []Answer{{Question: "hello or hi?", Answer: " hi "}}}
		out, err := tp.Render(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"## Answers to Your Questions", "Question: hello or hi?", "Answer: hi\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s prompt lacks %q:\n%s", own, want, out)
			}
		}
	}
}
