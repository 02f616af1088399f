package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/durable"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/serve"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/termtext"
	"github.com/ralph-loop/ralph/internal/trust"
	"github.com/ralph-loop/ralph/internal/words"
)

// Trust (DESIGN §9): ralph runs outside the sandbox what its
// configuration says (agent and notify commands, the sandbox itself, the
// GitHub API host it sends the token to), and the agent can write the
// project's ralph.toml. So a project's configuration file (ralph.toml, or
// the --config file) takes effect only at content the user approved,
// with `ralph trust`, as direnv obeys an .envrc only after `direnv
// allow`; `ralph init` approves what it writes. The user's own file
// (config.UserFile) is outside the project, out of the agent's reach
// (read-only in the sandbox): it needs no approval; neither does the
// environment, nor a missing ralph.toml (the defaults).
//
// Commands that obey the configuration (run, plan, review, pr) load it
// with Host.Config, which stops on an unapproved file before anything
// runs; those that only read what a run left (status, tasks, logs) may
// read it unapproved (Host.ConfigUnapproved); doctor reports it and
// checks the rest without it.

// TrustStore is the user's store of approvals:
// $XDG_STATE_HOME/ralph/trust, or ~/.local/state/ralph/trust.
func (f *Host) TrustStore() trust.Store {
	d := serve.StateDir(f.Environ())
	if d == "" {
		return trust.Store{}
	}
	return trust.Store{Dir: filepath.Join(d, "trust")}
}

// vouched reports whether this invocation uses the configuration as it
// is: --trust, or RALPH_TRUST set to a true value.
func (f *Host) vouched() bool {
	if f.Trust {
		return true
	}
	v, err := strconv.ParseBool(Getenv(f.Environ(), "RALPH_TRUST"))
	return err == nil && v
}

// approvals are the contents of configuration files this invocation
// obeys, by digest: a --worker's task runs read the ralph.toml of their
// worktrees, which must be what the worker itself approved.
type approvals struct {
	mu   sync.Mutex
	sums map[string]bool
}

func (a *approvals) has(sum string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sums[sum]
}

func (a *approvals) add(sum string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sums == nil {
		a.sums = map[string]bool{}
	}
	a.sums[sum] = true
}

// approve is config.LoadOptions.Approve for the commands that obey the
// configuration: the project file's content must be approved (or
// vouched for), else the error says what changed and how to approve it.
func (f *Host) approve(path string, data []byte) error {
	sum := trust.Sum(data)
	if f.approved.has(sum) {
		return nil
	}
	if f.vouched() {
		f.approved.add(sum)
		return nil
	}
	ok, last, err := f.TrustStore().Trusted(path, data)
	if err != nil {
		return fmt.Errorf("reading the trust store: %w", err)
	}
	if ok {
		f.approved.add(sum)
		return nil
	}
	head, body := untrustedChange(path, data, last)
	return &untrustedError{problem: untrustedProblem(path), file: path, head: head, body: body}
}

// untrustedError is a project configuration file the user has not
// approved at its content: what changed, then the problem.
type untrustedError struct {
	problem problem
	file    string
	// head says what the user has not approved; body is the diff, whole,
	// every control in it visible (termtext.Visible).
	head, body string
	// shown says where the diff was shown (showUntrusted); empty: it is
	// part of the message.
	shown string
}

func (e *untrustedError) Error() string {
	if e.shown != "" {
		return e.head + " (" + e.shown + ")\n" + e.problem.detail + "; " + e.problem.fix
	}
	return e.head + ":\n" + e.body + e.problem.detail + "; " + e.problem.fix
}

// ShowUntrusted shows the diff of an unapproved file whole, never cut:
// through the pager when standard error is a terminal, else in a file
// beside the trust store (a temporary one without a store), which the
// message then names. Every control, bidi and zero-width character in it
// is shown visibly, so that the user sees that the file holds them.
func (f *Host) ShowUntrusted(ctx context.Context, e *untrustedError) {
	text := e.head + ":\n" + e.body
	if tty, ok := f.IO.ErrOut.(*os.File); ok && term.IsTerminal(int(tty.Fd())) {
		if err := f.page(ctx, text, tty); err == nil {
			e.shown = "the diff is shown above"
			return
		}
	}
	if path, err := f.writeUntrusted(e, text); err == nil {
		e.shown = "the whole diff is in " + path
	}
}

