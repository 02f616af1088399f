package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/proc"
)

// probeTimeout bounds a probe: a sandbox that takes longer to start a
// command that does nothing is broken.
const probeTimeout = 10 * time.Second

// Error is a sandbox that cannot work here: why, and what to do.
type Error struct {
	// Kind is the sandbox that was tried.
	Kind string
	// Reason says what failed, Fix what to do about it.
	Reason, Fix string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s cannot run here: %s; %s", e.Kind, e.Reason, e.Fix)
}

// Choice is the sandbox a run uses.
type Choice struct {
	// Mode is what was asked for (ModeAuto, ...).
	Mode string
	// Box is the sandbox in force; nil for none.
	Box *Box
	// Fallback says why auto runs without one; empty when it does not.
	Fallback string
}

// Kind is the sandbox in force: KindBwrap, KindSandboxExec or KindNone.
func (c Choice) Kind() string {
	if c.Box == nil {
		return KindNone
	}
	return c.Box.Kind()
}

// Wrapper is the Box as a proc.Wrapper; nil (no sandbox) when there is
// none, which a nil *Box must not be mistaken for.
func (c Choice) Wrapper() proc.Wrapper {
	if c.Box == nil {
		return nil
	}
	return c.Box
}

// Choose picks the sandbox for mode with policy p, ralph's environment
// being env (bwrap is looked for on its PATH). An explicit mode whose
// sandbox does not work (missing, refused by the kernel, the container
// or AppArmor) is an *Error: the run must not start. Auto takes the
// platform's sandbox when a real probe succeeds, and otherwise none,
// with the reason in Fallback. None is none.
func Choose(ctx context.Context, mode string, p Policy, env []string) (Choice, error) {
	c := Choice{Mode: mode}
	kind := kindOf(mode)
	if kind == KindNone {
		if mode != ModeNone {
			c.Fallback = "no sandbox exists for this platform (bubblewrap is Linux's, sandbox-exec macOS's)"
		}
		return c, nil
	}
	box, err := Open(ctx, kind, p, env)
	if err == nil {
		c.Box = box
		return c, nil
	}
	if mode != ModeAuto {
		return c, err
	}
	var se *Error
	if errors.As(err, &se) {
		c.Fallback = se.Reason + "; " + se.Fix
	} else {
		c.Fallback = err.Error()
	}
	return c, nil
}

// Open finds the sandbox program of kind and probes it with policy p: it
// runs `true` inside a Box, as every child would be run. The program is
// found as every program ralph runs outside the sandbox is, by the run's
// lookup (proc.Outside): a bwrap the agent wrote in the project, first
// on PATH, would run its children unconfined. The error is an *Error that
// names the reason and the fix.
func Open(ctx context.Context, kind string, p Policy, env []string) (*Box, error) {
	prog := "bwrap"
	if kind == KindSandboxExec {
		prog = "/usr/bin/sandbox-exec"
	}
	exe, err := proc.OutsideFrom(ctx, env, p.Writes(env)...).LookPath(prog)
	var held *proc.HeldError
	if errors.As(err, &held) {
		return nil, &Error{Kind: kind, Reason: err.Error(), Fix: "install it outside the project, or run with --sandbox none"}
	}
	if err != nil {
		return nil, missing(kind)
	}
	box, err := NewBox(kind, exe, p, env)
	if err != nil {
		return nil, err
	}
	if err := box.Probe(ctx); err != nil {
		return nil, err
	}
	return box, nil
}

// Probe starts `true` in the box, in the project, and reports why it
// failed, if it did.
func (b *Box) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var stderr bytes.Buffer
	res, err := proc.Run(ctx, proc.Cmd{Argv: []string{"true"}, Dir: b.policy.Project, Env: b.env,
		Sandbox: b, Stderr: &stderr, WaitDelay: time.Second})
	switch {
	case err != nil:
		return &Error{Kind: b.kind, Reason: err.Error(), Fix: "check the sandbox settings (sandbox.allow-write, sandbox.deny), or run with --sandbox none"}
	case ctx.Err() != nil:
		return &Error{Kind: b.kind, Reason: fmt.Sprintf("a probe did not finish within %s", probeTimeout), Fix: "run with --sandbox none"}
	case res.ExitCode != 0:
		return diagnose(b.kind, res.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// missing is the error of a sandbox program that is not installed.
func missing(kind string) *Error {
	if kind == KindSandboxExec {
		return &Error{Kind: kind, Reason: "/usr/bin/sandbox-exec is missing (macOS only)",
			Fix: "run on macOS, or with --sandbox none"}
	}
	return &Error{Kind: kind, Reason: "bubblewrap (bwrap) is not installed",
		Fix: "install it (apt-get install bubblewrap, dnf install bubblewrap, pacman -S bubblewrap), or run with --sandbox none"}
}

// diagnose turns a failed probe into its reason and fix, from what
// bubblewrap said and what the kernel allows.
func diagnose(kind string, code int, stderr string) *Error {
	said := stderr
	if said == "" {
		said = fmt.Sprintf("exit status %d", code)
	}
	e := &Error{Kind: kind, Reason: said}
	if kind != KindBwrap {
		e.Fix = "run with --sandbox none"
		return e
	}
	switch {
	case readSysctl("kernel/apparmor_restrict_unprivileged_userns") == "1" &&
		(strings.Contains(stderr, "Permission denied") || strings.Contains(stderr, "Operation not permitted")):
		e.Reason = "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04 and later): " + said
		e.Fix = "allow them for bwrap with an AppArmor profile (/etc/apparmor.d/bwrap: `abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }`, then apparmor_parser -r), " +
			"or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or run with --sandbox none"
	case readSysctl("kernel/unprivileged_userns_clone") == "0" || readSysctl("user/max_user_namespaces") == "0":
		e.Reason = "the kernel refuses user namespaces: " + said
		e.Fix = "sysctl -w kernel.unprivileged_userns_clone=1 (or user.max_user_namespaces=15000), or run with --sandbox none"
	case strings.Contains(stderr, "namespace") || strings.Contains(stderr, "Operation not permitted") ||
		strings.Contains(stderr, "Permission denied"):
		e.Reason = "new namespaces are refused, as in a container that forbids them: " + said
		e.Fix = "run the container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined (or --privileged), or run with --sandbox none"
	default:
		e.Fix = "check the sandbox settings (sandbox.allow-write, sandbox.deny), or run with --sandbox none"
	}
	return e
}

// readSysctl reads a kernel setting under /proc/sys; "" when there is
// none.
func readSysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
