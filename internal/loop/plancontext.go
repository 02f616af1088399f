package loop

import (
	"strings"

	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/task"
)

// withPlanContext appends to a prompt rendered from the default template
// the files that go with the plan (ral's plan.md and activity.md next to a
// tasks.json), which the template does not know.
func withPlanContext(dir, text string, p *task.Plan) string {
	var files []prompt.ContextFile
	for _, f := range task.ContextFiles(p) {
		files = append(files, prompt.ContextFile{Path: relPath(dir, f.Path), About: f.About})
	}
	if len(files) == 0 {
		return text
	}
	return strings.TrimRight(text, "\n") + prompt.PlanContext(files)
}
