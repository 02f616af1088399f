package loop

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/agent"
)

func question(text string) agent.Result {
	return agent.Result{FinalText: "I need a decision.\n<promise>QUESTION</promise> " + text}
}

func TestQuestionHoldsItsTaskWhileOthersGoOnAndTheAnswerReachesTheNextPrompt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A", "B"}, question("v1 or v2?"), done(), done())
	s := NewSteering()
	var asked, answered []string
	_, err := f.runSteeredWatching(t.Context(), s, func(int, *Steering) {}, func(e Event) {
		switch e.Kind {
		case EventQuestion:
			asked = append(asked, e.Task.ID+": "+e.Message)
		case EventAnswered:
			answered = append(answered, e.Task.ID+": "+e.Message)
		case EventWaiting:
			// Nothing else can run: a human answers the waiting run.
			if strings.HasPrefix(e.Message, "waiting for an answer: A: v1 or v2?") {
				s.Answer(Answer{Text: "v2, keep v1 working", By: "test"})
			}
		default:
			// The other values need nothing here.
		}
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if diff := cmp.Diff([]string{"A:needs_answer", "B:task_done", "A:task_done"}, f.outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"A: v1 or v2?"}, asked); diff != "" {
		t.Errorf("questions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"A: v2, keep v1 working"}, answered); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	third := f.agent.prompts[2]
	for _, want := range []string{"## Answers to Your Questions", "Question: v1 or v2?", "Answer: v2, keep v1 working"} {
		if !strings.Contains(third, want) {
			t.Errorf("the prompt after the answer lacks %q:\n%s", want, third)
		}
	}
	if strings.Contains(f.agent.prompts[1], "Answers to Your Questions") {
		t.Error("task B's prompt carries A's question")
	}
	if st := f.store.st; len(st.Questions) != 0 || st.Tasks["A"].Attempts != 0 {
		t.Errorf("after A is done: questions %v, attempts %d; want none, 0 (asking is no attempt)", st.Questions, st.Tasks["A"].Attempts)
	}
}

func TestQuestionWithoutControlStopsAndTheNextRunGetsTheAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []string{"A"}, question("which database?"), done())
	err := f.run(t)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "ralph answer") {
		t.Fatalf("err = %v, want ErrLimit naming ralph answer", err)
	}
	st := f.store.st
	if len(st.Pending()) != 1 || st.Pending()[0].Text != "which database?" {
		t.Fatalf("pending questions = %+v", st.Pending())
	}
	// `ralph answer` between runs writes the answer into state.json.
	if _, ok := st.AnswerQuestion("A", "postgres", "cli", time.Now()); !ok {
		t.Fatal("no question to answer")
	}
	f.store.st = st
	if err := f.run(t); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if p := f.agent.prompts[1]; !strings.Contains(p, "Answer: postgres") {
		t.Errorf("second run's prompt lacks the answer:\n%s", p)
	}
}
