package trust

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the work of a diff (lines before × lines after):
// configuration files are short, and a longer one is shown whole.
const maxDiffCells = 4 << 20

// diffContext is the unchanged lines shown around a change.
const diffContext = 3

// Diff is a line diff of before and after, in the unified format's
// spirit: "-" before only, "+" after only, " " both, at most diffContext
// unchanged lines around each change, "@@ line N @@" where a part
// starts. Empty when they are the same.
func Diff(before, after string) string {
	a, b := lines(before), lines(after)
	if before == after {
		return ""
	}
	ops := diffLines(a, b)
	// Changes, and the context within diffContext lines of one.
	show := make([]bool, len(ops))
	for i, o := range ops {
		if o.kind != ' ' {
			for j := max(0, i-diffContext); j <= min(len(ops)-1, i+diffContext); j++ {
				show[j] = true
			}
		}
	}
	var out strings.Builder
	prev := -2
	for i, o := range ops {
		if !show[i] {
			continue
		}
		if i != prev+1 {
			fmt.Fprintf(&out, "@@ line %d @@\n", o.line)
		}
		out.WriteString(string(o.kind) + o.text + "\n")
		prev = i
	}
	return out.String()
}

// op is one line of a diff; line is its number in after (before for a
// removal).
type op struct {
	kind byte
	text string
	line int
}

// lines splits s into lines without their endings.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffLines is the longest-common-subsequence diff of a and b.
func diffLines(a, b []string) []op {
	var ops []op
	if len(a)*len(b) > maxDiffCells {
		for i, l := range a {
			ops = append(ops, op{'-', l, i + 1})
		}
		for i, l := range b {
			ops = append(ops, op{'+', l, i + 1})
		}
		return ops
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], j + 1})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i], i + 1}) // removals first
			i++
		default:
			ops = append(ops, op{'+', b[j], j + 1})
			j++
		}
	}
	return ops
}
