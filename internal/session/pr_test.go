package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

func TestRemoteRepo(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"git@github.com:acme/app.git":                 "acme/app",
		"https://github.com/acme/app":                 "acme/app",
		"https://github.com/acme/app.git":             "acme/app",
		"ssh://git@ghe.example.com:2222/acme/app.git": "acme/app",
		"https://ghe.example.com/acme/app/":           "acme/app",
		"/srv/git/app.git":                            "",
		"../app":                                      "",
	} {
		got := ""
		if m := remoteRepo.FindStringSubmatch(url); m != nil {
			got = m[1] + "/" + m[2]
		}
		if got != want {
			t.Errorf("%s: %q, want %q", url, got, want)
		}
	}
}

func TestPRBodyFitsGitHubsLimit(t *testing.T) {
	t.Parallel()
	plan := &task.Plan{}
	for i := range 2000 {
		plan.Tasks = append(plan.Tasks, task.Task{ID: fmt.Sprintf("#%d", i+1), Title: strings.Repeat("é", 150), Status: task.StatusDone})
	}
	body, open := prBody(plan, nil, state.State{}, true)
	if len(body) > maxPRBody || open != 0 {
		t.Fatalf("body of %d bytes, %d open", len(body), open)
	}
	if !strings.Contains(body, "more tasks (`ralph tasks list`)") || strings.Count(body, "Closes #") != 2000 {
		t.Errorf("a cut table must keep every Closes line:\n%s", body[len(body)-300:])
	}
	if strings.Contains(body, "\uFFFD") {
		t.Error("a title was cut inside a character")
	}
}
