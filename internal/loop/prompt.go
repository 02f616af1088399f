package loop

import (
	"bytes"
	"fmt"
	"path/filepath"
	"text/template"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/projectfs"
	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// Bounds of what the prompt carries.
const (
	maxAttemptNotes  = 3
	maxProgressBytes = 8 << 10
)

// attemptNote is one failed attempt of a task, remembered for the prompt.
type attemptNote = prompt.Attempt

// loadAttempts reads each task's recent failed attempts from history, so
// a resumed run tells the agent what went wrong before.
func (r *runner) loadAttempts() error {
	recs, err := r.deps.Store.History()
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if rec.Outcome.CountsAsAttempt() {
			r.noteAttempt(rec.TaskID, attemptNote{Iteration: rec.Iteration, Outcome: string(rec.Outcome), Error: rec.Error,
				Output: recordedFindings(rec)})
		}
	}
	return nil
}

func (r *runner) noteAttempt(id string, a attemptNote) {
	// Render bounds what it shows; memory keeps no more than it shows.
	if len(a.Output) > prompt.MaxAttemptOutput {
		a.Output = tail(a.Output, prompt.MaxAttemptOutput)
	}
	r.attempts[id] = append(r.attempts[id], a)
	if notes := r.attempts[id]; len(notes) > maxAttemptNotes {
		r.attempts[id] = notes[len(notes)-maxAttemptNotes:]
	}
}

// renderPrompt renders the prompt for t. Agents that do not resolve
// @file references themselves get plain paths they can open instead.
func (r *runner) renderPrompt(t task.Task) (string, error) {
	text, err := r.promptText(t)
	if err != nil || agent.ResolvesFileRefs(r.agentNow().Name()) {
		return text, err
	}
	return prompt.ResolveFileRefs(text, ""), nil
}

// promptText renders the template, the user's or the embedded one.
func (r *runner) promptText(t task.Task) (string, error) {
	p := r.deps.Plan.Plan()
	patterns, recent, err := prompt.ReadProgress(projectfs.New(r.opts.Dir), state.ProgressFile, maxProgressBytes)
	if err != nil {
		return "", err
	}
	pp := r.progress()
	d := prompt.Data{
		Task: prompt.Task{
			ID: t.ID, Title: t.Title, Description: t.Description, Criteria: t.Criteria,
			Notes: t.Notes, Priority: t.Priority, DependsOn: t.DependsOn,
		},
		Plan: prompt.Plan{
			Path: relPath(r.opts.Dir, p.Path), Name: p.Name, Description: p.Description, Branch: p.Branch,
			Total: pp.Total, Done: pp.Done, Open: pp.Total - pp.Done, // p.Open(), without another pass
		},
		Ownership:        string(r.opts.Ownership),
		ProgressFile:     state.ProgressFile,
		CodebasePatterns: patterns,
		RecentProgress:   recent,
		Attempts:         r.attempts[t.ID],
		Answers:          r.answersFor(t.ID),
		Iteration:        r.st.Iteration,
		MaxIterations:    r.opts.MaxIterations,
	}
	if r.opts.Prompt == "" {
		if r.template == nil {
			// Parsing was half of the engine's time per iteration.
			if r.template, err = prompt.Parse(prompt.DefaultName(r.opts.Ownership), prompt.Default(r.opts.Ownership)); err != nil {
				return "", err
			}
		}
		text, err := r.template.Render(d)
		if err != nil {
			return "", err
		}
		return withPlanContext(r.opts.Dir, text, p), nil
	}
	if r.opts.Ownership == task.OwnerRunner {
		// The runner names the task; a user's plain prompt file cannot.
		return prompt.WithTaskSection(r.opts.PromptName, r.opts.Prompt, d)
	}
	return prompt.RenderFile(r.opts.PromptName, r.opts.Prompt, d)
}

func relPath(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

// commitMessage renders the commit template for a task.
func commitMessage(tmpl string, t task.Task) (string, error) {
	tp, err := template.New("commit").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("commit template: %w", err)
	}
	var b bytes.Buffer
	if err := tp.Execute(&b, t); err != nil {
		return "", fmt.Errorf("commit template: %w", err)
	}
	return b.String(), nil
}
