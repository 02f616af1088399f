package session

import "testing"

func TestReservedBranches(t *testing.T) {
	t.Parallel()
	for branch, want := range map[string]string{
		"ralph/feature":      "",
		"main":               "",
		"ralph/task":         "ralph/task/",
		"ralph/task/US-1":    "ralph/task/",
		"ralph/conflict":     "ralph/conflict/",
		"ralph/conflict/x-1": "ralph/conflict/",
		"ralph/tasks":        "",
	} {
		if got := reserved(branch); got != want {
			t.Errorf("reserved(%q) = %q, want %q", branch, got, want)
		}
	}
}
