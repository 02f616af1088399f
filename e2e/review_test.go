package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/fakemodel"
	"github.com/ralph-loop/ralph/internal/state"
)

// TestReviewer runs the real Claude Code CLI as the reviewer as well as
// the worker, against the fake model server, with [review] when = "both":
//
//   - a reviewer per task: the first claim of US-001 gets REVISE with a
//     finding (review_rejected, the finding in the next prompt), the
//     second SHIP; US-002 gets SHIP at once;
//   - the review at the end: one reviewer (focus "tests") reads the whole
//     run's diff and finds one thing; it becomes task US-003 in prd.json,
//     with the finding as its criterion; the worker does it, its own
//     reviewer ships it, and the second round finds nothing new.
//
// Every done task's history line carries the reviewer's verdict, and the
// run ends with exit 0. One reviewer at a time, so the fake model's turns
// come in a known order.
func TestReviewer(t *testing.T) {
	for _, cli := range agentCLIs() {
		if cli.name != "claude" {
			continue
		}
		setup := cli.setup
		cli.setup = func(p *project) {
			setup(p)
			p.toml.WriteString("[review]\nwhen = \"both\"\nagent = \"claude\"\nfocus = [\"tests\"]\nrounds = 2\n")
		}
		t.Run(cli.name, func(t *testing.T) { testReviewer(t, cli) })
	}
}

const (
	ship    = "I read the diff and checked the criteria.\n\n<promise>SHIP</promise>"
	finding = "done-1.txt and done-2.txt have no check that they exist."
)

func testReviewer(t *testing.T, cli agentCLI) {
	t.Helper()
	p := newProject(t, cli,
		// US-001, its reviewer asks for a note; then done and shipped.
		fakemodel.Shell("touch done-1.txt"), fakemodel.Text(doneText("1")),
		fakemodel.Text("1. done-1.txt is empty: write \"one\" in it.\n\n<promise>REVISE</promise>"),
		fakemodel.Shell("echo one > done-1.txt"), fakemodel.Text(doneText("1")),
		fakemodel.Text(ship),
		// US-002, shipped at once.
		fakemodel.Shell("touch done-2.txt"), fakemodel.Text(doneText("2")),
		fakemodel.Text(ship),
		// The end review's first round finds one thing.
		fakemodel.Text("1. "+finding+"\n\n<promise>REVISE</promise>"),
		// US-003, made of the finding: done and shipped.
		fakemodel.Shell("printf 'test -f done-1.txt && test -f done-2.txt\\n' > check.sh"),
		fakemodel.Text("Added check.sh. <promise>TASK_DONE</promise>"),
		fakemodel.Text(ship),
		// The second round: nothing new.
		fakemodel.Text(ship),
	)
	r := p.run(runDeadline+2*time.Minute, "--max-iterations", "8", "--max-attempts", "2", "--timeout", iterTimeout)
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	hist := p.history()
	want := []string{"review_rejected", "task_done", "task_done", "end_review", "task_done", "end_review"}
	if diff := cmp.Diff(want, outcomes(hist)); diff != "" {
		t.Fatalf("history outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"US-001": true, "US-002": true, "US-003": true}, p.passes()); diff != "" {
		t.Errorf("prd.json passes (-want +got):\n%s", diff)
	}
	for _, h := range hist {
		switch h.Outcome {
		case "task_done":
			if h.Review == nil || h.Review.Verdict != "SHIP" || h.Review.Agent != "claude" {
				t.Errorf("iteration %d (%s): review evidence %+v, want SHIP by claude", h.Iteration, h.TaskID, h.Review)
			}
		case "review_rejected":
			if h.Review == nil || len(h.Review.Findings) != 1 || !strings.Contains(h.Review.Findings[0], "done-1.txt is empty") {
				t.Errorf("iteration %d: review evidence %+v, want the finding", h.Iteration, h.Review)
			}
		default:
			// The other values need nothing here.
		}
	}
	first, second := hist[3].EndReview, hist[5].EndReview
	if first == nil || len(first.Reviewers) != 1 || first.Reviewers[0].Verdict != "REVISE" || first.Reviewers[0].Focus != "tests" ||
		len(first.Tasks) != 1 || first.Tasks[0].Task != "US-003" || first.Tasks[0].Finding != finding {
		t.Errorf("first round: %+v", first)
	}
	if second == nil || len(second.Reviewers) != 1 || second.Reviewers[0].Verdict != "SHIP" || len(second.Tasks) != 0 {
		t.Errorf("second round: %+v", second)
	}
	for _, h := range []state.Record{hist[3], hist[5]} {
		if h.InputTokens <= 0 {
			t.Errorf("round at iteration %d: no tokens recorded for its reviewer", h.Iteration)
		}
	}
	if !p.exists("check.sh") {
		t.Error("check.sh does not exist: the end review's task was not done")
	}
	b, err := os.ReadFile(filepath.Join(p.dir, "prd.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), finding) {
		t.Errorf("prd.json lacks the finding as a criterion:\n%s", b)
	}
	// The end reviewer read the run's diff: the files of both tasks.
	prompts, _ := filepath.Glob(filepath.Join(p.dir, ".ralph", "runs", "*", "iter-*.review-*.prompt.md"))
	var endPrompt string
	for _, f := range prompts {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "Your focus: **tests**") {
			endPrompt = string(b)
			break
		}
	}
	if slices.ContainsFunc([]string{"b/done-1.txt", "b/done-2.txt", "+one"}, func(s string) bool { return !strings.Contains(endPrompt, s) }) {
		t.Errorf("the end review prompt lacks the run's diff:\n%s", endPrompt)
	}
}
