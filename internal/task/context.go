package task

import (
	"os"
	"path/filepath"
)

// ContextFile is a file that goes with a plan and that the agent should
// read before it works on a task.
type ContextFile struct {
	Path  string // next to the plan
	About string // what it is and what to do with it, for the prompt
}

// ContextFiles returns the companion files of a plan that exist: ral's
// plan.md (the project's details; the tasks are in tasks.json) and
// activity.md (the log the agents append to) next to a tasks.json, and the
// activity.md next to a markdown plan with a JSON task list. Other formats
// have none: a progress.md is its own memory.
func ContextFiles(p *Plan) []ContextFile {
	var want []ContextFile
	dir := filepath.Dir(p.Path)
	switch p.Format {
	case FormatTasksJSON:
		want = []ContextFile{
			{filepath.Join(dir, "plan.md"), "the project's details and success criteria (the tasks are in " + filepath.Base(p.Path) + ")"},
			{filepath.Join(dir, "activity.md"), "the activity log: read what was done last, and append a dated entry for your work"},
		}
	case FormatMarkdownJSON:
		want = []ContextFile{
			{filepath.Join(dir, "activity.md"), "the activity log: read what was done last, and append a dated entry for your work"},
		}
	}
	var out []ContextFile
	for _, f := range want {
		if fi, err := os.Stat(f.Path); err == nil && fi.Mode().IsRegular() && f.Path != p.Path {
			out = append(out, f)
		}
	}
	return out
}
