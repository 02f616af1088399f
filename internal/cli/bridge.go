package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ralph-loop/ralph/internal/egress"
	"github.com/ralph-loop/ralph/internal/proc"
	"github.com/ralph-loop/ralph/internal/sandbox"
)

// bridgeGrace is how long the bridge gives its command after a SIGTERM:
// ralph's own stop sends it and kills the whole sandbox after its grace,
// so the bridge never cuts that short.
const bridgeGrace = 10 * time.Minute

// bridge is the hidden command (sandbox.BridgeCommand) a bubblewrap
// sandbox runs around its command when the network goes through ralph's
// proxy (sandbox.Egress), never a user: it listens on the sandbox's own
// loopback, carries each connection to the proxy's socket, and runs the
// command with the variables that name it. It is the command's parent: a
// stop's SIGTERM reaches it, and it passes the stop on. It returns the
// command's exit status.
func bridge(argv []string, errOut io.Writer) int {
	fs := flag.NewFlagSet(sandbox.BridgeCommand, flag.ContinueOnError)
	fs.SetOutput(errOut)
	socket := fs.String("socket", "", "the proxy's unix socket")
	noProxy := fs.String("no-proxy", "", "hosts the command reaches on its own loopback, comma-separated")
	if err := fs.Parse(argv); err != nil {
		return ExitUsage
	}
	if *socket == "" || fs.NArg() == 0 {
		fmt.Fprintln(errOut, "ralph "+sandbox.BridgeCommand+": want --socket PATH -- COMMAND [ARG...]")
		return ExitUsage
	}
	var hosts []string
	if *noProxy != "" {
		hosts = strings.Split(*noProxy, ",")
	}
	code, err := runBridge(context.Background(), *socket, hosts, fs.Args())
	if err != nil {
		fmt.Fprintln(errOut, "ralph "+sandbox.BridgeCommand+":", err)
		return ExitFailure
	}
	return code
}

// runBridge serves the bridge on 127.0.0.1 and runs argv with it as its
// proxy, returning the command's exit status.
func runBridge(ctx context.Context, socket string, noProxy, argv []string) (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("the sandbox's loopback: %w", err)
	}
	bctx, stopBridge := context.WithCancel(ctx)
	bridged := make(chan error, 1)
	go func() { bridged <- egress.Bridge(bctx, ln, socket) }()
	defer func() {
		stopBridge()
		<-bridged
	}()

	// A stop's SIGTERM (and Ctrl-C's SIGINT, SIGHUP) ends the command
	// through proc: SIGTERM to its group, then its grace.
	sctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(sandbox.ProxyVars(), k)
	})
	env = append(env, sandbox.ProxyEnv("http://"+ln.Addr().String(), noProxy)...)
	dir, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	res, err := proc.Run(sctx, proc.Cmd{
		Argv: argv, Dir: dir, Env: env,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Grace: bridgeGrace,
	})
	if err != nil {
		if proc.IsNotFound(err) {
			return 127, err // as a shell says it: the agent's adapter reads it so
		}
		return 0, err
	}
	return res.ExitCode, nil
}
