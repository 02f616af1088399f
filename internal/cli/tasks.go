package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/ui"
)

type tasksOptions struct {
	f *Factory
	// Plan is --plan; PlanArg the PLAN argument. Either names the plan.
	Plan    string
	PlanArg string
	JSON    bool
	// Action is the subcommand (list, next, show, done, reset, add) and
	// Arg its argument (an id, or add's title).
	Action string
	Arg    string
	// add's fields.
	ID          string
	Description string
	Criteria    []string
	Priority    int
	DependsOn   []string
	// flags are the persistent flags; the changed ones that are config
	// keys (a github: plan's query) override the config.
	flags *pflag.FlagSet
}

const tasksLong = `Show and edit the plan's tasks from the shell, in any plan format.

The plan is PLAN, the last argument of each subcommand (or --plan FILE),
else the tasks key of ralph.toml, else the first of prd.json, tasks.json,
progress.md, IMPLEMENTATION_PLAN.md, fix_plan.md:

  ralph tasks list prd.json
  ralph tasks done US-002 prd.json
  ralph tasks add "Say goodbye" progress.md

PLAN may be github:OWNER/REPO: the repository's open issues (labelled
ralph; --label, --milestone, --assignee) are fetched into a snapshot in
.ralph/github/ first, as ralph run does.

Edits change only the bytes they must, are written atomically, and never
overwrite a file that changed under them. An agent in agent-ownership mode
may call ` + "`ralph tasks done ID`" + ` itself.

A task ralph gave up on (failed) is marked in the plan where the format can
say so, and always in .ralph/state.json; ` + "`ralph tasks reset ID`" + ` clears both so
the next run retries it.`

