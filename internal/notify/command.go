package notify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/proc"
)

// command runs notify.command, a shell command, with the event in its
// environment, through proc like every child ralph starts.
//
// The user trusts the command, not the files it names: a script of the
// project's (`sh scripts/notify.sh`) is the agent's to rewrite, and would
// run as the user. So outside the sandbox, the default, sh is ralph's own
// (proc.Outside), the command runs with that PATH, in a directory outside
// the project, and a command naming a file the agent can write is
// refused at start (checkWords; best effort: a shell command can reach a
// file in ways no reading of it finds). With notify.sandbox it runs in the
// run's sandbox instead, in the project, with only notify.env's variables.
type command struct {
	cmd, dir string
	env      []string
	// sh is the shell, found by ralph's lookup; "" in the sandbox, where
	// proc finds it on the command's PATH.
	sh string
	// sandbox, when set, confines the command.
	sandbox proc.Wrapper
}

// EventVars are the variables a command is given the event in.
func EventVars() []string {
	return []string{"RALPH_EVENT", "RALPH_MESSAGE", "RALPH_EVENT_JSON", "RALPH_TASK_ID", "RALPH_RUN_ID", "RALPH_PROJECT"}
}

// newCommand sets up cfg.Command as opts say, or says why it must not
// run.
func newCommand(cfg config.Notify, opts Options) (command, error) {
	if cfg.Sandbox {
		if opts.Sandbox == nil {
			return command{}, errors.New("[notify] sandbox = true runs notify.command in the run's sandbox, and this run has none " +
				"(sandbox.mode = \"none\", or auto found no sandbox that works here)")
		}
		return command{cmd: cfg.Command, dir: opts.Dir, env: opts.Environ, sandbox: opts.Sandbox}, nil
	}
	programs := opts.Programs
	if programs == nil {
		programs = proc.NewOutside(opts.Environ, []string{opts.Dir})
	}
	env := programs.Environ(environ(opts.Environ))
	if err := checkWords(cfg.Command, opts.Dir, env, programs); err != nil {
		return command{}, err
	}
	sh, err := programs.LookPath("sh")
	if err != nil {
		return command{}, fmt.Errorf("[notify] command: %w", err)
	}
	return command{cmd: cfg.Command, dir: outsideDir(env, programs), env: env, sh: sh}, nil
}

// checkWords refuses a command a word of which names a file in a place
// the agent can write: a word that holds a slash is a path (a relative
// one is taken from the project directory, dir; variables and ~ are
// expanded from env), but a URL's; an option's value (--x=/p) and a
// curl @file count too.
func checkWords(cmd, dir string, env []string, programs *proc.Outside) error {
	for _, w := range shellWords(cmd) {
		p := pathIn(w, env)
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if place, held := programs.Held(p); held {
			return fmt.Errorf("[notify] command names %s, which is in %s, where the agent can write: ralph would run what "+
				"the agent made of it as you, outside the sandbox; name a file outside the project, or set notify.sandbox = true "+
				"to run the command in the sandbox", w, place)
		}
	}
	return nil
}

// pathIn is the path a shell word names, "" when it names none.
func pathIn(w string, env []string) string {
	if strings.HasPrefix(w, "-") {
		_, v, ok := strings.Cut(w, "=")
		if !ok {
			return ""
		}
		w = v
	} else if name, v, ok := strings.Cut(w, "="); ok && isName(name) {
		w = v // an assignment: VAR=/path cmd
	}
	w = strings.TrimPrefix(w, "@")
	w = os.Expand(w, func(name string) string { return lookup(env, name) })
	if w == "~" || strings.HasPrefix(w, "~/") {
		w = lookup(env, "HOME") + w[1:]
	}
	if !strings.Contains(w, "/") || strings.Contains(w, "://") {
		return ""
	}
	return w
}

// isName reports whether s is a shell variable's name.
func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return r != '_' && (r < '0' || r > '9') && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z')
	}) < 0
}

// shellWords splits a shell command into its words as sh reads them,
// near enough for checkWords: quotes removed, a backslash escaping the
// next character, the operators (; & | < > ( ) and `) between words.
func shellWords(s string) []string {
	var words []string
	var b strings.Builder
	in := false // a word is being read
	end := func() {
		if in {
			words = append(words, b.String())
		}
		b.Reset()
		in = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			in = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			in = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
		case c == '\\':
			in = true
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case strings.IndexByte(" \t\n;&|<>()`", c) >= 0:
			end()
		default:
			in = true
			b.WriteByte(c)
		}
	}
	end()
	return words
}

// outsideDir is where the command runs: HOME, unless the agent can write
// it (then /): not the project, where a relative name would be the
// agent's file.
func outsideDir(env []string, programs *proc.Outside) string {
	if home := lookup(env, "HOME"); filepath.IsAbs(home) {
		if _, held := programs.Held(home); !held {
			return home
		}
	}
	return "/"
}

func (command) name() string { return "command" }
func (c command) send(ctx context.Context, e Event) error {
	task := ""
	if e.Task != nil {
		task = e.Task.ID
	}
	env := append(append([]string(nil), c.env...),
		"RALPH_EVENT="+e.Event, "RALPH_MESSAGE="+e.Text, "RALPH_EVENT_JSON="+string(payload(e)),
		"RALPH_TASK_ID="+task, "RALPH_RUN_ID="+e.RunID, "RALPH_PROJECT="+e.Project)
	out := proc.NewTail(1 << 10)
	// The delivery's timeout is ctx's: when it expires the command's group
	// is killed at once.
	res, err := proc.Run(ctx, proc.Cmd{
		Path: c.sh, Argv: []string{"sh", "-c", c.cmd}, Dir: c.dir, Env: env,
		Stdout: out, Stderr: out, Sandbox: c.sandbox,
	})
	if err != nil {
		return fmt.Errorf("`%s`: %w", c.cmd, err)
	}
	took := res.Duration.Round(time.Millisecond)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errors.New(oneLine(fmt.Sprintf("`%s` timed out after %s: %s", c.cmd, took, out), 300))
	case res.ExitCode != 0:
		return errors.New(oneLine(fmt.Sprintf("`%s` exited %d after %s: %s", c.cmd, res.ExitCode, took, out), 300))
	}
	return nil
}

// environ is env, or ralph's own when nil.
func environ(env []string) []string {
	if env != nil {
		return env
	}
	return os.Environ()
}

// lookup is the last value of name in env.
func lookup(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
