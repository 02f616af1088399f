package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/redact"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/trust"
	"github.com/ralph-loop/ralph/internal/words"
)

// planSpecNames are the specifications `ralph plan` finds on its own.
var planSpecNames = []string{"spec.md", "SPEC.md", "PRD.md", "prd.md"}

// PlanOptions are what ralph plan asks beyond its configuration.
type PlanOptions struct {
	// Config loads the configuration for a project directory, the
	// command's flags over the files and environment.
	Config func(dir string) (config.Config, error)
	// Input is SPEC_FILE or the idea; empty means a spec.md found in the
	// project.
	Input     string
	Format    string
	Out       string
	MaxRounds int
}

// Plan writes a plan with the agent, in rounds until it is valid.
func Plan(ctx context.Context, f *Host, opts PlanOptions) error {
	if opts.MaxRounds < 1 {
		return usageError(errors.New("--max-rounds must be at least 1"))
	}
	dir, err := f.ProjectDir()
	if err != nil {
		return err
	}
	cfg, err := opts.Config(dir)
	if err != nil {
		return err
	}
	ctx = f.withPrograms(ctx, cfg, dir)
	if err := cfg.Validate(); err != nil {
		return err
	}
	data, err := planInput(dir, opts.Input)
	if err != nil {
		return err
	}
	formatName, out, err := planTarget(opts)
	if err != nil {
		return err
	}
	data.PlanFile, data.Format, data.MaxRounds = out, formatName, opts.MaxRounds
	example, err := task.Encode(formatName, planExample(formatName))
	if err != nil {
		return err
	}
	data.Example, data.OpenRule = string(example), openRule(formatName)
	path := InDir(dir, out)

	// What was done before planning stays done; nothing else may be.
	doneBefore := map[string]bool{}
	if f, err := task.Load(path); err == nil {
		data.Exists = true
		for _, t := range f.Plan().Tasks {
			doneBefore[t.ID] = t.Status == task.StatusDone
		}
	} else if _, serr := os.Stat(path); serr == nil {
		data.Exists = true // invalid: the agent is told to fix it
	}

	// The planning agent works in the same sandbox as a run's.
	sb, err := chooseSandbox(ctx, f, cfg, dir)
	if err != nil {
		return err
	}
	defer sb.close()
	defer sb.closeHomes()
	sb.warnWith(func(msg string) { fmt.Fprintf(f.IO.Out, "! warning: %s\n", msg) })
	ag, err := newAgent(f, cfg, sb)
	if err != nil {
		return err
	}
	store, release, err := state.OpenLocked(dir)
	if err != nil {
		return err
	}
	defer func() { _ = release() }()
	if _, err := state.EnsureGitignore(dir); err != nil {
		return err
	}
	runID := "plan-" + state.NewRunID(time.Now())

	w := f.IO.Out
	for round := 1; round <= opts.MaxRounds; round++ {
		data.Round = round
		text, err := prompt.RenderPlan(data)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "[plan %d/%d] %s: writing %s (%s)\n", round, opts.MaxRounds, ag.Name(), out, formatName)
		if err := planRound(ctx, f, ag, cfg, store, runID, round, dir, text); err != nil {
			return err
		}
		problems := checkPlan(path, out, formatName, doneBefore)
		if len(problems) == 0 {
			pf, err := task.Load(path)
			if err != nil {
				return err // checkPlan read it a moment ago
			}
			p := pf.Plan()
			fmt.Fprintf(w, "✓ %s: %s, all open; review it, then `ralph run`\n", out, words.Count(p.Open(), "task"))
			for _, t := range p.Tasks {
				fmt.Fprintf(w, "  %s  %s\n", t.ID, t.Title)
			}
			return planGatesPending(f, w, path, out, p)
		}
		fmt.Fprintf(w, "  %d problems with %s:\n", len(problems), out)
		for _, p := range problems {
			fmt.Fprintf(w, "    %s\n", p)
		}
		data.Problems = problems
	}
	return fmt.Errorf("%s is still not a valid plan after %d rounds; fix it by hand (the problems are above), or run `ralph plan` again", out, opts.MaxRounds)
}

