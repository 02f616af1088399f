package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ralph-loop/ralph/internal/proc"
)

// BenchmarkStart is what the sandbox adds to each agent (and gate) start:
// starting `true` and waiting for it, without a sandbox and inside
// bubblewrap with a run's policy (the project, its git directory, an
// agent's directories, the default hidden paths), the layout resolved
// afresh as for every child; and a gate's start, with its throwaway
// layers over two caches and pytest's store (bwrap+layers), and as the
// gate runner starts it (Watch), with the throwaway layers over the home
// and whatever else the gate sees but may not keep, listed after
// (bwrap+layers+home: the name it had when the home's was the only one).
func BenchmarkStart(b *testing.B) {
	root, err := os.MkdirTemp("/var/tmp", "ralph-sandbox-bench-") //nolint:usetesting // outside /tmp on purpose: the sandbox's private /tmp would hide it
	if err != nil {
		b.Skip("no /var/tmp: ", err)
	}
	defer os.RemoveAll(root)
	proj := filepath.Join(root, "proj")
	for _, d := range []string{"proj/.git/hooks", "proj/.ralph", "home/.claude", "home/.ssh", "home/.cache/go-build", "home/go/pkg/mod", "proj/.pytest_cache"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	env := append(os.Environ(), "HOME="+filepath.Join(root, "home"))
	p := Policy{Project: proj, Worktrees: filepath.Join(proj, ".ralph/worktrees"), GitDir: filepath.Join(proj, ".git"),
		ReadOnly: []string{".ralph", ".git/hooks", ".git/config"}, Writable: []string{"~/.claude", "~/.claude.json"},
		Hidden: DefaultHidden(), Env: []string{"ANTHROPIC_*"}, Network: NetworkOpen}
	box, err := Open(b.Context(), KindBwrap, p, env)
	if err != nil {
		b.Skip("bubblewrap cannot run here: ", err)
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	gates := box.ForGates(Layers{Exe: exe, Caches: []string{"~/.cache/go-build", "~/go/pkg/mod"}, Stores: DefaultStores()})
	for _, bc := range []struct {
		name string
		box  proc.Wrapper
		// watched: a gate run as the gate runner starts it (Watch), with
		// its throwaway layers, listed after.
		watched bool
	}{{"none", nil, false}, {"bwrap", box, false}, {"bwrap+layers", gates, false}, {"bwrap+layers+home", gates, true}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				w, seen := bc.box, func() Seen { return Seen{} }
				if bc.watched {
					if w, seen, err = gates.Watch(); err != nil {
						b.Fatal(err)
					}
				}
				res, err := proc.Run(b.Context(), proc.Cmd{Argv: []string{"true"}, Dir: proj, Env: env, Sandbox: w})
				if s := seen(); err != nil || res.ExitCode != 0 || len(s.ReadOnly) > 0 {
					b.Fatalf("exit %d: %v (%s)", res.ExitCode, err, s.ReadOnly)
				}
			}
		})
	}
}
