package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/prompt"
	"github.com/ralph-loop/ralph/internal/state"
)

type initOptions struct {
	f     *Factory
	Force bool
}

func newCmdInit(f *Factory, runF func(*initOptions) error) *cobra.Command {
	opts := &initOptions{f: f}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create ralph.toml, a prompt template and an example prd.json",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runInit(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite existing files")
	return cmd
}

const examplePRD = `{
  "project": "example",
  "branchName": "ralph/example",
  "description": "An example plan: replace these stories with your own.",
  "userStories": [
    {
      "id": "US-001",
      "title": "Add a greeting script",
      "description": "As a user, I want hello.sh to print a greeting.",
      "acceptanceCriteria": ["hello.sh prints 'hello, world'", "hello.sh is executable"],
      "priority": 1,
      "passes": false,
      "notes": ""
    },
    {
      "id": "US-002",
      "title": "Greet by name",
      "description": "As a user, I want hello.sh NAME to greet NAME.",
      "acceptanceCriteria": ["hello.sh Ada prints 'hello, Ada'", "without an argument it still prints 'hello, world'"],
      "priority": 2,
      "passes": false,
      "notes": "",
      "dependsOn": ["US-001"]
    }
  ]
}
`

// promptFileName is the prompt template init writes for the user to edit.
const promptFileName = "ralph-prompt.md"

func runInit(opts *initOptions) error {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	files := []struct{ name, body string }{
		{"ralph.toml", configTemplate()},
		{promptFileName, prompt.Default("runner")},
		{"prd.json", examplePRD},
	}
	if !opts.Force {
		var exist []string
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
				exist = append(exist, f.name)
			}
		}
		if len(exist) > 0 {
			return fmt.Errorf("%s already exist%s; nothing written (use --force to overwrite)",
				strings.Join(exist, ", "), map[bool]string{true: "s", false: ""}[len(exist) == 1])
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.body), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(opts.f.IO.Out, "wrote %s\n", f.name)
	}
	if changed, err := state.EnsureGitignore(dir); err != nil {
		return err
	} else if changed {
		fmt.Fprintln(opts.f.IO.Out, "added .ralph/ to .gitignore")
	}
	_, err = fmt.Fprintln(opts.f.IO.Out, "next: edit prd.json, then `ralph run --dry-run` to see the first prompt, and `ralph run`")
	return err
}

// configTemplate is a ralph.toml with every key, commented out at its
// default.
func configTemplate() string {
	var b strings.Builder
	b.WriteString("# ralph settings. Precedence: defaults < ~/.config/ralph/config.toml < this file\n")
	b.WriteString("# < RALPH_<KEY> environment variables < command-line flags.\n\n")
	for _, k := range config.Keys() {
		fmt.Fprintf(&b, "# %s\n# %s = %s\n\n", k.Doc, k.Key, k.Default)
	}
	fmt.Fprintf(&b, "# Use your own prompt template (see %s):\n# prompt = %q\n\n", promptFileName, promptFileName)
	b.WriteString("# Per-agent overrides:\n# [agents.claude]\n# extra-args = [\"--max-turns\", \"50\"]\n# env = { CLAUDE_CODE_MAX_OUTPUT_TOKENS = \"32000\" }\n")
	return b.String()
}