// planInput reads the argument: a spec file, an idea, or nothing (a spec
// found in the project).
func planInput(dir, input string) (prompt.PlanData, error) {
	if strings.TrimSpace(input) == "" {
		for _, name := range planSpecNames {
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
				return prompt.PlanData{Spec: name}, nil
			}
		}
		return prompt.PlanData{}, usageError(fmt.Errorf(`nothing to plan from: give a spec file or an idea (ralph plan spec.md, ralph plan "add dark mode"); looked for %s`,
			strings.Join(planSpecNames, ", ")))
	}
	p := InDir(dir, input)
	fi, err := os.Stat(p)
	switch {
	case err == nil && fi.Mode().IsRegular():
		if rel, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(rel) {
			return prompt.PlanData{Spec: rel}, nil
		}
		return prompt.PlanData{Spec: p}, nil
	case err == nil:
		return prompt.PlanData{}, usageError(fmt.Errorf("%s is a directory: give a spec file or an idea", input))
	case !errors.Is(err, fs.ErrNotExist):
		return prompt.PlanData{}, err
	case !strings.ContainsAny(input, " \t\n") && (strings.HasSuffix(input, ".md") || strings.HasSuffix(input, ".txt")):
		return prompt.PlanData{}, fmt.Errorf("%s: no such file (to plan from an idea, write it out in quotes)", input)
	}
	return prompt.PlanData{Idea: input}, nil
}

// planTarget is the plan's format and file, relative to the project.
func planTarget(opts PlanOptions) (formatName, out string, err error) {
	out = opts.Out
	switch {
	case opts.Format != "":
		if formatName, err = task.FormatName(opts.Format); err != nil {
			return "", "", usageError(err)
		}
	case out != "":
		var ok bool
		if formatName, ok = task.FormatForPath(out); !ok {
			return "", "", usageError(fmt.Errorf("cannot tell the format of %s from its name: give --format", out))
		}
	default:
		formatName = task.FormatPRD
	}
	if out == "" {
		out = task.DefaultFile(formatName)
	}
	return formatName, out, nil
}

// openRule says how a format marks a task open, for the prompt.
func openRule(formatName string) string {
	switch formatName {
	case task.FormatPRD, task.FormatTasksJSON, task.FormatMarkdownJSON:
		return `Every task has "passes": false.`
	case task.FormatHeadingPlan:
		return "Every checkbox is `- [ ]` and no heading has a ✅."
	}
	return "Every task's checkbox is `- [ ]`."
}

// planExample is the example plan the prompt shows in the chosen format.
func planExample(formatName string) *task.Plan {
	id := func(n int, named string) string {
		if formatName == task.FormatPRD {
			return named
		}
		return fmt.Sprint(n)
	}
	return &task.Plan{
		Name:        "Project name",
		Description: "One paragraph: what the plan builds and why.",
		Tasks: []task.Task{
			{ID: id(1, "US-001"), Title: "Short imperative title", Category: "foundation",
				Description: "Two or three sentences: what to change and where, and what is out of scope.",
				Criteria:    []string{"A verifiable result, such as a command and its expected output", "The project's checks pass (for example `make test`)"},
				Priority:    1, Status: task.StatusOpen},
			{ID: id(2, "US-002"), Title: "A task that needs the first", Category: "feature",
				Description: "Two or three sentences.",
				Criteria:    []string{"Another verifiable result", "The project's checks pass"},
				Priority:    2, DependsOn: []string{id(1, "US-001")}, Status: task.StatusOpen},
		},
	}
}

// planRound runs the agent once with the planning prompt.
func planRound(ctx context.Context, f *Host, ag runAgent, cfg config.Config, store *state.Store, runID string, round int, dir, text string) error {
	promptPath, outPath, err := store.IterationFiles(runID, round)
	if err != nil {
		return err
	}
	if err := os.WriteFile(promptPath, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write prompt: %w", err)
	}
	transcript, err := os.Create(outPath)
	if err != nil {
		return fmt.Errorf("create transcript: %w", err)
	}
	defer transcript.Close()
	req := agent.Request{
		Prompt: text, PromptFile: promptPath, Dir: dir, Model: cfg.Model, Env: f.Environ(),
		Timeout: cfg.Timeout.D(), IdleTimeout: cfg.IdleTimeout.D(), Grace: cfg.Grace.D(),
	}
	out := redact.NewWriter(f.IO.Out) // the agent may print a secret
	defer func() { _ = out.Flush() }()
	res, err := ag.Run(ctx, req, agent.Sink{Transcript: transcript, Emit: planEventPrinter(out)})
	switch {
	case err != nil:
		if agent.IsNotFound(err) {
			return fmt.Errorf("%w (is the agent installed and on PATH?)", err)
		}
		return err
	case res.Interrupted || ctx.Err() != nil:
		return context.Canceled
	case res.TimedOut:
		return fmt.Errorf("the agent did not finish within --timeout %s", cfg.Timeout.D())
	case res.IdleTimedOut:
		return fmt.Errorf("the agent was silent for --idle-timeout %s", cfg.IdleTimeout.D())
	case res.IsError && res.ErrorKind != agent.ErrorOther && res.ErrorKind != agent.ErrorNone:
		return fmt.Errorf("the agent failed (%s): %s", res.ErrorKind, res.ErrorText)
	}
	return nil
}

