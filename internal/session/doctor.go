package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/sandbox"
	"github.com/ralph-loop/ralph/internal/task"
	"github.com/ralph-loop/ralph/internal/vcs"
	"github.com/ralph-loop/ralph/internal/words"
)

// Check statuses.
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// Check is one line of the report.
type Check struct {
	Section string `json:"section"`
	Name    string `json:"check"`
	Status  string `json:"status"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"`
}

// DoctorReport is what ralph doctor found.
type DoctorReport struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

func (r *DoctorReport) add(section, name, status, detail, fix string) {
	r.Checks = append(r.Checks, Check{Section: section, Name: name, Status: status, Detail: detail, Fix: fix})
}

// DoctorOptions are what ralph doctor asks beyond the configuration.
type DoctorOptions struct {
	All bool
	// VersionTimeout bounds each `AGENT --version`.
	VersionTimeout time.Duration
	// GatesTimeout bounds each gate command doctor runs; NoGates runs
	// none.
	GatesTimeout time.Duration
	NoGates      bool
}

// Doctor checks that a run can start, as ralph run would before anything
// changes, and runs the gates once in the sandbox: each problem with its
// fix.
func Doctor(ctx context.Context, f *Host, opts DoctorOptions) (DoctorReport, error) {
	dir, err := f.ProjectDir()
	if err != nil {
		return DoctorReport{}, err
	}
	var r DoctorReport
	cfg, cfgOK, trusted := doctorConfig(&r, f, dir)
	var names []string
	switch {
	case !cfgOK:
		r.add("agent", "agent", CheckWarn, "not checked: the config is invalid", "fix the config first")
	case cfg.Agent != "":
		names = []string{cfg.Agent}
	}
	if opts.All {
		names = nil
		for _, s := range agent.Specs() {
			// A custom agent is whatever program is configured: only worth
			// a look when one is.
			if _, set := cfg.Agents[s.Name]; !s.Custom || s.Name == cfg.Agent || set {
				names = append(names, s.Name)
			}
		}
	}
	// The reviewers' agent is one a run needs too.
	reviewer := ""
	if cfg.Review.When != "" && cfg.Review.When != loop.ReviewOff && cfg.Review.Agent != "" && cfg.Review.Agent != cfg.Agent {
		reviewer = cfg.Review.Agent
		if !slices.Contains(names, reviewer) {
			names = append(names, reviewer)
		}
	}
	// Doctor runs each agent's --version outside the sandbox: through the
	// run's lookup, so that one the agent wrote (a .venv/bin/claude) is
	// named, not run.
	ctx = f.withPrograms(ctx, cfg, dir)
	for _, name := range names {
		doctorAgent(ctx, &r, f, opts, dir, cfg, name, name == cfg.Agent || name == reviewer)
	}
	doctorGit(ctx, &r, dir, f.Environ())
	choice, sandboxOK := doctorSandbox(ctx, &r, f, dir, cfg)
	if cfgOK {
		doctorPlan(&r, dir, cfg.Tasks)
		doctorPreflight(ctx, &r, dir, cfg)
	} else {
		r.add("plan", "plan", CheckWarn, "not checked: the config is invalid", "fix the config first")
	}
	doctorGates(&r, f, dir, cfg)
	if (cfgOK || !trusted) && sandboxOK && !opts.NoGates {
		doctorRunGates(ctx, &r, f, opts, dir, cfg, trusted, choice)
	}
	if cfgOK {
		doctorGitHub(ctx, &r, f, dir, cfg)
	}

	r.OK = true
	for _, c := range r.Checks {
		if c.Status == CheckFail {
			r.OK = false
		}
	}
	return r, nil
}

