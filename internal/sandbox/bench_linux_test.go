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
// layers over two caches and pytest's store (bwrap+layers).
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
	}{{"none", nil}, {"bwrap", box}, {"bwrap+layers", gates}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				res, err := proc.Run(b.Context(), proc.Cmd{Argv: []string{"true"}, Dir: proj, Env: env, Sandbox: bc.box})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exit %d: %v", res.ExitCode, err)
				}
			}
		})
	}
}
