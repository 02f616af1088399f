package prompt

import (
	"fmt"
	"strings"
)

// ContextFile is a file that goes with the plan, as PlanContext lists it.
type ContextFile struct {
	Path  string // as the agent should open it, relative to its directory
	About string // what it is and what to do with it
}

// PlanContext is a prompt section naming the files that go with the plan
// (ral's plan.md and activity.md next to a tasks.json), to be appended to a
// prompt rendered from the default templates, which do not know them; ""
// when there are none. A user's own prompt names them itself (ral's starts
// with "@plan.md @activity.md").
func PlanContext(files []ContextFile) string {
	if len(files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n## Plan Context\n\nRead these files, which go with the plan, before you start:\n")
	for _, f := range files {
		fmt.Fprintf(&b, "- `%s`: %s\n", f.Path, f.About)
	}
	return b.String()
}
