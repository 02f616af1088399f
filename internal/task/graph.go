package task

import "strings"

// graphIssue is one problem with the ids of a plan, found the same way for
// every format; each format turns it into an *Error at its own place (a JSON
// offset, a markdown line).
type graphIssue struct {
	kind graphIssueKind
	// task is the index of the task the problem is reported on.
	task int
	// other is, for a duplicate id, the index of the first task with that
	// id; for an unknown dependency, the index of the entry in DependsOn.
	other int
	// cycle lists the ids of a dependency cycle, closed: A → B → A.
	cycle string
}

type graphIssueKind int

const (
	issueDuplicate graphIssueKind = iota
	issueUnknownDep
	issueCycle
)

// graphIssues reports duplicate ids, dependsOn entries naming no task, and
// dependency cycles, in that order. Tasks without an id are skipped (the
// format reports the missing id itself).
func graphIssues(tasks []Task) []graphIssue {
	var out []graphIssue
	first := map[string]int{} // id -> index of its first task
	for i, t := range tasks {
		if t.ID == "" {
			continue
		}
		if j, dup := first[t.ID]; dup {
			out = append(out, graphIssue{kind: issueDuplicate, task: i, other: j})
			continue
		}
		first[t.ID] = i
	}
	for i, t := range tasks {
		for k, dep := range t.DependsOn {
			if _, ok := first[dep]; !ok {
				out = append(out, graphIssue{kind: issueUnknownDep, task: i, other: k})
			}
		}
	}
	for _, cycle := range findCycles(tasks, first) {
		ids := make([]string, 0, len(cycle)+1)
		for _, j := range cycle {
			ids = append(ids, tasks[j].ID)
		}
		ids = append(ids, tasks[cycle[0]].ID)
		out = append(out, graphIssue{kind: issueCycle, task: cycle[0], cycle: strings.Join(ids, " → ")})
	}
	return out
}

// findCycles returns each dependency cycle once, as task indexes starting
// with the task earliest in the file. Unknown ids are ignored here (they are
// reported on their own).
func findCycles(tasks []Task, index map[string]int) [][]int {
	const (
		unseen = iota
		onStack
		finished
	)
	color := make([]int, len(tasks))
	var stack []int
	var cycles [][]int
	var visit func(i int)
	visit = func(i int) {
		color[i] = onStack
		stack = append(stack, i)
		for _, dep := range tasks[i].DependsOn {
			j, ok := index[dep]
			if !ok {
				continue
			}
			switch color[j] {
			case unseen:
				visit(j)
			case onStack:
				k := len(stack) - 1
				for stack[k] != j {
					k--
				}
				cycles = append(cycles, rotateToMin(stack[k:]))
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = finished
	}
	for i, t := range tasks {
		if color[i] == unseen && t.ID != "" {
			visit(i)
		}
	}
	return cycles
}

// rotateToMin returns a copy of cycle rotated to start at its smallest index.
func rotateToMin(cycle []int) []int {
	m := 0
	for k, v := range cycle {
		if v < cycle[m] {
			m = k
		}
	}
	return append(append([]int(nil), cycle[m:]...), cycle[:m]...)
}
