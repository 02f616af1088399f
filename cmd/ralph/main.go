//go:build !windows

// Command ralph runs AI coding agents in a loop until a plan is done.
package main

import (
	"os"

	"github.com/ralph-loop/ralph/internal/cli"
)

// The linker sets these (-X main.version=… in .goreleaser.yaml and the
// Makefile): ldflags can only set package-level strings, so they live here,
// once, and go to cli as a value. A `go install` build leaves them empty and
// cli reads the same facts from the build information Go records.
var (
	version string
	commit  string
	date    string
)

func main() {
	os.Exit(cli.Main(cli.BuildInfo{Version: version, Commit: commit, Date: date}))
}
