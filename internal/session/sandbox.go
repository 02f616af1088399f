package session

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/notify"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/route"
	"github.com/ralph-loop/ralph/internal/sandbox"
	"github.com/ralph-loop/ralph/internal/serve"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/vcs"
)

// runSandbox is the sandbox a run's agents, reviewers and gates work in;
// ralph's own git, plan and state work stays outside it.
type runSandbox struct {
	choice sandbox.Choice
	// egress is ralph's proxy, the sandbox's way out with sandbox.network
	// = "proxy"; nil otherwise.
	egress *egressRun
	// homes are the per-run copies of the agents' own configuration,
	// which bubblewrap mounts in its place; nil with another sandbox or
	// none.
	homes *agentHomes
	// layers are the gates' throwaway layers over the toolchains' caches
	// and the in-tree stores (bubblewrap); nil with another sandbox or
	// none, or where they cannot be laid (cold says why).
	layers *sandbox.Layers
	// cold says why the gates get empty caches of their own on each run
	// (sandbox.ColdCaches) rather than layers over the user's.
	cold string
	// kept are the agent's own layers over the caches, one per slot,
	// kept across its iterations (bubblewrap, where the gates' layers can
	// be laid); nil otherwise, keptWhy saying why when it was tried.
	kept    *sandbox.Kept
	keptWhy string
}

// chooseSandbox probes the configured sandbox for the project in dir. An
// explicit one that cannot work here is an error, before any agent runs;
// auto without one that works is none, with the reason. With the network
// through ralph's proxy, the proxy serves until close; the caller closes
// it and the agents' copies of their configuration (closeHomes) when its
// agents are done.
func chooseSandbox(ctx context.Context, f *Host, cfg config.Config, dir string) (runSandbox, error) {
	c, err := sandbox.Choose(ctx, cfg.Sandbox.Mode, f.sandboxPolicy(ctx, cfg, dir), f.Environ())
	if err != nil {
		return runSandbox{}, fmt.Errorf("--sandbox %s: %w", cfg.Sandbox.Mode, err)
	}
	sb := runSandbox{choice: c}
	if c.Box != nil && c.Box.Kind() == sandbox.KindBwrap {
		sb.homes = newAgentHomes(f.Environ())
	}
	if sb.layers, sb.cold, err = gateLayers(ctx, f, cfg, dir, c); err != nil {
		return runSandbox{}, err
	}
	if sb.layers != nil {
		sb.kept, sb.keptWhy = agentLayers(ctx, f, cfg, c, *sb.layers)
	}
	if c.Box != nil && cfg.Sandbox.Network == config.NetworkProxy {
		// Each agent the run may start reaches its own API hosts: the
		// run's, the reviewer's, and those a route may name (a task's
		// own, escalate's, fallback's).
		agents := slices.Concat([]string{cfg.Agent, cmp.Or(cfg.Review.Agent, cfg.Agent)},
			route.New(route.FromConfig(cfg, "", "")).Agents(), route.New(route.ForReview(cfg)).Agents())
		if sb.egress, err = startEgress(ctx, cfg, c.Box.Kind(), agents); err != nil {
			return runSandbox{}, err
		}
		sb.choice.Box = c.Box.WithEgress(sb.egress.box)
	}
	return sb, nil
}

// gateLayers are the gates' throwaway layers in the sandbox c, probed;
// nil where they cannot be laid, with why (cold).
func gateLayers(ctx context.Context, f *Host, cfg config.Config, dir string, c sandbox.Choice) (*sandbox.Layers, string, error) {
	if c.Kind() != sandbox.KindBwrap {
		return nil, "sandbox " + c.Kind() + " cannot lay a throwaway layer over your caches", nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("ralph's own executable: %w", err)
	}
	l := sandbox.Layers{Exe: exe, Caches: sandbox.FindCaches(ctx, f.Environ(), dir, cfg.Sandbox.Caches),
		Stores: sandbox.DefaultStores()}
	if err := c.Box.ForGates(l).Probe(ctx); err != nil {
		return nil, "no throwaway layer can be laid over your caches here (" + err.Error() + ")", nil
	}
	return &l, "", nil
}