// planEventPrinter shows what the agent does, one short line per event.
func planEventPrinter(w io.Writer) func(agent.Event) {
	return func(e agent.Event) {
		switch e.Kind {
		case agent.EventToolCall:
			fmt.Fprintf(w, "  · %s %s\n", e.Tool, firstLine(e.ToolInput, 100))
		case agent.EventText:
			if s := firstLine(e.Text, 160); s != "" {
				fmt.Fprintf(w, "  %s\n", s)
			}
		case agent.EventError:
			fmt.Fprintf(w, "  ! %s\n", firstLine(e.Text, 200))
		default:
			// The other values need nothing here.
		}
	}
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// checkPlan reads the plan the agent wrote and returns what is wrong with
// it: what ralph cannot read, a format other than the one asked for, tasks
// without acceptance criteria, and tasks marked done or failed that were
// not done before.
func checkPlan(path, name, formatName string, doneBefore map[string]bool) []string {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return []string{fmt.Sprintf("%s does not exist: write the plan there", name)}
	}
	f, err := task.Load(path)
	if err != nil {
		var out []string
		for line := range strings.SplitSeq(err.Error(), "\n") {
			out = append(out, strings.Replace(line, path, name, 1))
		}
		return out
	}
	p := f.Plan()
	var problems []string
	if p.Format != formatName {
		problems = append(problems, fmt.Sprintf("%s reads as a %s plan: write it in the %s format, like the example", name, p.Format, formatName))
	}
	if len(p.Tasks) == 0 {
		problems = append(problems, fmt.Sprintf("%s has no tasks", name))
	}
	for _, t := range p.Tasks {
		where := fmt.Sprintf("%s:%d: task %s", name, t.Line, t.ID)
		if strings.TrimSpace(t.Title) == "" {
			problems = append(problems, where+": no title")
		}
		if len(t.Criteria) == 0 && t.Status != task.StatusDone {
			problems = append(problems, where+": no acceptance criteria: add verifiable ones, the project's checks included")
		}
		switch {
		case t.Status == task.StatusDone && !doneBefore[t.ID]:
			problems = append(problems, where+": marked done: a plan marks nothing done, leave it open")
		case t.Status == task.StatusFailed:
			problems = append(problems, where+": marked failed: leave it open")
		}
	}
	return problems
}

// planGatesPending records that the plan the agent wrote at path has no
// Validation Commands, and no task's agent or model, in force: the agent
// chose them, and they would run as gates, or spend. The user puts them
// in force with the `ralph trust` it prints.
func planGatesPending(f *Host, w io.Writer, path, name string, p *task.Plan) error {
	cmds := p.Validation
	store := f.TrustStore()
	if store.Dir == "" {
		return nil // no store, no record: the file's are in force (trust.Store.GatesInForce)
	}
	if _, err := store.SetPlanGates(path, nil, trust.ByPlan, time.Now()); err != nil {
		return fmt.Errorf("recording %s's Validation Commands: %w", name, err)
	}
	if _, err := store.SetPlanRoutes(path, nil, trust.ByPlan, time.Now()); err != nil {
		return fmt.Errorf("recording %s's agents and models: %w", name, err)
	}
	if len(cmds) > 0 {
		fmt.Fprintf(w, "  its Validation Commands (`%s`) run as gates once you approve them: ralph trust %s\n",
			strings.Join(cmds, "`, `"), name)
	}
	if len(fileRoutes(p)) > 0 {
		fmt.Fprintf(w, "  the agents and models its tasks name are used once you approve them: ralph trust %s\n", name)
	}
	return nil
}
