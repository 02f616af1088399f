package loop

import (
	"fmt"
	"maps"
	"strings"
	"unicode"

	"github.com/ralph-loop/ralph/internal/completion"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/words"
)

// What the end review's findings become: de-duplicated by normalized
// text, sorted against what earlier rounds made of them, and added to the
// plan as tasks.

// finding is one finding of a round, with the focus that found it.
type finding struct {
	key, text, focus string
}

// takeFindings sorts the round's findings, de-duplicated, into new ones,
// known ones (an open task has them) and ones that came back (their task
// is done), and adds a task for each new one. It returns how many it
// added.
func (r *runner) takeFindings(ev *state.RoundEvidence, round int, reviewers []*endReviewer) (int, error) {
	plan := r.deps.Plan.Plan()
	seen := map[string]bool{}
	var fresh []finding
	for _, rv := range reviewers {
		if rv.verdict.Marker != completion.Revise {
			continue
		}
		for _, text := range rv.verdict.Findings {
			key := findingKey(text)
			if key == "" || seen[key] {
				continue
			}
			seen[key] = true
			if ft, ok := r.st.Findings[key]; ok {
				if t, ok := plan.Task(ft.Task); ok && t.Title == ft.Title {
					if t.Status == task.StatusDone {
						ev.Recurring = append(ev.Recurring, ft)
					} else {
						ev.Known = append(ev.Known, ft)
					}
					continue
				}
			}
			fresh = append(fresh, finding{key: key, text: text, focus: rv.focus})
		}
	}
	if len(fresh) == 0 {
		return 0, nil
	}
	adder, ok := r.deps.Plan.(TaskAdder)
	if !ok {
		return 0, fmt.Errorf("the end review found %s to fix, but this plan cannot take new tasks", words.Count(len(fresh), "thing"))
	}
	findings := maps.Clone(r.st.Findings)
	if findings == nil {
		findings = map[string]state.FindingTask{}
	}
	defer func() { r.st.Findings = findings }()
	for _, f := range fresh {
		t, err := adder.Add(findingTask(f, round))
		if err != nil {
			return len(ev.Tasks), fmt.Errorf("adding the end review's finding %q to the plan: %w", oneLine(f.text, 80), err)
		}
		ft := state.FindingTask{Task: t.ID, Title: t.Title, Finding: f.text, Focus: f.focus, RunID: r.st.RunID, Round: round}
		findings[f.key] = ft
		ev.Tasks = append(ev.Tasks, ft)
	}
	return len(ev.Tasks), nil
}

// findingTask is the task a finding becomes: a short title, where it came
// from, and the finding itself as the acceptance criterion.
func findingTask(f finding, round int) task.Task {
	desc := "Found by the end-of-run review"
	if f.focus != "" {
		desc += " (focus: " + f.focus + ")"
	}
	if round > 0 {
		desc += fmt.Sprintf(", round %d", round)
	}
	text := oneLine(f.text, 1<<20)
	return task.Task{Title: findingTitle(text), Description: desc + ".", Criteria: []string{text}}
}

// findingTitle shortens a finding to a task title: its first sentence or
// so, at most 72 characters, cut at a word.
func findingTitle(text string) string {
	text = strings.TrimLeft(text, "[]xX -*")
	const limit = 72
	rs := []rune(text)
	if len(rs) <= limit {
		return strings.TrimRight(text, ".")
	}
	cut := string(rs[:limit])
	if i := strings.LastIndexByte(cut, ' '); i > limit/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.") + "…"
}

// findingKey normalizes a finding for de-duplication: case, markup,
// spacing and end punctuation do not make another finding.
func findingKey(text string) string {
	text = strings.NewReplacer("**", "", "`", "", "\"", "", "'", "").Replace(strings.ToLower(text))
	text = strings.Join(strings.Fields(text), " ")
	return strings.TrimRightFunc(text, func(c rune) bool { return unicode.IsPunct(c) || unicode.IsSpace(c) })
}