// agentLayers are the agent's own layers over the caches of l, probed:
// its builds read the user's caches and write to a layer of the run's,
// so that they neither fail on a read-only cache nor change the user's.
// Nil where they cannot be laid, with why: the agent then finds the
// caches read-only, as before.
func agentLayers(ctx context.Context, f *Host, cfg config.Config, c sandbox.Choice, l sandbox.Layers) (*sandbox.Kept, string) {
	base := sandbox.KeptBase(f.Environ())
	if base == "" {
		return nil, "no cache directory to keep the agent's layers in (neither XDG_CACHE_HOME nor HOME)"
	}
	k, err := sandbox.OpenKept(base)
	if err != nil {
		return nil, "the agent's cache layers: " + err.Error()
	}
	k.Exe, k.Caches, k.Max = l.Exe, l.Caches, int64(cfg.Sandbox.CacheMax)<<20
	if err := c.Box.ForAgent(k).Probe(ctx); err != nil {
		k.Close()
		return nil, "no layer of its own can be laid over your caches for the agent here (" + err.Error() + ")"
	}
	return k, ""
}

// close stops the sandbox's proxy, if it has one, and removes the
// agent's cache layers.
func (s runSandbox) close() {
	if s.egress != nil {
		s.egress.stop()
	}
	if s.kept != nil {
		s.kept.Close()
	}
}

// network is the account of the proxy's decisions for the loop; nil
// without a proxy.
func (s runSandbox) network() loop.Network {
	if s.egress == nil {
		return nil
	}
	return s.egress.network
}

// warnWith says how the run tells what the agents changed in their
// configuration and lost with its copy.
func (s runSandbox) warnWith(warn func(string)) {
	if s.homes != nil {
		s.homes.setWarn(warn)
	}
	if s.kept != nil {
		s.kept.SetWarn(warn)
	}
}

// closeHomes syncs the agents' copies of their configuration a last time,
// tells what was discarded (as warnWith said), and removes them. Call it
// when no agent is at work any more; a second call does nothing.
func (s runSandbox) closeHomes() {
	if s.homes != nil {
		s.homes.close()
	}
}

// sandboxPolicy is what a child of a run in dir may reach: the project
// (its state, ralph's own files and git's read-only: ralph reads the
// first two for itself, and its own git, outside the sandbox, obeys the
// git configuration and runs the hooks: vcs.ConfigFiles), the git
// directory its commits and worktrees need, the [sandbox] paths and
// variables.
func (f *Host) sandboxPolicy(ctx context.Context, cfg config.Config, dir string) sandbox.Policy {
	gitDir := vcs.CommonDir(dir)
	gitReadOnly, gitWritable := vcs.ConfigFiles(ctx, dir, f.Environ())
	readOnly := slices.Concat([]string{filepath.Join(dir, state.Dir)}, f.ralphFiles(cfg, dir), gitReadOnly)
	return sandbox.Policy{
		Project:   dir,
		Worktrees: filepath.Join(dir, state.Dir, state.WorktreesDir),
		GitDir:    gitDir,
		ReadOnly:  readOnly,
		Writable:  slices.Concat(gitWritable, cfg.Sandbox.AllowWrite),
		// ralph's control channel is ralph's: a socket in a read-only
		// directory still takes connections, so it is hidden.
		Hidden:  slices.Concat(sandbox.DefaultHidden(), cfg.Sandbox.Deny, []string{serve.SocketPath(dir)}),
		Env:     cfg.Sandbox.Env,
		Network: string(cfg.Sandbox.Network),
	}
}

// withPrograms returns ctx carrying the run's lookup of the programs
// ralph starts outside the sandbox (proc.Outside), made for a run in dir
// unless ctx has one already (a --worker's, whose task runs are its own):
// PATH without the places the agent can write, the project and the
// repository that holds it, the git directory, the worktrees and
// sandbox.allow-write. It is made before any git, bwrap or gh is looked
// for, and they all are through it.
func (f *Host) withPrograms(ctx context.Context, cfg config.Config, dir string) context.Context {
	if proc.OutsideOf(ctx) != nil {
		return ctx
	}
	env := f.Environ()
	p := sandbox.Policy{Project: dir, Worktrees: filepath.Join(dir, state.Dir, state.WorktreesDir), GitDir: vcs.CommonDir(dir),
		Writable: cfg.Sandbox.AllowWrite}
	return proc.WithOutside(ctx, proc.NewOutside(env, append(p.Writes(env), vcs.Top(dir))))
}

