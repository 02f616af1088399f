package prompt

import (
	"strings"
	"text/template"
)

// PlanData is what the planning prompt (`ralph plan`) is rendered with;
// see the package doc for each field.
type PlanData struct {
	// Spec is the specification file to plan from, Idea the goal in the
	// user's words; one of them is set.
	Spec string
	Idea string
	// PlanFile is where the agent writes the plan, Format its format's
	// name, Example an example plan in that format, and OpenRule says how
	// that format marks a task open ("passes": false, "- [ ]").
	PlanFile string
	Format   string
	Example  string
	OpenRule string
	// Exists says PlanFile is there already: the agent revises it.
	Exists bool
	// Problems are what was wrong with the plan the agent wrote in the
	// previous round; Round counts from 1, MaxRounds bounds it.
	Problems  []string
	Round     int
	MaxRounds int
}

// PlanTemplateName is the name the planning template reports errors under.
const PlanTemplateName = "plan.md.tmpl"

// PlanTemplate returns the embedded planning template.
func PlanTemplate() string {
	b, err := templates.ReadFile("templates/" + PlanTemplateName)
	if err != nil {
		panic("prompt: embedded template missing: " + err.Error()) // a build defect
	}
	return string(b)
}

// RenderPlan renders the planning prompt. It never trims: the spec is a
// file the agent reads, and an idea is short.
func RenderPlan(d PlanData) (string, error) {
	return renderWith(PlanTemplateName, PlanTemplate(), d)
}

// renderWith executes a template with any data, with the functions
// Render's templates have.
func renderWith(name, tmpl string, data any) (string, error) {
	t, err := template.New(name).Funcs(funcMap()).Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", templateError(name, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", templateError(name, err)
	}
	return b.String(), nil
}
