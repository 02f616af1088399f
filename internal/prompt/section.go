package prompt

// taskSection is appended to a user's own prompt file in runner ownership
// when the file is not a template: the file says how to work, this says
// on what, and how to report, which only ralph knows.
const taskSection = `

---
## Your task (from ralph)

Work on exactly one task: **{{.Task.ID}}: {{.Task.Title}}**
{{- with .Task.Description}}

{{.}}
{{- end}}
{{- with .Task.Criteria}}

Acceptance criteria:
{{- range .}}
- {{.}}
{{- end}}
{{- end}}
{{- with .Attempts}}

Earlier attempts at this task failed:
{{- range .}}
- iteration {{.Iteration}}: {{.Outcome}}{{with .Error}}: {{.}}{{end}}
{{- end}}
{{- end}}

Do not edit {{.Plan.Path}}: ralph marks the task done after checking your work.
When the task is done and verified, end your final message with <promise>TASK_DONE</promise>.
If you cannot finish it, end with <promise>TASK_FAILED</promise> followed by a one-line reason.
`

// WithTaskSection renders the user's prompt file for runner ownership: a
// template is rendered as it is; a plain file is kept verbatim and the
// task section is appended.
func WithTaskSection(name, text string, d Data) (string, error) {
	out, err := RenderFile(name, text, d)
	if err != nil || out != text {
		return out, err
	}
	section, err := Render("task-section", taskSection, d)
	if err != nil {
		return "", err
	}
	return text + section, nil
}
