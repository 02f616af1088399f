// Package sandbox confines the processes that do a run's work (agents,
// reviewers, quality gates) so that they can change the project and
// nothing else: on Linux with bubblewrap (bwrap), on macOS with
// sandbox-exec. It turns a Policy (what is writable, what is hidden, which
// variables go in, whether the network is on) into the command line that
// starts a child inside it, a proc.Wrapper that proc applies once the
// child's executable is found; it also probes whether the sandbox works
// on this machine and says why not, with the fix.
//
// It must not start ralph's own work in a sandbox (git, plan and state
// writes stay outside), decide when a run may go on without one (that is
// the command line's: auto falls back loudly, an explicit request fails
// closed), or know the agents: their directories and variables come in
// through Box.With, the copies of their configuration (internal/agenthome)
// through Box.WithCopies.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/ralph-loop/ralph/internal/proc"
)

// The values of the sandbox.mode key (--sandbox).
const (
	// ModeAuto uses the platform's sandbox when a probe shows it works,
	// and otherwise runs unconfined with a warning.
	ModeAuto = "auto"
	// ModeBwrap requires bubblewrap; ModeSandboxExec requires macOS's
	// sandbox-exec. Either fails the run when it cannot work.
	ModeBwrap       = "bwrap"
	ModeSandboxExec = "sandbox-exec"
	// ModeNone runs children unconfined, with ralph's environment.
	ModeNone = "none"
)

// Modes are the values of the sandbox.mode key.
func Modes() []string { return []string{ModeAuto, ModeBwrap, ModeSandboxExec, ModeNone} }

// The kinds of sandbox a Box is, as state.json and the run header say.
const (
	KindBwrap       = "bwrap"
	KindSandboxExec = "sandbox-exec"
	KindNone        = "none"
)

// Policy is what a confined child may reach. Paths are absolute, or
// written "~/x" (under HOME), "$VAR/x" (under a variable's value; dropped
// when it is not set) or relative to the project.
type Policy struct {
	// Project is the project directory. A child working in it (or below
	// it) may write all of it but ReadOnly; one working in a task's
	// worktree, below Worktrees, may write that worktree only.
	Project string
	// Worktrees holds the worktrees of --parallel's tasks; empty for none.
	Worktrees string
	// GitDir is the repository's (common) git directory, writable for the
	// commits and worktrees a child makes; empty without git.
	GitDir string
	// ReadOnly are paths inside the writable ones that stay read-only:
	// ralph's state, the git hooks and config (which ralph's own git,
	// outside the sandbox, would run and obey).
	ReadOnly []string
	// Writable are further paths a child may write: the agent's own
	// configuration and session directories, sandbox.allow-write.
	Writable []string
	// Hidden are paths a child cannot see at all (DefaultHidden,
	// sandbox.deny); they win over Writable.
	Hidden []string
	// Env names the variables passed in besides BaseEnv: the agent's
	// credentials, sandbox.env. NAME* is a prefix.
	Env []string
	// Network is how a child reaches the network: NetworkOpen (the
	// host's network), NetworkOff (a loopback of its own, nothing else)
	// or NetworkProxy (that, and ralph's proxy: Egress).
	Network string
	// Egress is where a child reaches ralph's proxy with NetworkProxy.
	Egress *Egress
}

