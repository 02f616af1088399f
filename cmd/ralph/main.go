// Command ralph runs AI coding agents in a loop until a plan is done.
package main

import (
	"os"

	"github.com/ralph-loop/ralph/internal/cli"
)

func main() { os.Exit(cli.Main()) }
