package session

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralph-loop/ralph/internal/projectfs"
	"github.com/ralph-loop/ralph/internal/words"
)

// A plan that is a symbolic link out of the project (a plan shared
// between projects) is followed for a whole run (task.LoadIn), but the
// agent can make such a link too, in one run, for the next to mark tasks
// in another project's plan. So a link out is obeyed as a configuration
// file is: only once the user approved where it leads (ralph trust PLAN),
// or vouched for this invocation (--trust).

// PlanLinkOut says where the plan at path leads when it is a symbolic
// link out of the project in dir: "" when it is not one.
func PlanLinkOut(dir, path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return ""
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "" // loading the plan says what is wrong
	}
	root := projectfs.New(dir)
	if r, err := filepath.EvalSymlinks(root.Dir()); err == nil {
		root = projectfs.New(r)
	}
	if root.Contains(target) {
		return ""
	}
	return target
}

// LinkContent is what an approval of a plan link records: where it leads.
func LinkContent(target string) []byte { return []byte("a link to " + target + "\n") }

// approvePlanLink refuses a plan that links out of the project to a place
// the user has not approved.
func (f *Host) approvePlanLink(dir, path string) error {
	target := PlanLinkOut(dir, path)
	if target == "" || f.vouched() {
		return nil
	}
	ok, last, err := f.TrustStore().Trusted(path, LinkContent(target))
	if err != nil {
		return fmt.Errorf("reading the trust store: %w", err)
	}
	if ok {
		return nil
	}
	name := words.Path(path)
	before := ""
	if last != nil {
		before = fmt.Sprintf(" (you approved %s)", strings.TrimSpace(last.Content))
	}
	return fmt.Errorf("%s leads out of the project, to %s, which you have not approved%s: ralph would mark tasks "+
		"there, and an agent can make such a link; if you made it, run 'ralph trust %s' (or --trust: use it once)",
		name, target, before, name)
}
