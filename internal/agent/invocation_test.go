package agent

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/golden"
)

// TestInvocationGolden pins every adapter's exact argv, environment and
// prompt passing (what --dry-run prints), with and without a model, with
// the per-agent overrides, and as root. The other engineers' end-to-end
// tests drive the real CLIs through these: a change here is a change of
// contract. Update with go test -run TestInvocationGolden -update.
func TestInvocationGolden(t *testing.T) {
	t.Parallel()
	req := Request{Prompt: "Fix the bug.\nThen say <promise>TASK_DONE</promise>.", PromptFile: "/run/iter-001.prompt.md", ScratchDir: "/tmp/ralph-agent-1"}
	cases := []struct {
		name      string
		opts      Options
		model     string
		noScratch bool
	}{
		{name: "defaults"},
		{name: "model", model: "big-model"},
		{name: "overrides", model: "big-model", opts: Options{
			Command: "/opt/bin/agent", Args: []string{"--custom", "flags"}, ExtraArgs: []string{"--verbose", "2"},
			Env: map[string]string{"B_KEY": "2", "A_URL": "http://127.0.0.1:1"},
		}},
		{name: "extra args only", opts: Options{ExtraArgs: []string{"--extra"}}},
		{name: "root", opts: Options{Root: true}},
		{name: "dry run (no scratch directory)", noScratch: true},
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			for _, c := range cases {
				opts := c.opts
				if name == "command" {
					// The command agent needs a program; its arguments
					// take placeholders.
					opts.Command = "/opt/bin/agent"
					if opts.Args == nil {
						opts.Args = []string{"run", "--model={model}", "{prompt_file}"}
					}
				}
				a, err := New(name, opts)
				if err != nil {
					t.Fatal(err)
				}
				r := req
				r.Model = c.model
				if c.noScratch {
					r.ScratchDir = ""
				}
				inv, err := a.Invocation(r)
				if err != nil {
					t.Fatal(err)
				}
				writeInvocation(&b, c.name, inv)
			}
			golden.Check(t, filepath.Join("testdata", "golden", name+".txt"), b.String())
		})
	}
}

func writeInvocation(b *strings.Builder, name string, inv Invocation) {
	fmt.Fprintf(b, "== %s\nprompt: %s\nargv:\n", name, inv.Prompt)
	for _, a := range inv.Argv {
		fmt.Fprintf(b, "  %s\n", strconv.Quote(a))
	}
	fmt.Fprintln(b, "env:")
	for _, kv := range inv.EnvSet {
		fmt.Fprintf(b, "  %s\n", strconv.Quote(kv))
	}
	if inv.Prompt == PromptStdin {
		fmt.Fprintf(b, "stdin: %s\n", strconv.Quote(inv.Stdin))
	}
	fmt.Fprintln(b)
}

// TestPromptPassing pins the rule the runner depends on: the prompt is on
// stdin, or stdin is empty and the prompt is in argv.
func TestPromptPassing(t *testing.T) {
	t.Parallel()
	req := Request{Prompt: "the prompt", PromptFile: "/p.md"}
	for _, name := range Names() {
		opts := Options{}
		if name == "command" {
			opts.Command = "x"
		}
		a, err := New(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		inv, err := a.Invocation(req)
		if err != nil {
			t.Fatal(err)
		}
		switch inv.Prompt {
		case PromptStdin:
			if inv.Stdin != req.Prompt {
				t.Errorf("%s: stdin %q, want the prompt", name, inv.Stdin)
			}
		case PromptArg:
			if inv.Stdin != "" || !strings.Contains(strings.Join(inv.Argv, "\x00"), req.Prompt) {
				t.Errorf("%s: prompt in argv %q, stdin %q", name, inv.Argv, inv.Stdin)
			}
		default:
			t.Errorf("%s: prompt passed as %q", name, inv.Prompt)
		}
	}
}

func TestErrorPatternOptions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		patterns map[string][]string
		wantErr  string
	}{
		{map[string][]string{"slow": {"x"}}, `codex agent: error-patterns: unknown kind "slow": want usage_limit, rate_limit, transient or fatal`},
		{map[string][]string{"fatal": {"("}}, "codex agent: error-patterns.fatal: error parsing regexp: missing closing ): `(?i)(`"},
	} {
		_, err := New("codex", Options{ErrorPatterns: tt.patterns})
		if err == nil || err.Error() != tt.wantErr {
			t.Errorf("New with %v: %v, want %q", tt.patterns, err, tt.wantErr)
		}
	}
}
