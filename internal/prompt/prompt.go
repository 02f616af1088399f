package prompt

import (
	"embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

const (
	// DefaultMaxBytes is the prompt budget when Data.MaxBytes is 0.
	DefaultMaxBytes = 64 << 10
	// MaxAttemptOutput bounds each Attempt.Output, whatever the caller
	// passes; its tail is kept, where the failure usually shows.
	MaxAttemptOutput = 4 << 10
	// MaxAttemptError bounds each Attempt.Error; its beginning is kept.
	MaxAttemptError = 1 << 10
)

// trimmed marks where text was cut.
const trimmed = "[… earlier text trimmed …]\n"

//go:embed templates/*.tmpl
var templates embed.FS

// Data is everything a prompt template can use; see the package doc for
// each variable.
type Data struct {
	Task             Task
	Plan             Plan
	Ownership        string // task.Ownership's name: templates see plain strings
	ProgressFile     string
	CodebasePatterns string
	RecentProgress   string
	Attempts         []Attempt
	Answers          []Answer
	Iteration        int
	MaxIterations    int

	// MaxBytes is the prompt budget in bytes: 0 means DefaultMaxBytes, a
	// negative value no limit. Not meant for templates.
	MaxBytes int
}

// Task is the task the iteration works on.
type Task struct {
	ID          string
	Title       string
	Description string
	Criteria    []string
	Notes       string
	Priority    int
	DependsOn   []string
}

// Plan is the context of the whole plan.
type Plan struct {
	Path        string
	Name        string
	Description string
	Branch      string
	Total       int
	Done        int
	Open        int
}

// Attempt is an earlier iteration on the same task that did not finish it.
type Attempt struct {
	Iteration int
	Outcome   string // a state.Outcome's name
	Error     string
	Output    string
}

// Answer is a question the agent asked about this task
// (<promise>QUESTION</promise>) and a human's answer to it.
type Answer struct {
	Question string
	Answer   string
}

// Default returns the embedded template for an ownership mode:
// "agent" gets snarktank's flow (the agent picks and ticks tasks), anything
// else the runner template (one named task, markers TASK_DONE/TASK_FAILED).
func Default(ownership task.Ownership) string {
	name := "templates/runner.md.tmpl"
	if ownership == task.OwnerAgent {
		name = "templates/agent.md.tmpl"
	}
	b, err := templates.ReadFile(name)
	if err != nil {
		panic("prompt: embedded template missing: " + err.Error()) // a build defect
	}
	return string(b)
}

// DefaultName returns the name under which Default(ownership) reports
// errors, for Render.
func DefaultName(ownership task.Ownership) string {
	if ownership == task.OwnerAgent {
		return "agent.md.tmpl"
	}
	return "runner.md.tmpl"
}

// RenderFile renders a user's prompt file called name: text without "{{"
// is returned verbatim (a snarktank prompt.md or CLAUDE.md must work
// unchanged), anything else is rendered as a template with Render.
func RenderFile(name, text string, d Data) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	return Render(name, text, d)
}

// Render executes the template tmpl, called name in errors, with d, and
// keeps the result under the budget (see the package doc). Errors are
// *TemplateError values that read "name:line: message".
func Render(name, tmpl string, d Data) (string, error) {
	t, err := Parse(name, tmpl)
	if err != nil {
		return "", err
	}
	return t.Render(d)
}

// Template is a parsed prompt template. Parsing one costs more than
// rendering it, so a runner that renders the same template every iteration
// parses it once. It is safe for concurrent use.
type Template struct {
	name string
	t    *template.Template
}

// Parse parses the template tmpl, called name in errors, which are
// *TemplateError values.
func Parse(name, tmpl string) (*Template, error) {
	t, err := template.New(name).Funcs(funcMap()).Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return nil, templateError(name, err)
	}
	return &Template{name: name, t: t}, nil
}

// Render executes the template with d, as the function Render does.
func (tp *Template) Render(d Data) (string, error) {
	t, name := tp.t, tp.name
	d = normalize(d)
	out, err := execute(t, name, d)
	if err != nil {
		return "", err
	}
	budget := d.MaxBytes
	if budget == 0 {
		budget = DefaultMaxBytes
	}
	if budget < 0 {
		return out, nil
	}
	// Cut what may be cut, in order, re-rendering after each step. Each
	// step shortens one field (or empties it when shortening did not help),
	// so the loop ends.
	for len(out) > budget {
		field := d.nextTrimmable()
		if field == nil {
			break // only the task and fixed text are left: send it whole
		}
		over := len(out) - budget
		*field = trimFront(*field, len(*field)-over)
		next, err := execute(t, name, d)
		if err != nil {
			return "", err
		}
		if len(next) >= len(out) {
			*field = "" // the template does not show it in full: drop it
			if next, err = execute(t, name, d); err != nil {
				return "", err
			}
		}
		out = next
	}
	return out, nil
}

