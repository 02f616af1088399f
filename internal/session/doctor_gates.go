package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/gate"
	"github.com/ralph-loop/ralph/internal/sandbox"
	"github.com/ralph-loop/ralph/internal/state"
)

// doctorRunGates runs the gates a run would (the configured commands and
// the plan's Validation Commands) once, in the sandbox c as a run's gates
// get it, each within --gates-timeout: a failing one is a failure, as the
// run's baseline would stop on it; one out of time a warning. It lists the
// files the gates left in the tree. Only a config the user approved
// names commands for doctor to run. With sandbox.network = "proxy" they
// go out through ralph's proxy as a run's do, and a gate that fails while
// the proxy refused it a host says so, with the key.
func doctorRunGates(ctx context.Context, r *DoctorReport, f *Host, opts DoctorOptions, dir string, cfg config.Config, trusted bool, c sandbox.Choice) {
	const section = "gates"
	if !trusted {
		r.add(section, "run", CheckWarn, "not run: ralph.toml is not trusted", "run ralph trust, then ralph doctor again")
		return
	}
	commands := slices.Clone(cfg.Gates.Commands)
	if plan, err := OpenPlan(dir, cfg.Tasks); err == nil {
		commands = append(commands, plan.Plan().Validation...)
	}
	if len(commands) == 0 {
		return
	}
	layers, cold, err := gateLayers(ctx, f, cfg, dir, c)
	if err != nil {
		r.add(section, "run", CheckFail, err.Error(), "")
		return
	}
	sb := runSandbox{choice: c, layers: layers, cold: cold}
	if c.Box != nil && cfg.Sandbox.Network == config.NetworkProxy {
		// Through ralph's proxy, as a run's gates go: a host it allows
		// is reached, and one it refuses is named as the sandbox's
		// refusal, each gate through a listener of its own.
		e, err := startEgress(ctx, cfg, c.Box.Kind(), []string{cfg.Agent})
		if err != nil {
			r.add(section, "run", CheckFail, err.Error(), "")
			return
		}
		defer e.stop()
		sb.egress = e
		sb.choice.Box = c.Box.WithEgress(e.box)
	}
	runner := gate.Runner{Dir: dir, Timeout: opts.GatesTimeout, Env: f.Environ(), Sandbox: sb.gates(), Fresh: sb.gateCaches()}
	before := treeFiles(dir)
	for _, command := range commands {
		res, err := runner.RunCommand(ctx, command)
		var refused *gate.SandboxError
		switch {
		case errors.As(err, &refused):
			r.add(section, command, CheckFail, refused.Summary(),
				"allow what the gate needs with the key named, or change the gate: ralph run stops on it before any change")
		case err != nil:
			r.add(section, command, CheckFail, err.Error(), "")
		case res.TimedOut:
			r.add(section, command, CheckWarn, fmt.Sprintf("ran out of --gates-timeout (%s): not known to pass", opts.GatesTimeout),
				"run ralph doctor --gates-timeout with more time, or --no-gates")
		case res.ExitCode != 0:
			r.add(section, command, CheckFail, fmt.Sprintf("failed (exit %d after %s): %s", res.ExitCode,
				res.Duration.Round(time.Millisecond), lastLines(res.Output, 5)),
				"fix the project or the gate: ralph run stops on a gate that fails before any change")
		default:
			r.add(section, command, CheckOK, fmt.Sprintf("passed (%s)", res.Duration.Round(time.Millisecond)), "")
		}
	}
	if left := changedFiles(before, treeFiles(dir)); len(left) > 0 {
		r.add(section, "left", CheckOK, "the gates left these in the tree: "+strings.Join(left, ", "), "")
	}
}

// fileStamp is what tells a file changed: its size and time.
type fileStamp struct {
	size int64
	mod  time.Time
}

// treeFiles are the files under dir, but for git's and ralph's own
// directories, with their stamps.
func treeFiles(dir string) map[string]fileStamp {
	out := map[string]fileStamp{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == ".git" || rel == state.Dir {
				return filepath.SkipDir
			}
			return nil
		}
		if fi, err := d.Info(); err == nil {
			out[rel] = fileStamp{size: fi.Size(), mod: fi.ModTime()}
		}
		return nil
	})
	return out
}

// changedFiles are the files of after that are not in before, or
// changed, sorted; the first 20 and how many more.
func changedFiles(before, after map[string]fileStamp) []string {
	var out []string
	for p, st := range after {
		if old, ok := before[p]; !ok || old != st {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("and %d more", len(out)-20))
	}
	return out
}

// lastLines are the last n lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
