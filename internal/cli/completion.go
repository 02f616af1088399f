package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newCmdCompletion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Print a shell completion script. For example:

  ralph completion bash > /etc/bash_completion.d/ralph
  ralph completion zsh > "${fpath[1]}/_ralph"
  ralph completion fish > ~/.config/fish/completions/ralph.fish`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args:      args(cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs)),
		RunE: func(cmd *cobra.Command, a []string) error {
			root := cmd.Root()
			switch a[0] {
			case "bash":
				return root.GenBashCompletionV2(f.IO.Out, true)
			case "zsh":
				return root.GenZshCompletion(f.IO.Out)
			case "fish":
				return root.GenFishCompletion(f.IO.Out, true)
			}
			return usageError(fmt.Errorf("unknown shell %q", a[0]))
		},
	}
}
