// Command timedagent is the fake agent (internal/fakeagent) that also
// records its own run, for the bench's ralphex scenario: installed on PATH
// as claude, it appends "START END" (Unix nanoseconds, from its main's
// first line to its last, before it exits) to $BENCH_AGENT_LOG, so that
// what a runner spends outside the agent is measured the same way for
// every runner, whatever it records itself. With $BENCH_GIT_LOG set it
// first appends a line "agent" there: the git stand-in's log is then cut
// into the runner's start, its iterations and its end.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/ralph-loop/ralph/internal/fakeagent"
)

func main() {
	start := time.Now()
	if err := appendLine(os.Getenv("BENCH_GIT_LOG"), "agent\n"); err != nil {
		fmt.Fprintln(os.Stderr, "timedagent:", err)
		os.Exit(2)
	}
	code := fakeagent.Main()
	end := time.Now()
	if err := appendLine(os.Getenv("BENCH_AGENT_LOG"), fmt.Sprintf("%d %d\n", start.UnixNano(), end.UnixNano())); err != nil {
		fmt.Fprintln(os.Stderr, "timedagent:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// appendLine appends line to the file at path, unless path is empty.
func appendLine(path, line string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
