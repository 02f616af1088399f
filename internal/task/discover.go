package task

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// planNames are the plan files Discover looks for, in order: the formats of
// snarktank/ralph and ralph-tui, ral, rslph/portableralph, and the markdown
// checklists of the original Ralph technique.
var planNames = []string{"prd.json", "tasks.json", "progress.md", "IMPLEMENTATION_PLAN.md", "fix_plan.md"}

// Discover returns the path of the first plan file that exists in dir, in the
// order prd.json, tasks.json, progress.md, IMPLEMENTATION_PLAN.md,
// fix_plan.md. When there is none, the error wraps ErrNoPlan and lists them.
// It does not check that the file parses; Load does.
func Discover(dir string) (string, error) {
	for _, name := range planNames {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		switch {
		case err == nil && !info.IsDir():
			return path, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return "", err
		}
	}
	return "", fmt.Errorf("%w in %s: looked for %s; name the plan file (ralph run PLAN), or start one: ralph init writes an example plan (ralph plan has an agent write one)",
		ErrNoPlan, dir, strings.Join(planNames, ", "))
}
