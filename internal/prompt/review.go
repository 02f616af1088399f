package prompt

import (
	"strings"
	"text/template"
)

// ReviewData is what the review template renders: the reviewer of one
// task's claim (Scope "task"), or one of the end-of-run reviewers, each
// with a focus (Scope "run").
//
//	.Scope      "task" or "run"
//	.Focus      the end-of-run reviewer's focus ("tests", "security"), or ""
//	.Tasks      the tasks under review: the claimed one, or the run's done tasks
//	.Plan       the plan (.Path, .Name, .Description)
//	.Diff       the diff, already bounded; "" when there is none
//	.DiffNote   what was left out of the diff, or why there is none
//	.Gates      the gates' results, one line each, or ""
//	.Guard      the tamper guard's findings, one a line, or ""
type ReviewData struct {
	Scope    string
	Focus    string
	Tasks    []Task
	Plan     Plan
	Diff     string
	DiffNote string
	Gates    string
	Guard    string
}

// The review scopes.
const (
	ReviewScopeTask = "task"
	ReviewScopeRun  = "run"
)

// ReviewName is the name the embedded review template reports errors
// under.
const ReviewName = "review.md.tmpl"

// DefaultReview returns the embedded review template.
func DefaultReview() string {
	b, err := templates.ReadFile("templates/" + ReviewName)
	if err != nil {
		panic("prompt: embedded template missing: " + err.Error()) // a build defect
	}
	return string(b)
}

// RenderReview renders a review template, called name in errors (the
// embedded one when tmpl is ""). The caller bounds the diff: the rest is
// small.
func RenderReview(name, tmpl string, d ReviewData) (string, error) {
	if tmpl == "" {
		name, tmpl = ReviewName, DefaultReview()
	}
	if d.Scope == "" {
		d.Scope = ReviewScopeTask
	}
	t, err := template.New(name).Funcs(funcMap()).Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", templateError(name, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", templateError(name, err)
	}
	return b.String(), nil
}
