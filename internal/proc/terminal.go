package proc

import (
	"context"
	"io"
	"os"
	"os/exec"
)

// RunOnTerminal runs the program at path (argv[0] its name) on the
// user's terminal tty, with in as its standard input: a pager. Unlike
// every other child it stays in ralph's process group, the terminal's
// foreground one, since a pager reads its keys from the terminal, which
// a background group may not; ralph waits for it and does nothing else
// meanwhile. ctx done kills it.
func RunOnTerminal(ctx context.Context, path string, argv, env []string, in io.Reader, tty *os.File) error {
	cmd := exec.CommandContext(ctx, path)
	cmd.Args, cmd.Env = argv, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, tty, tty
	return cmd.Run()
}
