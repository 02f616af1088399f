package scaffold

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ralph-loop/ralph/internal/gate"
)

// tomlList is a TOML array of strings on one line.
func tomlList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// GatesSnippet is what turns commands on in ralph.toml.
func GatesSnippet(commands []string) string {
	return "gates.commands = " + tomlList(commands)
}

// gatesBlock is what `ralph init` writes in place of the commented-out
// gates.commands: the checks it found, one per line with where it found
// it, under a comment that says what they do.
func gatesBlock(checks []gate.Check) string {
	if len(checks) == 0 {
		return "# ralph init found no checks (tests, linters) in this project: add yours, or only\n" +
			"# a reviewer (review.when below) checks a task.\n# gates.commands = []"
	}
	var b strings.Builder
	b.WriteString("# ralph init found these checks in the project (each line says where): a task is\n" +
		"# accepted only once they pass. Before the first agent call of a run they run once on\n" +
		"# the starting tree, and one that already fails stops the run (fix it, or run with\n" +
		"# --allow-failing-gates to make it advisory). Edit or remove them as you see fit.\n")
	b.WriteString("gates.commands = [\n")
	width := 0
	for _, c := range checks {
		width = max(width, len(strconv.Quote(c.Command)))
	}
	for _, c := range checks {
		fmt.Fprintf(&b, "  %-*s # %s\n", width+1, strconv.Quote(c.Command)+",", c.Why)
	}
	b.WriteString("]")
	return b.String()
}