// Writes are the places a child may write, as paths (env giving ~ and
// $VAR their values; those not set left out): the project, the
// worktrees, the git directory and the Writable paths. What ralph runs
// outside the sandbox is never found there (proc.Outside).
func (p Policy) Writes(env []string) []string {
	b := Box{env: env}
	var out []string
	for _, w := range slices.Concat([]string{p.Project, p.Worktrees, p.GitDir}, p.Writable) {
		if e := b.expand(w, p.Project); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// The values of Policy.Network.
const (
	NetworkOpen  = "open"
	NetworkOff   = "off"
	NetworkProxy = "proxy"
)

// Egress is how a child with a network of its own reaches ralph's proxy,
// its only way out. With bubblewrap the child's loopback is its own: a
// bridge (ralph's hidden __sandbox-bridge command, run in the sandbox
// around the child) listens on it and passes each connection to the
// proxy's unix socket, which is bound in. With sandbox-exec the child
// shares the host's loopback, and the profile lets it reach the proxy's
// TCP address and nothing else.
type Egress struct {
	// Socket is the proxy's unix socket (bwrap); Addr its TCP address on
	// the host's loopback (sandbox-exec).
	Socket, Addr string
	// Bridge is ralph's executable, which has the bridge command (BridgeCommand).
	Bridge string
	// NoProxy are the hosts a child reaches on its own loopback, not
	// through the proxy (NO_PROXY): its own servers, for its tests.
	NoProxy []string
}

// BridgeCommand is the hidden command of ralph's that bridges a child's
// loopback to the proxy (Egress).
const BridgeCommand = "__sandbox-bridge"

// bridgeSocket is where the proxy's socket is bound in a bwrap sandbox:
// in its private /tmp, which is its own to create it in.
const bridgeSocket = "/tmp/.ralph-egress.sock"

// ProxyVars are the variables that name a proxy, or say when to use one;
// with NetworkProxy the child's are ralph's (ProxyEnv), whatever ralph's
// environment says.
func ProxyVars() []string {
	return []string{"http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
		"NODE_USE_ENV_PROXY"}
}

// DefaultHidden are the paths no confined child sees: keys, cloud and
// cluster credentials, tokens, and the sockets of services that would run
// a command for it outside the sandbox (Docker, containerd, podman, the
// system and session buses, systemd).
func DefaultHidden() []string {
	return []string{
		"~/.ssh", "~/.aws", "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker", "~/.gnupg",
		"~/.config/gh", "~/.netrc", "~/.git-credentials",
		"$XDG_RUNTIME_DIR", "/run/user", "/run/dbus", "/var/run/dbus", "/run/docker.sock", "/var/run/docker.sock",
		"/run/containerd", "/run/podman", "/run/systemd/private",
	}
}

// BaseEnv are the variables every confined child gets when they are set:
// what a program needs to find its tools and home, its user, language,
// time zone and terminal, its way out through a proxy (with the proxy's
// certificates), where its toolchain lives, and git's identity. Every
// other variable of ralph's environment stays out (GITHUB_TOKEN, AWS_*,
// ...), unless the agent declares it or sandbox.env names it.
func BaseEnv() []string {
	return []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ",
		"TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR",
		"http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
		"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
		"GOROOT", "GOPATH", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOTOOLCHAIN", "CARGO_HOME", "RUSTUP_HOME",
		"JAVA_HOME", "VIRTUAL_ENV",
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
		"GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM",
	}
}

// Copy is a private copy of a path that a child sees in the path's place,
// writable: an agent's own configuration (internal/agenthome), where the
// agent finds it and where what it changes stays in the copy.
type Copy struct {
	// Path is where the child sees the copy; Source is the copy.
	Path, Source string
	// ReadOnly are paths in Path the child sees as the host has them,
	// read-only, over the copy (the programs a CLI installs there).
	ReadOnly []string
}

// Box is a sandbox that works on this machine, with the policy its
// children get. It is a proc.Wrapper; its methods return changed copies.
type Box struct {
	kind string
	// exe is the sandbox program (bwrap, sandbox-exec).
	exe    string
	policy Policy
	// copies are mounted over their paths.
	copies []Copy
	// env is ralph's environment, which ~ and $VAR in paths are read from.
	env []string
	// pass are variables one invocation sets itself (Passing).
	pass []string
	// tmp is the directory a bwrap child gets a private one of.
	tmp string
	// layers are a gate's throwaway layers (ForGates); nil for an agent.
	layers *Layers
	// kept are the agent's layers over the caches (ForAgent); nil for a
	// gate, or where they cannot be laid.
	kept *Kept
	// gateEgress opens a gate run's own listener of the proxy (Watch);
	// nil: the run's.
	gateEgress GateEgress
}

// NewBox returns a box of kind (KindBwrap, KindSandboxExec) that runs
// children with exe under p, paths expanded against env. It does not
// check that the sandbox works: Probe does.
func NewBox(kind, exe string, p Policy, env []string) (*Box, error) {
	if kind != KindBwrap && kind != KindSandboxExec {
		return nil, fmt.Errorf("sandbox: unknown kind %q", kind)
	}
	if !filepath.IsAbs(p.Project) {
		return nil, fmt.Errorf("sandbox: the project directory %q is not absolute", p.Project)
	}
	return &Box{kind: kind, exe: exe, policy: p, env: slices.Clone(env), tmp: privateTmp}, nil
}

// Kind is the sandbox's kind: KindBwrap or KindSandboxExec.
func (b *Box) Kind() string { return b.kind }

// With returns the box with more writable paths and variables: an
// agent's own directories and credential variables.
func (b *Box) With(writable, env []string) *Box {
	c := *b
	c.policy.Writable = slices.Concat(b.policy.Writable, writable)
	c.policy.Env = slices.Concat(b.policy.Env, env)
	return &c
}

// Only returns the box letting in, besides BaseEnv, the variables env
// names and no other of its policy's (sandbox.env, an agent's keys): for
// a child that is the user's, not the agent's (notify.sandbox's command,
// with notify.env).
func (b *Box) Only(env []string) *Box {
	c := *b
	c.policy.Env = slices.Clone(env)
	c.pass = nil
	return &c
}

// WithEgress returns the box with its children going out through
// ralph's proxy at e, when its policy's network is NetworkProxy.
func (b *Box) WithEgress(e Egress) *Box {
	c := *b
	c.policy.Egress = &e
	return &c
}

// WithCopies returns the box with copies mounted in their paths' place.
// Only bubblewrap can mount one: sandbox-exec makes the path itself
// writable instead (a change there is the user's), so a caller that wants
// the copy uses it with bwrap alone (Kind).
func (b *Box) WithCopies(copies []Copy) *Box {
	c := *b
	c.copies = slices.Concat(b.copies, copies)
	return &c
}

// Passing returns the box letting in, besides its policy's variables,
// those named: the ones an invocation sets itself (an adapter's
// IS_SANDBOX, the user's [agents.NAME] env), which are meant for the
// child.
func (b *Box) Passing(names []string) proc.Wrapper {
	c := *b
	c.pass = slices.Concat(b.pass, names)
	return &c
}

// Wrap returns how l starts inside the box: the sandbox program with
// the policy as its arguments, the command after them, the environment
// filtered. Its working directory must be the project, or below it.
func (b *Box) Wrap(l proc.Launch) (proc.Launch, error) {
	r, err := b.resolve(l)
	if err != nil {
		return proc.Launch{}, err
	}
	switch b.kind {
	case KindBwrap:
		switch {
		case b.layers != nil:
			return b.wrapLayered(l, r), nil
		case b.kept != nil:
			return b.wrapKept(l, r), nil
		}
		return b.wrapBwrap(l, r), nil
	default:
		return b.wrapSandboxExec(l, r), nil
	}
}

// Reach is what a child working in the project can reach, paths
// resolved, those that do not exist left out: for doctor.
type Reach struct {
	Writable, ReadOnly, Hidden []string
	// Env are the names of the variables passed in (NAME* a prefix).
	Env     []string
	Network string
}

// Reach says what a child in the project can reach.
func (b *Box) Reach() (Reach, error) {
	r, err := b.resolve(proc.Launch{Path: "/bin/true", Argv: []string{"true"}, Dir: b.policy.Project, Env: b.env})
	if err != nil {
		return Reach{}, err
	}
	out := Reach{Env: slices.Concat(BaseEnv(), b.policy.Env), Network: b.policy.Network}
	if b.policy.Network == NetworkProxy {
		// Behind the proxy the variables that name one are ralph's, set
		// in the sandbox, not ralph's own passed in.
		out.Env = slices.DeleteFunc(out.Env, func(name string) bool { return slices.Contains(ProxyVars(), name) })
	}
	for _, m := range r.binds {
		switch {
		case m.source != "":
			out.Writable = append(out.Writable, m.path+" (a per-run copy)")
		case m.writable:
			out.Writable = append(out.Writable, m.path)
		default:
			out.ReadOnly = append(out.ReadOnly, m.path)
		}
	}
	if r.tmp != "" {
		out.Writable = append(out.Writable, r.tmp+" (private)")
	}
	for _, h := range r.hidden {
		out.Hidden = append(out.Hidden, h.path)
	}
	return out, nil
}

// NativeKind is the sandbox this platform has: bwrap on Linux,
// sandbox-exec on macOS, none elsewhere.
func NativeKind() string {
	switch runtime.GOOS {
	case "linux":
		return KindBwrap
	case "darwin":
		return KindSandboxExec
	}
	return KindNone
}

// kindOf is the kind of box a mode asks for ("" for auto: the native one).
func kindOf(mode string) string {
	switch mode {
	case ModeBwrap:
		return KindBwrap
	case ModeSandboxExec:
		return KindSandboxExec
	case ModeNone:
		return KindNone
	}
	return NativeKind()
}

// matchName reports whether name is matched by pattern: equal, or a
// pattern ending in * that is a prefix of it.
func matchName(pattern, name string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return pattern == name
}

// MakeDirs creates the writable directories of the policy that do not
// exist yet (a file, named with an extension such as ~/.claude.json, is
// left for its program to create): a program that would create its
// directory on first use finds the home read-only in the sandbox.
func (b *Box) MakeDirs() error {
	var errs []error
	for _, w := range b.policy.Writable {
		p := b.expand(w, b.policy.Project)
		if p == "" || filepath.Ext(strings.TrimPrefix(filepath.Base(p), ".")) != "" {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.MkdirAll(p, 0o700); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
