// Command fakemodel starts the fake model server by hand, to point an
// agent CLI at it and watch what it sends:
//
//	go run ./internal/fakemodel/cmd/fakemodel -scenario task-done -n 2
//	ANTHROPIC_BASE_URL=$URL ANTHROPIC_API_KEY=fake claude -p 'do it'
//
// It prints the base URL on the first line of stdout, then one line per
// request on stderr, until interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ralph-loop/ralph/internal/fakemodel"
)

const usage = `usage: fakemodel [flags]

Scenarios (the agent's turns, in order; requests without tools get "OK"):
  task-done    per task: the shell tool runs -command, then the text -text (default)
  text         the text -text, -n times
  rate-limit   HTTP 429 with Retry-After -retry-after, every request
  usage-limit  HTTP 429 "You've hit your limit · resets ..." (-reset from now), every request
  overloaded   HTTP 529, every request
  server-error HTTP 500, every request
  hang         no answer until the client disconnects, every request

Flags:
`

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("fakemodel", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	scenario := fs.String("scenario", "task-done", "what the model answers (see above)")
	n := fs.Int("n", 1, "tasks (task-done) or answers (text)")
	command := fs.String("command", "touch done-{n}.txt", "shell command of task-done; {n} is the task number")
	text := fs.String("text", "Done. <promise>TASK_DONE</promise>", "final text")
	retryAfter := fs.Duration("retry-after", 2*time.Second, "Retry-After of rate-limit")
	reset := fs.Duration("reset", time.Hour, "time until a usage-limit resets")
	noRetry := fs.Bool("no-retry", false, "error scenarios send x-should-retry: false")
	bodies := fs.String("bodies", "", "write each request body to `DIR`/NNN-API.json")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	turns, err := script(*scenario, *n, *command, *text, *retryAfter, *reset)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		return 2
	}
	opts := fakemodel.Options{Addr: *addr, Log: os.Stderr}
	if *bodies != "" {
		if err := os.MkdirAll(*bodies, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "fakemodel:", err)
			return 1
		}
		seq := 0
		opts.OnRequest = func(r fakemodel.Request) {
			seq++
			name := filepath.Join(*bodies, fmt.Sprintf("%03d-%s.json", seq, r.API))
			if err := os.WriteFile(name, r.Body, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "fakemodel:", err)
			}
		}
	}
	srv, err := fakemodel.Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		return 1
	}
	defer srv.Close()
	if *noRetry {
		for i := range turns {
			turns[i] = turns[i].WithoutRetry()
		}
	}
	srv.Script(turns...)
	fmt.Println(srv.URL)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return 0
}

func script(name string, n int, command, text string, retryAfter, reset time.Duration) ([]fakemodel.Turn, error) {
	switch name {
	case "task-done":
		var turns []fakemodel.Turn
		for i := 1; i <= n; i++ {
			turns = append(turns, fakemodel.Shell(strings.ReplaceAll(command, "{n}", strconv.Itoa(i))), fakemodel.Text(text))
		}
		return turns, nil
	case "text":
		return []fakemodel.Turn{fakemodel.Text(text).Times(n)}, nil
	case "rate-limit":
		return []fakemodel.Turn{fakemodel.RateLimit(retryAfter).Always()}, nil
	case "usage-limit":
		return []fakemodel.Turn{fakemodel.UsageLimit(time.Now().Add(reset)).Always()}, nil
	case "overloaded":
		return []fakemodel.Turn{fakemodel.Overloaded().Always()}, nil
	case "server-error":
		return []fakemodel.Turn{fakemodel.ServerError().Always()}, nil
	case "hang":
		return []fakemodel.Turn{fakemodel.Hang().Always()}, nil
	}
	return nil, fmt.Errorf("unknown scenario %q (want task-done, text, rate-limit, usage-limit, overloaded, server-error or hang)", name)
}