// ralphFiles are the files ralph reads for itself, read-only to every
// child, so that what takes effect at the next run is what the user
// wrote: the project's ralph.toml (an absent one cannot be bound; the
// next run asks for approval of one the agent makes), the --config file,
// the prompt files, and, outside the project, the user's config file and
// the trust store (the sandbox lets the agent write neither unless
// sandbox.allow-write reaches them; then these stay read-only).
func (f *Host) ralphFiles(cfg config.Config, dir string) []string {
	files := []string{filepath.Join(dir, "ralph.toml"), cfg.Prompt, cfg.Review.Prompt}
	if f.ConfigFile != "" {
		if abs, err := filepath.Abs(f.ConfigFile); err == nil {
			files = append(files, abs)
		}
	}
	if u := config.UserFile(f.Environ()); u != "" {
		files = append(files, u)
	}
	if d := f.TrustStore().Dir; d != "" {
		files = append(files, d)
	}
	var out []string
	for _, p := range files {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p) // as the run reads it
		}
		out = append(out, p)
	}
	return out
}

// agent is the sandbox of the named agent: the run's, with its variables
// passed in and its own configuration and session directories its to
// change: in bubblewrap a per-run copy of them (runAgent mounts it), under
// sandbox-exec, which cannot mount one, the directories themselves. Nil
// without a sandbox.
func (s runSandbox) agent(name string) *sandbox.Box {
	if s.choice.Box == nil {
		return nil
	}
	spec, _ := agent.Lookup(name)
	var writable []string
	if s.homes == nil {
		writable = spec.ConfigDirs
	}
	box := s.choice.Box.With(writable, slices.Concat(spec.Credentials.EnvVars, spec.Env))
	if s.kept != nil {
		box = box.ForAgent(s.kept)
	}
	return box
}

// notify is the sandbox notify.sandbox's command runs in: the run's,
// with only env's variables (notify.env) and the event's; nil without a
// sandbox.
func (s runSandbox) notify(env []string) proc.Wrapper {
	if s.choice.Box == nil {
		return nil
	}
	return s.choice.Box.Only(env).Passing(notify.EventVars())
}

// gates is the sandbox of the quality gates, with their throwaway layers
// where it can have them; nil without one.
func (s runSandbox) gates() proc.Wrapper {
	box := s.choice.Box
	if box != nil && s.egress != nil {
		box = box.WithGateEgress(s.egress.gate)
	}
	switch {
	case s.layers != nil:
		return box.ForGates(*s.layers)
	case box != nil:
		return box.Passing(sandbox.ColdVars())
	}
	return nil
}

// gateCaches is what gives each gate run empty caches of its own: nil
// where the layers do (gates); without a sandbox, the user's caches with
// replay switched off (sandbox.NoReplay).
func (s runSandbox) gateCaches() func([]string) ([]string, func(), error) {
	switch {
	case s.layers != nil:
		return nil
	case s.choice.Box == nil:
		return sandbox.NoReplay
	}
	return sandbox.ColdCaches
}

// gateWarnings say which toolchain caches the agent may write
// (sandbox.allow-write): gates get those empty, and what an earlier run
// let the agent put there is still the user's own builds' to replay.
func (s runSandbox) gateWarnings() []string {
	switch {
	case s.layers == nil && s.choice.Box == nil:
		return []string{"no sandbox: the gates use your toolchains' caches as they are, with stored test results never replayed (go test -count=1, pytest -p no:cacheprovider, ...)"}
	case s.layers == nil:
		return []string{"the gates get empty caches of their own on each run (cold, nothing replayed): " + s.cold}
	}
	warnings := agentWrittenWarnings(s.choice.Box, *s.layers)
	if s.keptWhy != "" {
		warnings = append(warnings, s.keptWhy+": the agent's own builds find your caches read-only")
	}
	return warnings
}

// agentWrittenWarnings say which caches of l the agent may write in box.
func agentWrittenWarnings(box *sandbox.Box, l sandbox.Layers) []string {
	written, err := box.AgentWritten(l)
	if err != nil {
		return []string{"the gates' layers: " + err.Error()}
	}
	var out []string
	for _, c := range written {
		out = append(out, fmt.Sprintf("the agent may write the cache %s (sandbox.allow-write): the gates get it empty, never as the agent left it; "+
			"drop it from sandbox.allow-write, and clean it (go clean -cache, for Go's), since your own builds would replay what an agent wrote there", c))
	}
	return out
}

// hooks is the sandbox of the git hooks ralph's commits run; nil without
// one.
func (s runSandbox) hooks() proc.Wrapper { return s.choice.Wrapper() }

// record is the sandbox as state.json and the run_started event say it.
func (s runSandbox) record() *state.Sandbox {
	return &state.Sandbox{Mode: s.choice.Mode, Kind: s.choice.Kind(), Warning: s.choice.Fallback}
}