// nextTrimmable returns the field the budget cuts next: RecentProgress,
// then the outputs of the attempts, oldest first.
func (d *Data) nextTrimmable() *string {
	if d.RecentProgress != "" {
		return &d.RecentProgress
	}
	for i := range d.Attempts {
		if d.Attempts[i].Output != "" {
			return &d.Attempts[i].Output
		}
	}
	return nil
}

// normalize fills defaults and bounds the attempts, on a copy.
func normalize(d Data) Data {
	if d.ProgressFile == "" {
		d.ProgressFile = state.ProgressFile
	}
	if d.Ownership == "" {
		d.Ownership = string(task.OwnerRunner)
	}
	if d.Attempts != nil {
		as := make([]Attempt, len(d.Attempts))
		for i, a := range d.Attempts {
			a.Output = trimFront(strings.TrimSpace(a.Output), MaxAttemptOutput)
			a.Error = strings.TrimSpace(trimBack(a.Error, MaxAttemptError))
			as[i] = a
		}
		d.Attempts = as
	}
	return d
}

func execute(t *template.Template, name string, d Data) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", templateError(name, err)
	}
	return b.String(), nil
}

// funcMap is what templates may call besides the built-ins.
func funcMap() template.FuncMap {
	return template.FuncMap{
		"join":    strings.Join,
		"trim":    strings.TrimSpace,
		"fence":   fence,
		"explain": explain,
	}
}

// explain says in words what an iteration outcome (DESIGN §1) means, for
// an agent reading about an earlier attempt; "" for an unknown one.
func explain(outcome string) string {
	switch outcome {
	case "no_marker":
		return "the agent ended without a completion signal"
	case "task_failed":
		return "the agent gave up on the task"
	case "premature_claim":
		return "the agent claimed the plan complete while tasks were still open"
	case "gate_failed":
		return "the agent claimed done but ralph's quality checks failed"
	case "sandbox_failed":
		return "ralph's quality checks failed because the sandbox refused them something (not the agent's doing)"
	case "guard_rejected":
		return "the agent claimed done but its changes weaken the project's checks"
	case "review_rejected":
		return "the agent claimed done but the reviewer asked for changes"
	case "review_failed":
		return "the agent claimed done but no reviewer gave a verdict"
	case "commit_refused":
		return "the agent claimed done and its checks passed, but git refused to commit files it left in the tree"
	case "timeout":
		return "the iteration ran out of time and was stopped"
	case "idle_timeout":
		return "the agent produced no output for too long and was stopped"
	case "fatal_error", "transient_error":
		return "the agent failed with an error"
	case "interrupted":
		return "the run was interrupted"
	}
	return ""
}

// fence wraps text in a fenced code block whose fence is longer than any
// run of backticks in text.
func fence(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + "\n" + strings.TrimRight(text, "\n") + "\n" + f
}

// trimFront returns at most keep bytes of s, keeping its end: it cuts at a
// line start when one is near, and marks the cut.
func trimFront(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	room := keep - len(trimmed)
	if room <= 0 {
		return ""
	}
	i := len(s) - room
	if nl := strings.IndexByte(s[i:], '\n'); nl >= 0 && nl < room/2 {
		i += nl + 1
	}
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return trimmed + s[i:]
}

// trimBack returns at most keep bytes of s, keeping its start, cut on a
// rune boundary and marked with "…".
func trimBack(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	const ellipsis = "…"
	i := max(keep-len(ellipsis), 0)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if i == 0 {
		return ""
	}
	return s[:i] + ellipsis
}

// TemplateError is a prompt template that does not parse or execute.
type TemplateError struct {
	Name string // the template's name, usually its file name
	Line int    // 1-based; 0 when unknown
	Msg  string
	Err  error // the text/template error
}

func (e *TemplateError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Name, e.Msg)
}

func (e *TemplateError) Unwrap() error { return e.Err }

// templateError turns text/template's "template: NAME:LINE[:COL]: MSG" into a
// TemplateError; executing errors lose their `executing "NAME"` noise.
func templateError(name string, err error) error {
	te := &TemplateError{Name: name, Msg: err.Error(), Err: err}
	rest, ok := strings.CutPrefix(err.Error(), "template: "+name+":")
	if !ok {
		te.Msg = strings.TrimPrefix(te.Msg, "template: ")
		return te
	}
	num, rest, _ := strings.Cut(rest, ":")
	line, cerr := strconv.Atoi(num)
	if cerr != nil {
		te.Msg = strings.TrimSpace(num + ":" + rest)
		return te
	}
	te.Line = line
	if col, after, ok := strings.Cut(rest, ":"); ok {
		if _, err := strconv.Atoi(col); err == nil {
			rest = after // drop the column
		}
	}
	rest = strings.TrimSpace(rest)
	rest = strings.TrimPrefix(rest, `executing "`+name+`" `)
	te.Msg = rest
	if rest == "unexpected EOF" {
		te.Msg += " (an {{if}}, {{range}}, {{with}} or {{block}} lacks its {{end}})"
	}
	return te
}
