package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/session"
	"github.com/ralph-loop/ralph/internal/words"
)

type configOptions struct {
	f    *Factory
	All  bool
	JSON bool
}

const configLong = `Print the configuration a run in this project would use, merged from
the defaults, your ~/.config/ralph/config.toml, the project's ralph.toml
(or --config FILE) and the RALPH_* variables, each key with where its
value came from. Only the keys that differ from the defaults are shown;
--all shows every key.

Each line is TOML (key = value  # where), to copy into ralph.toml. A
secret (a webhook URL, a token, an agent's env table) is never shown:
the line says where it is set, as <set by RALPH_...> or <set in FILE>.
Values from a ralph.toml you have not trusted are marked: a run refuses
that file until you run ralph trust. Nothing is run.`

func newCmdConfig(f *Factory, runF func(*configOptions) error) *cobra.Command {
	opts := &configOptions{f: f}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the merged configuration and where each value came from",
		Long:  configLong,
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runConfigCmd(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "show every key, the defaults too")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the keys as a JSON array")
	return cmd
}

func runConfigCmd(opts *configOptions) error {
	dir, err := opts.f.ProjectDir()
	if err != nil {
		return err
	}
	env := opts.f.Environ()
	lo := config.LoadOptions{UserFile: config.UserFile(env), ProjectFile: filepath.Join(dir, "ralph.toml"), Environ: env}
	if opts.f.ConfigFile != "" {
		lo.ProjectFile, lo.ProjectFileRequired = opts.f.ConfigFile, true
	}
	_, err = opts.f.Config(dir)
	_, untrusted := session.IsUntrusted(err)
	settings, err := config.Explain(lo, untrusted)
	if err != nil {
		return err
	}
	var shown []config.Setting
	for _, s := range settings {
		if opts.All || !s.Default {
			s.Source = displaySource(s.Source)
			shown = append(shown, s)
		}
	}
	w := opts.f.IO.Out
	if opts.JSON {
		if shown == nil {
			shown = []config.Setting{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(shown)
	}
	if untrusted {
		fmt.Fprintf(w, "# %s is not trusted: a run refuses it until you run ralph trust\n", words.Path(lo.ProjectFile))
	}
	if len(shown) == 0 {
		_, err := fmt.Fprintln(w, "# every key has its default: ralph config --all lists them")
		return err
	}
	width := 0
	for _, s := range shown {
		width = max(width, len(s.Key)+3+len(s.Value))
	}
	width = min(width, 48) // a long value pushes its own comment, not every line's
	for _, s := range shown {
		line := s.Key + " = " + s.Value
		if s.Secret && !s.Default {
			// Not a value: kept a comment, so the output stays TOML.
			line = "# " + line
		}
		where := s.Source
		if s.Untrusted {
			where += ", not trusted"
		}
		fmt.Fprintf(w, "%-*s  # %s\n", width, line, where)
	}
	if !opts.All {
		_, err := fmt.Fprintln(w, "# the other keys have their defaults: ralph config --all lists every key")
		return err
	}
	return nil
}

// displaySource is a setting's source as the user would type it: a file
// relative to the working directory.
func displaySource(source string) string {
	file, line, ok := strings.Cut(source, ":")
	if !ok || !filepath.IsAbs(file) {
		return source
	}
	return words.Path(file) + ":" + line
}