// doctorConfig loads and validates the config on disk, the project file
// whether trusted or not, with file and line, and says whether it is
// trusted. It returns the config the checks that start programs or reach
// hosts may obey (without an untrusted project file: those checks would
// run what only it names), and whether the config is valid.
func doctorConfig(r *DoctorReport, f *Host, dir string) (cfg config.Config, ok, trusted bool) {
	project := filepath.Join(dir, "ralph.toml")
	if f.ConfigFile != "" {
		project = f.ConfigFile
	}
	user := config.UserFile(f.Environ())
	onDisk, err := config.Load(config.LoadOptions{UserFile: user, ProjectFile: project,
		ProjectFileRequired: f.ConfigFile != "", Environ: f.Environ()})
	if err == nil {
		err = onDisk.Validate()
	}
	if err != nil {
		r.add("config", "config", CheckFail, err.Error(), "correct the keys named above (ralph config --all shows every key)")
		return config.Defaults(), false, false
	}
	var source strings.Builder
	source.WriteString("defaults")
	for _, file := range []string{user, project} {
		if file != "" && FileExists(file) {
			source.WriteString(" < " + words.Path(file))
		}
	}
	cfg, err = f.Config(dir)
	u, untrusted := IsUntrusted(err)
	switch {
	case untrusted:
		r.add("config", "config", CheckOK, "valid ("+source.String()+"); "+words.Path(project)+" is not trusted: "+
			"what it names is not run or reached below", "")
		r.add(u.problem.section, u.problem.name, CheckFail, u.problem.detail, u.problem.fix)
		cfg, err = config.Load(config.LoadOptions{UserFile: user, Environ: f.Environ()})
	case err == nil && FileExists(project) && f.vouched():
		r.add("config", "config", CheckOK, "valid ("+source.String()+"); "+words.Path(project)+
			" is used as it is, unapproved (--trust, RALPH_TRUST)", "")
	case err == nil && FileExists(project):
		r.add("config", "config", CheckOK, "valid ("+source.String()+"); "+words.Path(project)+" is trusted", "")
	case err == nil:
		r.add("config", "config", CheckOK, "valid ("+source.String()+")", "")
	}
	if err != nil {
		r.add("config", "config", CheckFail, err.Error(), "correct the keys named above (ralph config --all shows every key)")
		return config.Defaults(), false, false
	}
	if untrusted {
		// The plan, the gates and the agent's name are read, not run:
		// they come from the file on disk. The agent's own settings
		// (its command, arguments, environment) only from trusted layers.
		cfg.Tasks, cfg.Gates, cfg.Agent = onDisk.Tasks, onDisk.Gates, onDisk.Agent
		if ac, ok := onDisk.Agents[cfg.Agent]; ok && !reflect.DeepEqual(ac, cfg.Agents[cfg.Agent]) {
			r.add("agent "+cfg.Agent+" (configured)", "executable", CheckWarn,
				"not checked: "+words.Path(project)+", not trusted, sets its [agents."+cfg.Agent+"] table",
				"ralph trust, then ralph doctor again")
			cfg.Agent = ""
		}
	}
	return cfg, true, !untrusted
}

// doctorAgent checks one agent: executable, version, credentials. A
// problem with the configured agent fails the check; with another one
// (--all) it is a warning.
func doctorAgent(ctx context.Context, r *DoctorReport, f *Host, opts DoctorOptions, dir string, cfg config.Config, name string, configured bool) {
	section := "agent " + name
	if configured {
		section += " (configured)"
	}
	missing := CheckWarn
	if configured {
		missing = CheckFail
	}
	ac := cfg.Agents[name]
	ad, err := agent.New(name, agent.Options{
		Command: ac.Command, Args: ac.Args, ExtraArgs: ac.ExtraArgs, Env: ac.Env, Output: ac.Output,
		ErrorPatterns: ac.ErrorPatterns,
	})
	if err != nil {
		fix := "set agent to one of " + strings.Join(agent.Names(), ", ")
		if spec, ok := agent.Lookup(name); ok && spec.Custom {
			fix = fmt.Sprintf("set [agents.%s] command (and output) in ralph.toml", name)
		}
		r.add(section, "adapter", missing, err.Error(), fix)
		return
	}
	spec, _ := agent.Lookup(name) // New found it
	env := agentEnv(ad, f.Environ())
	exe := agent.Executable(ad)
	path, p := findAgent(ad, cfg, dir, env)
	if p != nil {
		r.add(section, p.name, missing, p.detail, p.fix)
		return
	}
	r.add(section, "executable", CheckOK, path, "")

	if spec.Custom {
		r.add(section, "version", CheckOK, "not checked: a custom command may not take --version", "")
	} else if place, held := proc.OutsideOf(ctx).Held(path); held {
		r.add(section, "version", CheckWarn, "not run: "+path+" is in "+place+", which the agent can write, and doctor runs "+
			"nothing from there outside the sandbox (a run starts it in the sandbox only)",
			"install "+exe+" in a directory outside the project, or run `"+exe+" --version` yourself if you trust it")
	} else if v, err := agent.Version(ctx, path, dir, env, opts.VersionTimeout); err != nil {
		r.add(section, "version", CheckWarn, err.Error(), "check the installation: run `"+exe+" --version` yourself")
	} else {
		r.add(section, "version", CheckOK, v, "")
	}

	if spec.Custom {
		r.add(section, "credentials", CheckOK, "not checked: a custom command", "")
		return
	}
	creds := spec.Credentials
	if found := creds.Find(env); found != "" {
		r.add(section, "credentials", CheckOK, found, "")
		return
	}
	looked := append(append([]string(nil), creds.EnvVars...), creds.Files...)
	detail := "none found (looked for " + strings.Join(looked, ", ") + ")"
	if creds.Keyring {
		detail += "; it may keep its login in the system keyring"
	}
	r.add(section, "credentials", CheckWarn, detail, creds.Login)
}

