package loop

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// The events of the agents' questions.
const (
	// EventQuestion: an agent asked (Message is the question); its task
	// waits for the answer.
	EventQuestion EventKind = "question"
	// EventAnswered: a human answered (Message is the answer); it goes
	// into the task's next prompt.
	EventAnswered EventKind = "answered"
)

// Answer is a human's answer to an agent's question.
type Answer struct {
	// Task is the task whose question it answers; "" answers the oldest
	// question waiting.
	Task string
	Text string
	// By says where it came from: page, tui, cli, telegram.
	By string
}

// Answers is the part of a Control that brings answers to the agents'
// questions. The loop looks for it on Deps.Control.
type Answers interface {
	// TakeAnswers returns the answers given since the last call.
	TakeAnswers() []Answer
	// AnswerReady returns a channel that receives when an answer is
	// given.
	AnswerReady() <-chan struct{}
}

// ask records the question of an iteration that ended needs_answer: the
// task waits until it is answered (next skips it).
func (r *runner) ask(t task.Task, it iteration) error {
	// A task has one question waiting at most: a new one replaces it.
	r.st.Questions = slices.DeleteFunc(r.st.Questions, func(q state.Question) bool { return q.Task == t.ID && q.Answer == "" })
	r.st.Questions = append(r.st.Questions, state.Question{Task: t.ID, Text: it.errText, RunID: r.st.RunID,
		Iteration: r.st.Iteration, AskedAt: r.deps.Now()})
	if err := r.save(); err != nil {
		return err
	}
	r.emit(Event{Kind: EventQuestion, Iteration: r.st.Iteration, Task: &TaskRef{ID: t.ID, Title: t.Title}, Message: it.errText})
	return nil
}

// waitingForAnswer reports whether task id has a question without an
// answer.
func (r *runner) waitingForAnswer(id string) bool {
	for _, q := range r.st.Questions {
		if q.Task == id && q.Answer == "" {
			return true
		}
	}
	return false
}

// takeAnswers records the answers given since the last look.
func (r *runner) takeAnswers() error {
	a, ok := r.deps.Control.(Answers)
	if !ok {
		return nil
	}
	changed := false
	for _, ans := range a.TakeAnswers() {
		q, ok := r.st.AnswerQuestion(ans.Task, strings.TrimSpace(ans.Text), ans.By, r.deps.Now())
		if !ok {
			r.warn("an answer came for %s, which has no question waiting: ignored", cmp.Or(ans.Task, "the run"))
			continue
		}
		changed = true
		t, _ := r.deps.Plan.Plan().Task(q.Task)
		r.emit(Event{Kind: EventAnswered, Iteration: r.st.Iteration, Task: &TaskRef{ID: q.Task, Title: t.Title}, Message: q.Answer})
	}
	if !changed {
		return nil
	}
	return r.save()
}

// pruneQuestions forgets the questions of tasks that are done or gone
// from the plan: they no longer need an answer, nor its place in a prompt.
func (r *runner) pruneQuestions() {
	if len(r.st.Questions) == 0 {
		return
	}
	p := r.deps.Plan.Plan()
	qs := r.st.Questions[:0]
	for _, q := range r.st.Questions {
		if t, ok := p.Task(q.Task); ok && t.Status == task.StatusOpen {
			qs = append(qs, q)
		}
	}
	r.st.Questions = qs
}

// waitForAnswer holds a run whose only open tasks wait for answers until
// one comes, spending nothing meanwhile. Without a way to receive one
// (no Control that takes answers) the run stops: `ralph answer` records
// the answer for the next run.
func (r *runner) waitForAnswer(ctx context.Context) error {
	pending := r.st.Pending()
	ids := make([]string, 0, len(pending))
	for _, q := range pending {
		ids = append(ids, q.Task)
	}
	a, ok := r.deps.Control.(Answers)
	if !ok {
		return fmt.Errorf("%w: waiting for an answer to the question of %s (`ralph answer TEXT`, then run again)",
			ErrLimit, strings.Join(ids, ", "))
	}
	r.st.Status = state.StatusWaiting
	if err := r.save(); err != nil {
		return err
	}
	q := pending[0]
	r.emit(Event{Kind: EventWaiting, Iteration: r.st.Iteration, Task: &TaskRef{ID: q.Task},
		Message: "waiting for an answer: " + q.Task + ": " + oneLine(q.Text, 200)})
	select {
	case <-ctx.Done():
		return r.interruptedBetween(task.Task{ID: q.Task})
	case <-a.AnswerReady():
	}
	r.st.Status = state.StatusRunning
	r.treeSeen = false
	if err := r.save(); err != nil {
		return err
	}
	return r.takeAnswers()
}

// answersFor are the answers to task id's questions, for its prompt.
func (r *runner) answersFor(id string) []prompt.Answer {
	var out []prompt.Answer
	for _, q := range r.st.Questions {
		if q.Task == id && q.Answer != "" {
			out = append(out, prompt.Answer{Question: q.Text, Answer: q.Answer})
		}
	}
	return out
}
