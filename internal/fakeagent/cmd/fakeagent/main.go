// Command fakeagent is the scriptable fake agent as a binary, for the
// whole-process benchmark and for trying ralph by hand. See package
// fakeagent for its scenario language.
package main

import (
	"os"

	"github.com/ralph-loop/ralph/internal/fakeagent"
)

func main() { os.Exit(fakeagent.Main()) }