// page runs the user's pager ($PAGER, else less) on text.
func (f *Host) page(ctx context.Context, text string, tty *os.File) error {
	env := f.Environ()
	argv := strings.Fields(Getenv(env, "PAGER"))
	if len(argv) == 0 {
		argv = []string{"less"}
	}
	if Getenv(env, "LESS") == "" {
		env = append(env, "LESS=FX") // one screen is printed and left
	}
	// Found, as every program ralph starts outside the sandbox, on a PATH
	// without the project: a .venv/bin/less the agent wrote is not run.
	dir, _ := f.ProjectDir()
	outside := proc.OutsideFrom(ctx, env, dir)
	path, err := outside.LookPath(argv[0])
	if err != nil {
		return err
	}
	return proc.RunOnTerminal(ctx, path, argv, outside.Environ(env), strings.NewReader(text), tty)
}

// writeUntrusted writes text, the diff of e's file, to a file of the
// user's alone and returns its path.
func (f *Host) writeUntrusted(e *untrustedError, text string) (string, error) {
	if d := f.TrustStore().Dir; d != "" {
		dir := filepath.Join(filepath.Dir(d), "untrusted")
		if err := os.MkdirAll(dir, 0o700); err == nil {
			key, _ := trust.Key(e.file)
			path := filepath.Join(dir, filepath.Base(e.file)+"-"+trust.Sum([]byte(key))[:8]+".diff")
			if err := durable.WriteFile(path, []byte(text), 0o600); err == nil {
				return path, nil
			}
		}
	}
	tmp, err := os.CreateTemp("", "ralph-untrusted-*.diff")
	if err != nil {
		return "", err
	}
	defer tmp.Close()
	if _, err := tmp.WriteString(text); err != nil {
		return "", err
	}
	return tmp.Name(), nil
}

// untrustedProblem is the problem of path not approved at its content,
// as a run's refusal and doctor's FAIL line say it.
func untrustedProblem(path string) problem {
	name := words.Path(path)
	return problem{section: "config", name: "trusted",
		detail: fmt.Sprintf("%s is not trusted at this content, and ralph obeys it outside the sandbox "+
			"(agent, gate and notify commands, the sandbox's settings, where the GitHub token goes)", name),
		fix: fmt.Sprintf("read it, then run 'ralph trust %s' to approve it (or --trust, RALPH_TRUST=1: use it once, unrecorded)", name)}
}

// untrustedChange says what the user has not approved (head) and shows
// it (body): the diff since the last approval, or the whole file, whole,
// with every control visible.
func untrustedChange(path string, data []byte, last *trust.Record) (head, body string) {
	name := words.Path(path)
	if last != nil {
		head = fmt.Sprintf("%s changed since you trusted it (%s)", name, last.TrustedAt.Local().Format("2006-01-02 15:04"))
		body = trust.Diff(last.Content, string(data))
	} else {
		head = fmt.Sprintf("%s was never trusted; it says", name)
		body = trust.Diff("", string(data))
	}
	return head, termtext.Visible(body)
}

// IsUntrusted reports whether err is an unapproved configuration file.
func IsUntrusted(err error) (*untrustedError, bool) {
	var u *untrustedError
	ok := errors.As(err, &u)
	return u, ok
}

// loadConfig loads the layered configuration for the project in dir;
// approve, when set, is asked about the project file, and the files the
// project file names for ralph to read must be in the project.
func (f *Host) loadConfig(dir string, approve func(string, []byte) error) (config.Config, error) {
	env := f.Environ()
	opts := config.LoadOptions{
		UserFile:    config.UserFile(env),
		ProjectFile: filepath.Join(dir, "ralph.toml"),
		Environ:     env,
		Approve:     approve,
	}
	if approve != nil {
		opts.ProjectDir = dir
	}
	if f.ConfigFile != "" {
		opts.ProjectFile = f.ConfigFile
		opts.ProjectFileRequired = true
	}
	return config.Load(opts)
}

