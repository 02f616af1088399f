package github

import (
	"strings"
	"testing"

	gh "github.com/google/go-github/v84/github"

	"github.com/ralph-loop/ralph/internal/task"
)

// FuzzIssueTask reads issues with any title, body and labels (one a
// line): it never panics; a task's agent and model are names that one of
// its labels gave; an error names the issue.
func FuzzIssueTask(f *testing.F) {
	f.Add("Login", "Make it work.\n\nDepends on #1", "ralph\nagent:codex\nmodel:opus\npriority:high")
	f.Add("Two", "", "Model:opus\nmodel:sonnet\nagent:claude code")
	f.Add("Odd", "- [ ] x\n```\nDepends on #2\n```", "agent:\nMODEL: gpt-5.1-codex \nagent-x\nralph:done")
	f.Fuzz(func(t *testing.T, title, body, labels string) {
		is := &gh.Issue{Number: new(7), Title: new(title), Body: new(body)}
		for l := range strings.SplitSeq(labels, "\n") {
			is.Labels = append(is.Labels, &gh.Label{Name: new(l)})
		}
		got, err := IssueTask(is)
		if err != nil {
			if !strings.Contains(err.Error(), "#7: ") {
				t.Fatalf("the error does not name the issue: %v", err)
			}
			return
		}
		for kind, name := range map[string]string{"agent": got.Agent, "model": got.Model} {
			if name == "" {
				continue
			}
			found := false
			for _, l := range is.Labels {
				v, ok := cutLabel(l.GetName(), kind)
				found = found || (ok && v == name)
			}
			if !found || !task.IsRouteName(name) {
				t.Fatalf("%s %q: no label %s:%s gave it, or not a name (labels %q)", kind, name, kind, name, labels)
			}
		}
	})
}