func doctorGit(ctx context.Context, r *DoctorReport, dir string, env []string) {
	g, err := vcs.Open(ctx, dir, env)
	switch {
	case errors.Is(err, vcs.ErrNotRepo):
		r.add("git", "repository", CheckWarn, "git is installed but "+dir+" is not in a repository: a run refuses to start there "+
			"unless --allow-no-repo, and then nothing is committed", "run `git init` (ralph commits each accepted task)")
	case err != nil:
		r.add("git", "git", CheckWarn, err.Error(), "install git: ralph commits each accepted task with it")
	default:
		r.add("git", "repository", CheckOK, g.Root, "")
	}
}

// doctorSandbox runs the probe a run would and says what the configured
// agent could reach inside the sandbox. It returns the sandbox, and
// whether a run could use it.
func doctorSandbox(ctx context.Context, r *DoctorReport, f *Host, dir string, cfg config.Config) (sandbox.Choice, bool) {
	const section = "sandbox"
	mode := cfg.Sandbox.Mode
	c, err := sandbox.Choose(ctx, mode, f.sandboxPolicy(ctx, cfg, dir), f.Environ())
	var se *sandbox.Error
	switch {
	case errors.As(err, &se):
		r.add(section, mode, CheckFail, se.Reason+": a run with --sandbox "+mode+" stops before any agent runs", se.Fix)
		return c, false
	case err != nil:
		r.add(section, mode, CheckFail, err.Error(), "run with --sandbox none")
		return c, false
	case c.Box == nil && mode == sandbox.ModeNone:
		// Chosen on purpose: said, not warned about.
		r.add(section, mode, CheckOK, "none (sandbox.mode): agents, reviewers and gates run with your access and your whole environment", "")
		return c, true
	case c.Box == nil:
		r.add(section, mode, CheckWarn, "none: "+c.Fallback+"; a run goes on without a sandbox, and says so",
			"fix the above, or set sandbox.mode = \"none\" to run without one on purpose")
		return c, true
	}
	spec, _ := agent.Lookup(cfg.Agent)
	// In bubblewrap the agent's configuration is a per-run copy, mounted
	// when it starts; sandbox-exec makes it writable (runSandbox.agent).
	copied := c.Box.Kind() == sandbox.KindBwrap
	var writable []string
	if !copied {
		writable = spec.ConfigDirs
	}
	reach, err := c.Box.With(writable, slices.Concat(spec.Credentials.EnvVars, spec.Env)).Reach()
	if err != nil {
		r.add(section, mode, CheckFail, err.Error(), "check sandbox.allow-write and sandbox.deny")
		return c, false
	}
	r.add(section, mode, CheckOK, c.Kind()+" works (a probe ran in it)", "")
	network := networkReach(reach.Network, cfg.Sandbox.AllowHosts)
	r.add(section, "writable", CheckOK, strings.Join(reach.Writable, ", ")+"; the rest of the host is read-only", "")
	doctorAgentConfig(r, section, spec, copied, f.Environ())
	if len(reach.ReadOnly) > 0 {
		r.add(section, "read-only", CheckOK, strings.Join(reach.ReadOnly, ", "), "")
	}
	r.add(section, "hidden", CheckOK, cmp.Or(strings.Join(reach.Hidden, ", "), "(none of the hidden paths exists)"), "")
	env := strings.Join(reach.Env, " ") + "; the rest of ralph's environment is dropped"
	if reach.Network == sandbox.NetworkProxy {
		env += "; HTTP_PROXY, HTTPS_PROXY and NO_PROXY name ralph's proxy"
	}
	r.add(section, "environment", CheckOK, env, "")
	r.add(section, "network", CheckOK, network+"; processes outside the sandbox (ralph's included) are out of sight", "")
	layers, cold, err := gateLayers(ctx, f, cfg, dir, c)
	switch {
	case err != nil:
		r.add(section, "gates", CheckFail, err.Error(), "")
	case layers == nil:
		r.add(section, "gates", CheckOK, "empty caches of their own on each run (cold, nothing replayed): "+cold, "")
	default:
		r.add(section, "gates", CheckOK, "a throwaway layer over your toolchains' caches, and the in-tree test stores empty, on each run", "")
		for _, w := range agentWrittenWarnings(c.Box, *layers) {
			r.add(section, "gates", CheckWarn, w, "")
		}
	}
	return c, true
}

// networkReach says what a child reaches of the network.
func networkReach(mode string, allowHosts []string) string {
	switch mode {
	case sandbox.NetworkOpen:
		return "open: the host's network, its loopback and abstract sockets included (sandbox.network = \"proxy\" keeps the agent to ralph's proxy)"
	case sandbox.NetworkOff:
		return "off: a loopback of its own"
	}
	if len(allowHosts) == 0 {
		return "through ralph's proxy: any public host (logged in the transcript), nothing of the host's own"
	}
	return "through ralph's proxy: only " + strings.Join(allowHosts, ", ") + " and the agent's API; refusals are events"
}

