package task

import (
	"regexp"
	"strings"
)

// Every markdown plan may carry, besides its tasks, the commands of a
// `## Validation Commands` section (the shape of ralphex plans), which ralph
// runs as quality gates: the markdown readers put them in Plan.Validation.

// validationHeading matches the section's heading at any level.
var validationHeading = regexp.MustCompile(`(?i)^#{1,6}\s+validation commands\s*$`)

// validationCommands reads the commands of a "Validation Commands"
// section: the lines of its fenced code blocks, and list items that are
// one inline code span (- `go test ./...`). The section ends at the next
// heading of the same or a higher level.
func validationCommands(doc string) []string {
	var cmds []string
	in, fenced := false, false
	level := 0
	for line := range strings.SplitSeq(strings.ReplaceAll(doc, "\r\n", "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		if !fenced && strings.HasPrefix(trimmed, "#") {
			n := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
			switch {
			case validationHeading.MatchString(trimmed):
				in, level = true, n
				continue
			case in && n <= level:
				in = false
			}
		}
		if !in {
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
			continue
		}
		switch {
		case fenced:
			if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				cmds = append(cmds, trimmed)
			}
		case strings.HasPrefix(trimmed, "- `") || strings.HasPrefix(trimmed, "* `"):
			item := strings.TrimSpace(trimmed[2:])
			if strings.Count(item, "`") == 2 && strings.HasSuffix(item, "`") {
				cmds = append(cmds, strings.Trim(item, "`"))
			}
		}
	}
	return cmds
}