// planGates are the plan's Validation Commands in force for this run
// (trust.Store.GatesInForce): fixed at its start, whatever the agent
// writes in the plan; --trust uses the file's, unrecorded. The warning,
// when not empty, says that the file's differ from them.
func (f *Host) planGates(p *task.Plan) (cmds []string, warning string, err error) {
	if p.Path == "" || f.vouched() {
		return p.Validation, "", nil
	}
	cmds, rec, err := f.TrustStore().GatesInForce(p.Path, p.Validation, time.Now())
	if err != nil {
		return nil, "", fmt.Errorf("reading the trust store: %w", err)
	}
	if rec == nil || slices.Equal(cmds, p.Validation) {
		return cmds, "", nil
	}
	name := words.Path(p.Path)
	inForce := "none"
	if len(cmds) > 0 {
		inForce = "`" + strings.Join(cmds, "`, `") + "`"
	}
	return cmds, fmt.Sprintf("%s's Validation Commands are not the ones in force (%s, recorded by %s on %s): "+
		"the run checks tasks with those; read the file's, then run 'ralph trust %s' to put them in force",
		name, inForce, rec.By, rec.RecordedAt.Local().Format("2006-01-02 15:04"), name), nil
}

// planRoutes are the agents and models the plan's tasks name in force for
// this run (trust.Store.RoutesInForce): fixed at its start, whatever the
// agent writes in the plan; --trust uses the file's, unrecorded. nil
// means the file's. The warning, when not empty, says that the file's
// differ from them.
func (f *Host) planRoutes(p *task.Plan) (map[string]trust.Route, string, error) {
	file := fileRoutes(p)
	if p.Path == "" || f.vouched() {
		return nil, "", nil
	}
	in, rec, err := f.TrustStore().RoutesInForce(p.Path, file, time.Now())
	if err != nil {
		return nil, "", fmt.Errorf("reading the trust store: %w", err)
	}
	if rec == nil || maps.Equal(in, file) {
		return in, "", nil
	}
	name := words.Path(p.Path)
	return in, fmt.Sprintf("%s's tasks name other agents or models than those in force (recorded by %s on %s): "+
		"the run uses those; read the file's, then run 'ralph trust %s' to put them in force",
		name, rec.By, rec.RecordedAt.Local().Format("2006-01-02 15:04"), name), nil
}

// fileRoutes are the agents and models p's tasks name, by task id.
func fileRoutes(p *task.Plan) map[string]trust.Route {
	routes := map[string]trust.Route{}
	for _, t := range p.Tasks {
		if t.Agent != "" || t.Model != "" {
			routes[t.ID] = trust.Route{Agent: t.Agent, Model: t.Model}
		}
	}
	return routes
}

// TrustPlan records the Validation Commands of the plan at path as the
// ones in force; false when path is not a plan (a configuration file).
func (f *Host) TrustPlan(path string) (bool, error) {
	if filepath.Ext(path) == ".toml" {
		return false, nil
	}
	pf, err := task.Load(path)
	if err != nil {
		return false, nil //nolint:nilerr // not a plan: approved as a configuration file
	}
	p := pf.Plan()
	if _, err := f.TrustStore().SetPlanGates(path, p.Validation, trust.ByTrust, time.Now()); err != nil {
		return true, fmt.Errorf("trust %s: %w", path, err)
	}
	if _, err := f.TrustStore().SetPlanRoutes(path, fileRoutes(p), trust.ByTrust, time.Now()); err != nil {
		return true, fmt.Errorf("trust %s: %w", path, err)
	}
	inForce := "none"
	if len(p.Validation) > 0 {
		inForce = "`" + strings.Join(p.Validation, "`, `") + "`"
	}
	_, err = fmt.Fprintf(f.IO.Out, "trusted %s's Validation Commands: %s\n", words.Path(path), inForce)
	return true, err
}
