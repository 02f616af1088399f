package scaffold

import (
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/task"
)

func TestSetConfigKey(t *testing.T) {
	t.Parallel()
	cfg := ConfigTemplate()
	got := SetConfigKey(cfg, "prompt", "prompt.md")
	if !strings.Contains(got, "\nprompt = \"prompt.md\"\n") || strings.Count(got, "prompt = ") != strings.Count(cfg, "prompt = ") {
		t.Errorf("prompt not set in place:\n%s", got)
	}
	got = SetConfigKey("# head\n\n# x = 1\n", "tasks", "PLAN.md")
	if got != "# head\n\ntasks = \"PLAN.md\"\n\n# x = 1\n" {
		t.Errorf("no commented key: %q", got)
	}
}

func TestInitFilesEveryFormat(t *testing.T) {
	t.Parallel()
	for _, name := range task.Formats() {
		files, err := Files(name)
		if err != nil {
			t.Fatal(err)
		}
		plan := files[len(files)-1]
		p, err := task.Parse(plan.Name, []byte(plan.Body))
		if err != nil {
			t.Fatalf("%s: the example %s does not read: %v", name, plan.Name, err)
		}
		if p.Format != name || len(p.Tasks) != 2 || p.Open() != 2 {
			t.Errorf("%s: the example reads as %s with %d tasks, %d open", name, p.Format, len(p.Tasks), p.Open())
		}
	}
	if _, err := Files("yaml"); err == nil {
		t.Error("an unknown format works")
	}
}