func newCmdTasks(f *Factory, runF func(*tasksOptions) error) *cobra.Command {
	opts := &tasksOptions{f: f}
	// run runs action; ids is how many arguments come before the
	// optional PLAN (the id, or add's title).
	run := func(action string, ids int) func(*cobra.Command, []string) error {
		return func(_ *cobra.Command, a []string) error {
			opts.Action = action
			if ids > 0 {
				opts.Arg, a = a[0], a[1:]
			}
			if len(a) == 1 {
				opts.PlanArg = a[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return runTasks(opts)
		}
	}
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "List, show and edit the plan's tasks",
		Long:  tasksLong,
		Args:  func(cmd *cobra.Command, a []string) error { return tasksRootArgs(f, cmd, a) },
		RunE:  run("list", 0),
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&opts.Plan, "plan", "", "the plan `FILE`, as the PLAN argument (default: the tasks key of ralph.toml, then discovery)")
	pf.BoolVar(&opts.JSON, "json", false, "print JSON")
	addKeyFlags(pf, "tasks")
	opts.flags = pf

	add := &cobra.Command{
		Use:   "add TITLE [PLAN]",
		Short: "Add a task at the end of the plan",
		Long: `Add a task at the end of the plan. The words of an unquoted title are
joined; a last word that names an existing file is the PLAN.`,
		Args: args(func(_ *cobra.Command, a []string) error {
			if len(a) == 0 {
				return errors.New("give the task's TITLE: ralph tasks add \"Fix the login form\"")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, a []string) error {
			// ralph tasks add Fix the login form [PLAN]: as before plans
			// became arguments, the words are the title, unless the last
			// one names an existing file.
			dir, _ := f.ProjectDir() // an error shows when the plan is read
			if len(a) > 1 && !session.FileExists(session.InDir(dir, a[len(a)-1])) {
				a = []string{strings.Join(a, " ")}
			} else if len(a) > 2 {
				a = []string{strings.Join(a[:len(a)-1], " "), a[len(a)-1]}
			}
			return run("add", 1)(cmd, a)
		},
	}
	af := add.Flags()
	af.StringVar(&opts.ID, "id", "", "the task's id (default: the next one)")
	af.StringVarP(&opts.Description, "description", "d", "", "what the task is about")
	af.StringArrayVarP(&opts.Criteria, "criterion", "c", nil, "an acceptance criterion (repeat for more)")
	af.IntVar(&opts.Priority, "priority", 0, "priority: lower runs first (0: unset)")
	af.StringSliceVar(&opts.DependsOn, "depends-on", nil, "ids of tasks that must be done first")

	cmd.AddCommand(
		&cobra.Command{Use: "list [PLAN]", Short: "List the tasks with their status", Args: args(cobra.MaximumNArgs(1)), RunE: run("list", 0)},
		&cobra.Command{Use: "next [PLAN]", Short: "Show the task a run would work on next", Args: args(cobra.MaximumNArgs(1)), RunE: run("next", 0)},
		&cobra.Command{Use: "show ID [PLAN]", Short: "Show one task in full", Args: args(cobra.RangeArgs(1, 2)), RunE: run("show", 1)},
		&cobra.Command{Use: "done ID [PLAN]", Short: "Mark a task done", Args: args(cobra.RangeArgs(1, 2)), RunE: run("done", 1)},
		&cobra.Command{Use: "reset ID [PLAN]", Short: "Mark a task open again and clear its failed state", Args: args(cobra.RangeArgs(1, 2)), RunE: run("reset", 1)},
		add,
	)
	return cmd
}

// tasksRootArgs checks the arguments of a bare `ralph tasks`: none. A plan
// typed where the subcommand goes gets the command line that was meant.
func tasksRootArgs(f *Factory, cmd *cobra.Command, a []string) error {
	if len(a) == 0 {
		return nil
	}
	if !looksLikePlan(f, a[0]) {
		return usageError(fmt.Errorf("unknown command %q for %q", a[0], cmd.CommandPath()))
	}
	meant := []string{"list", a[0]}
	if len(a) > 1 && slices.ContainsFunc(cmd.Commands(), func(c *cobra.Command) bool { return c.Name() == a[1] }) {
		meant = append(slices.Clone(a[1:]), a[0]) // ralph tasks prd.json done 3
	}
	for i, w := range meant {
		meant[i] = session.ShellQuote(w)
	}
	return usageError(fmt.Errorf("%s is a plan, not a subcommand: type `%s %s`",
		a[0], cmd.CommandPath(), strings.Join(meant, " ")))
}

// looksLikePlan says whether an argument names a plan file rather than a
// subcommand: a plan's file name, a path, or a file that exists.
func looksLikePlan(f *Factory, arg string) bool {
	if _, ok := task.FormatForPath(arg); ok || strings.ContainsRune(arg, filepath.Separator) {
		return true
	}
	dir, err := f.ProjectDir()
	if err != nil {
		return false
	}
	fi, err := os.Stat(session.InDir(dir, arg))
	return err == nil && fi.Mode().IsRegular()
}

// taskJSON is one task as `ralph tasks list --json` prints it.
type taskJSON struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Status    string   `json:"status"`
	Priority  int      `json:"priority"`
	DependsOn []string `json:"depends_on"`
}

// taskDetailJSON is one task in full (show, next, done, reset, add).
type taskDetailJSON struct {
	taskJSON
	Description string   `json:"description"`
	Criteria    []string `json:"acceptance_criteria"`
	Notes       string   `json:"notes"`
	Category    string   `json:"category"`
	Agent       string   `json:"agent,omitempty"`
	Model       string   `json:"model,omitempty"`
	Attempts    int      `json:"attempts"`
	LastError   string   `json:"last_error"`
}

// planJSON is what `ralph tasks list --json` prints.
type planJSON struct {
	Plan   string     `json:"plan"`
	Format string     `json:"format"`
	Tasks  []taskJSON `json:"tasks"`
}

// tasksEnv is what every tasks subcommand works with.
type tasksEnv struct {
	dir  string
	file *task.File
	// st is .ralph/state.json, the zero State when there is none.
	st state.State
}

func runTasks(opts *tasksOptions) error {
	env, err := openTasks(opts)
	if err != nil {
		return err
	}
	switch opts.Action {
	case "list":
		return tasksList(opts, env)
	case "next":
		return tasksNext(opts, env)
	case "show":
		t, err := env.task(opts.Arg)
		if err != nil {
			return err
		}
		return showTask(opts, env, t)
	case "done":
		return tasksSet(opts, env, task.StatusDone)
	case "reset":
		return tasksSet(opts, env, task.StatusOpen)
	case "add":
		return tasksAdd(opts, env)
	}
	return fmt.Errorf("tasks: unknown action %q", opts.Action)
}

func openTasks(opts *tasksOptions) (*tasksEnv, error) {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return nil, err
	}
	configured, err := tasksPlan(opts, dir)
	if err != nil {
		return nil, err
	}
	if configured == "" || session.IsTrackerPlan(configured) {
		// Reading and marking a plan file obeys nothing the config says
		// but where the plan is; a github: plan sends the token where the
		// config says, which only an approved config may say.
		load := opts.f.ConfigUnapproved
		if session.IsTrackerPlan(configured) {
			load = opts.f.Config
		}
		cfg, err := load(dir)
		if err == nil && !session.IsTrackerPlan(configured) && session.IsTrackerPlan(cfg.Tasks) {
			cfg, err = opts.f.Config(dir)
		}
		if err != nil {
			return nil, err
		}
		if err := applyKeyFlags(&cfg, opts.flags, "tasks"); err != nil {
			return nil, err
		}
		if configured == "" {
			configured = cfg.Tasks
		}
		cfg.Tasks = configured
		// A github: plan is fetched into its snapshot first.
		if _, warn, err := session.SyncTrackerPlan(context.Background(), opts.f.Host, dir, cfg); err != nil {
			return nil, err
		} else if warn != "" {
			fmt.Fprintln(opts.f.IO.ErrOut, "warning:", warn)
		}
	}
	file, err := session.OpenPlan(dir, configured)
	if err != nil {
		return nil, err
	}
	env := &tasksEnv{dir: dir, file: file}
	if _, err := os.Stat(filepath.Join(dir, state.Dir, state.StateFile)); err == nil {
		store, err := state.Open(dir)
		if err != nil {
			return nil, err
		}
		if env.st, err = store.LoadState(); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return env, nil
}

// tasksPlan is the plan the command line names, from the PLAN argument or
// --plan; empty when it names none.
func tasksPlan(opts *tasksOptions, dir string) (string, error) {
	if opts.PlanArg == "" {
		return opts.Plan, nil
	}
	if opts.Plan != "" && !same(session.InDir(dir, opts.Plan), session.InDir(dir, opts.PlanArg)) {
		return "", usageError(fmt.Errorf("two plans: %s and --plan %s; give one", opts.PlanArg, opts.Plan))
	}
	return opts.PlanArg, nil
}

// status is a task's status with the runner's state folded in: a task the
// state says failed is failed, whatever the plan format could record.
func (e *tasksEnv) status(t task.Task) task.Status {
	if t.Status == task.StatusOpen && e.st.Tasks[t.ID].Failed {
		return task.StatusFailed
	}
	return t.Status
}

func (e *tasksEnv) failed(t task.Task) bool { return e.st.Tasks[t.ID].Failed }

func (e *tasksEnv) task(id string) (task.Task, error) {
	p := e.file.Plan()
	if t, ok := p.Task(id); ok {
		return t, nil
	}
	ids := make([]string, 0, len(p.Tasks))
	for _, t := range p.Tasks {
		ids = append(ids, t.ID)
	}
	return task.Task{}, fmt.Errorf("%s: %w %q (the plan has %s)", e.rel(), task.ErrUnknownTask, id, strings.Join(ids, ", "))
}

// rel is the plan's path relative to the project, as users typed it.
func (e *tasksEnv) rel() string {
	p := e.file.Path()
	if r, err := filepath.Rel(e.dir, p); err == nil && filepath.IsLocal(r) {
		return r
	}
	return p
}

func (e *tasksEnv) brief(t task.Task) taskJSON {
	deps := t.DependsOn
	if deps == nil {
		deps = []string{}
	}
	return taskJSON{ID: t.ID, Title: t.Title, Status: string(e.status(t)), Priority: t.Priority, DependsOn: deps}
}

func (e *tasksEnv) detail(t task.Task) taskDetailJSON {
	ts := e.st.Tasks[t.ID]
	crit := t.Criteria
	if crit == nil {
		crit = []string{}
	}
	return taskDetailJSON{taskJSON: e.brief(t), Description: t.Description, Criteria: crit, Notes: t.Notes,
		Category: t.Category, Agent: t.Agent, Model: t.Model, Attempts: ts.Attempts, LastError: ts.LastError}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func tasksList(opts *tasksOptions, env *tasksEnv) error {
	p := env.file.Plan()
	w := ui.TextWriter{W: opts.f.IO.Out} // what the agent wrote, as text
	if opts.JSON {
		out := planJSON{Plan: env.rel(), Format: p.Format, Tasks: []taskJSON{}}
		for _, t := range p.Tasks {
			out.Tasks = append(out.Tasks, env.brief(t))
		}
		return printJSON(w, out)
	}
	counts := map[task.Status]int{}
	for _, t := range p.Tasks {
		counts[env.status(t)]++
	}
	fmt.Fprintf(w, "%s (%s): %d of %d done", env.rel(), p.Format, counts[task.StatusDone], len(p.Tasks))
	if n := counts[task.StatusFailed]; n > 0 {
		fmt.Fprintf(w, ", %d failed", n)
	}
	fmt.Fprintln(w)
	next, hasNext := p.Next(env.failed)
	done := map[string]bool{}
	for _, t := range p.Tasks {
		done[t.ID] = t.Status == task.StatusDone
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range p.Tasks {
		st := string(env.status(t))
		if hasNext && t.ID == next.ID {
			st = "next"
		}
		var notes []string
		if t.Priority != 0 {
			notes = append(notes, fmt.Sprintf("priority %d", t.Priority))
		}
		var waiting []string
		for _, d := range t.DependsOn {
			if !done[d] {
				waiting = append(waiting, d)
			}
		}
		if len(waiting) > 0 && env.status(t) == task.StatusOpen {
			notes = append(notes, "after "+strings.Join(waiting, ", "))
		}
		if len(notes) == 0 {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", st, t.ID, t.Title)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", st, t.ID, t.Title, strings.Join(notes, "; "))
	}
	return tw.Flush()
}

func tasksNext(opts *tasksOptions, env *tasksEnv) error {
	p := env.file.Plan()
	t, ok := p.Next(env.failed)
	if ok {
		return showTask(opts, env, t)
	}
	if opts.JSON {
		_, err := fmt.Fprintln(opts.f.IO.Out, "null")
		return err
	}
	msg := "nothing to do: every task is done"
	if p.Open() > 0 {
		msg = "nothing can run: the open tasks failed or wait on failed ones; fix the cause and `ralph tasks reset ID`"
	}
	_, err := fmt.Fprintln(opts.f.IO.Out, msg)
	return err
}

func showTask(opts *tasksOptions, env *tasksEnv, t task.Task) error {
	w := ui.TextWriter{W: opts.f.IO.Out} // what the agent wrote, as text
	if opts.JSON {
		return printJSON(w, env.detail(t))
	}
	fmt.Fprintf(w, "%s: %s\n", t.ID, t.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "status\t%s\n", env.status(t))
	if t.Priority != 0 {
		fmt.Fprintf(tw, "priority\t%d\n", t.Priority)
	}
	if len(t.DependsOn) > 0 {
		var deps []string
		for _, d := range t.DependsOn {
			if dt, ok := env.file.Plan().Task(d); ok {
				deps = append(deps, fmt.Sprintf("%s (%s)", d, env.status(dt)))
			}
		}
		fmt.Fprintf(tw, "depends on\t%s\n", strings.Join(deps, ", "))
	}
	if t.Category != "" {
		fmt.Fprintf(tw, "category\t%s\n", t.Category)
	}
	if t.Agent != "" {
		fmt.Fprintf(tw, "agent\t%s\n", t.Agent) // what the plan asks; the run decides what it allows
	}
	if t.Model != "" {
		fmt.Fprintf(tw, "model\t%s\n", t.Model)
	}
	if t.Line > 0 {
		fmt.Fprintf(tw, "where\t%s:%d\n", env.rel(), t.Line)
	}
	if ts := env.st.Tasks[t.ID]; ts.Attempts > 0 {
		fmt.Fprintf(tw, "attempts\t%d\n", ts.Attempts)
		if ts.LastError != "" {
			fmt.Fprintf(tw, "last error\t%s\n", ts.LastError)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if t.Description != "" {
		fmt.Fprintf(w, "\n%s\n", t.Description)
	}
	if len(t.Criteria) > 0 {
		fmt.Fprintln(w, "\nAcceptance criteria:")
		for _, c := range t.Criteria {
			fmt.Fprintf(w, "  - %s\n", c)
		}
	}
	if t.Notes != "" {
		fmt.Fprintf(w, "\nNotes: %s\n", t.Notes)
	}
	return nil
}

// tasksSet marks a task done or, for reset, open again; reset also clears
// the failed state ralph keeps, so the next run retries the task.
func tasksSet(opts *tasksOptions, env *tasksEnv, st task.Status) error {
	before, err := env.task(opts.Arg)
	if err != nil {
		return err
	}
	if err := env.file.SetStatus(before.ID, st); err != nil {
		return err
	}
	cleared := 0
	if ts, ok := env.st.Tasks[before.ID]; ok && st == task.StatusOpen && (ts.Failed || ts.Attempts > 0) {
		store, err := state.Open(env.dir)
		if err != nil {
			return err
		}
		// Re-read: a run may have saved since this command started.
		cur, err := store.LoadState()
		if err != nil {
			return err
		}
		cleared = cur.Tasks[before.ID].Attempts
		delete(cur.Tasks, before.ID)
		if err := store.SaveState(cur); err != nil {
			return err
		}
		env.st = cur
	}
	after, _ := env.file.Plan().Task(before.ID)
	w := ui.TextWriter{W: opts.f.IO.Out} // what the agent wrote, as text
	if opts.JSON {
		return printJSON(w, env.detail(after))
	}
	switch {
	case before.Status == after.Status && cleared == 0:
		fmt.Fprintf(w, "%s was already %s\n", after.ID, after.Status)
	default:
		fmt.Fprintf(w, "%s %s\n", after.ID, after.Status)
	}
	if cleared > 0 || (st == task.StatusOpen && before.Status == task.StatusFailed) {
		fmt.Fprintf(w, "cleared its failed attempts: the next run retries it\n")
	}
	return nil
}

func tasksAdd(opts *tasksOptions, env *tasksEnv) error {
	t, err := env.file.Add(task.Task{
		ID: opts.ID, Title: opts.Arg, Description: opts.Description, Criteria: opts.Criteria,
		Priority: opts.Priority, DependsOn: opts.DependsOn,
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.f.IO.Out, env.detail(t))
	}
	_, err = fmt.Fprintf(ui.TextWriter{W: opts.f.IO.Out}, "added %s: %s\n", t.ID, t.Title)
	return err
}