// doctorAgentConfig says what becomes of the agent's own configuration
// in the sandbox: a per-run copy in bubblewrap; writable, with what that
// risks, under sandbox-exec.
func doctorAgentConfig(r *DoctorReport, section string, spec agent.Spec, copied bool, env []string) {
	if len(spec.ConfigDirs) == 0 {
		return
	}
	where := cmp.Or(strings.Join(configPaths(spec, env), ", "), "(none yet)")
	if !copied {
		r.add(section, "agent config", CheckWarn, where+": writable, since sandbox-exec cannot put a copy in its place; "+
			"a hook or MCP server the agent writes there runs the next time you start "+spec.Name, "")
		return
	}
	kept := "what the agent changes there is discarded and reported"
	if len(spec.WriteBack) > 0 {
		kept += ", except the files ralph writes back (its login, session transcripts)"
	}
	r.add(section, "agent config", CheckOK, where+": a per-run copy; "+kept, "")
}

func doctorPlan(r *DoctorReport, dir, configured string) {
	path := configured
	if IsTrackerPlan(path) {
		p, err := trackerPlanFile(dir, path)
		if err != nil {
			r.add("plan", "plan", CheckWarn, err.Error(), "")
			return
		}
		path = p
	}
	if path == "" {
		p, err := task.Discover(dir)
		if err != nil {
			r.add("plan", "plan", CheckFail, err.Error(), "run `ralph init` for an example plan (or `ralph plan` to have the agent write one), or name yours: ralph run PLAN")
			return
		}
		path = p
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	f, err := task.Load(path)
	if err != nil {
		r.add("plan", "plan", CheckFail, err.Error(), "correct the plan at the place named above")
		return
	}
	p := f.Plan()
	rel, err := filepath.Rel(dir, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = path
	}
	tasks := words.Count(len(p.Tasks), "task")
	if len(p.Tasks) == 1 {
		tasks = "1 task"
	}
	r.add("plan", "plan", CheckOK, fmt.Sprintf("%s: %s, %d open (%s format)", rel, tasks, p.Open(), p.Format), "")
}

// doctorPreflight adds the problems that keep `ralph run` from starting
// with this plan (the plan not writable, changes that are not ralph's
// own, a detached HEAD, a branchName git refuses): the checks the run
// makes, so that doctor and run agree. The agent was checked above.
func doctorPreflight(ctx context.Context, r *DoctorReport, dir string, cfg config.Config) {
	plan, err := OpenPlan(dir, cfg.Tasks)
	if err != nil {
		return // doctorPlan said why
	}
	problems := preflight(ctx, preflightCheck{dir: dir, cfg: cfg, plan: plan})
	for _, p := range problems {
		r.add("run", p.name, CheckFail, p.detail, p.fix)
	}
	if len(problems) == 0 {
		r.add("run", "start", CheckOK, "the plan is writable; the working tree has no changes but ralph's own", "")
	}
}

// doctorGates lists the quality gates a run would use and the project's
// own checks (gate.Detect), each with whether the config enables it. A
// check found but not enabled is a warning: tasks are accepted without
// it.
func doctorGates(r *DoctorReport, f *Host, dir string, cfg config.Config) {
	const section = "gates"
	var validation []string
	if plan, err := OpenPlan(dir, cfg.Tasks); err == nil {
		validation = plan.Plan().Validation
	}
	switch {
	case len(cfg.Gates.Commands) > 0:
		r.add(section, "commands", CheckOK, "[gates] commands: `"+strings.Join(cfg.Gates.Commands, "`, `")+"`", "")
	case len(validation) == 0:
		r.add(section, "commands", CheckOK, "none configured: a task is done when the agent says so", "")
	}
	if len(validation) > 0 {
		r.add(section, "validation", CheckOK, "the plan's Validation Commands run for each task: `"+strings.Join(validation, "`, `")+"`", "")
	}
	checks := DetectChecks(f, dir)
	off, inPlan := unconfigured(checks, cfg.Gates.Commands, validation)
	for _, c := range checks {
		found := fmt.Sprintf("`%s` (%s)", c.Command, c.Why)
		switch {
		case slices.Contains(off, c):
			r.add(section, c.Name, CheckWarn, found+": found, not enabled",
				fmt.Sprintf("add %q to [gates] commands in ralph.toml", c.Command))
		case slices.Contains(inPlan, c):
			r.add(section, c.Name, CheckOK, found+": one of the plan's Validation Commands", "")
		default:
			r.add(section, c.Name, CheckOK, found+": enabled", "")
		}
	}
}

// FileExists says whether p is a regular file.
func FileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
