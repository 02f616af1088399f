package proc_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/ralph-loop/ralph/internal/proc"
)

// guardianArg is what makes the test binary a family's guardian, as the
// hidden subcommand does ralph.
const guardianArg = "__guardian"

// TestMain lets the test binary play two other parts: a family's guardian
// (re-executed by NewFamily), and a stand-in for ralph that a test can
// kill (PROC_TEST_RALPH).
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == guardianArg {
		signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
		proc.Guardian(os.Args[2], os.Stdin)
		os.Exit(0)
	}
	if mode := os.Getenv("PROC_TEST_RALPH"); mode != "" {
		os.Exit(fakeRalph(mode, os.Getenv("PROC_TEST_ID"), os.Getenv("PROC_TEST_SCRIPT")))
	}
	os.Exit(m.Run())
}

// fakeRalph starts script as ralph would, in a family with a guardian
// (mode "family") or in none ("bare"), copies what it prints to stdout,
// and then waits until stdin is closed or it is killed, which is the test's
// move.
func fakeRalph(mode, id, script string) int {
	ctx := context.Background()
	if mode == "family" {
		f, err := proc.NewFamily(id, proc.FamilyOptions{GuardianArgs: []string{guardianArg}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ctx = proc.WithFamily(ctx, f)
	}
	p, err := proc.Start(ctx, proc.Cmd{Argv: []string{"sh", "-c", script}, Pipes: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _, _ = io.Copy(io.Discard, p.Stderr) }()
	sc := bufio.NewScanner(p.Stdout)
	for sc.Scan() {
		fmt.Println(sc.Text())
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}
