package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/agenthome"
	"github.com/ralph-loop/ralph/internal/sandbox"
	"github.com/ralph-loop/ralph/internal/serve"
)

// agentHomes are the per-run copies of the agents' own configuration
// (internal/agenthome) that a command's agents and reviewers work on in
// bubblewrap, one per agent: made before the agent's first start,
// synced each time the last of its processes exits (what it may keep is
// written back, the rest reported), removed when the command ends.
type agentHomes struct {
	env []string
	// dir holds the copies: $XDG_STATE_HOME/ralph/agenthome, outside
	// the project and outside /tmp (which the sandbox replaces).
	dir string

	mu    sync.Mutex
	homes map[string]*agentHome // by agent name
	// warn tells the user what changed; until the command can show it
	// (setWarn), what there is to tell waits in pending.
	warn    func(string)
	pending []string
	closed  bool
}

// agentHome is one agent's copy and the number of its processes at work
// in it.
type agentHome struct {
	home   *agenthome.Home
	copies []sandbox.Copy
	users  int
	// dirs are the directories the agent ran in (the project, a
	// worker's worktree), as given and with symbolic links resolved:
	// the sessions written back are theirs (agent.Spec.OwnSession). The
	// copy's Vet reads them during a Sync, which runs with
	// agentHomes.mu held, as every change to them does.
	dirs []string
}

func newAgentHomes(env []string) *agentHomes {
	h := &agentHomes{env: env, homes: map[string]*agentHome{}}
	if d := serve.StateDir(env); d != "" {
		h.dir = filepath.Join(d, "agenthome")
	}
	return h
}

// setWarn says how to tell the user, and tells what waited.
func (h *agentHomes) setWarn(warn func(string)) {
	h.mu.Lock()
	h.warn = warn
	h.mu.Unlock()
	h.flush()
}

// enter returns the copies the named agent works on, made at its first
// start, to run in dir; leave must follow when its process exits.
func (h *agentHomes) enter(name, dir string) ([]sandbox.Copy, error) {
	defer h.flush() // after the unlock
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("the run is over")
	}
	ah := h.homes[name]
	switch {
	case ah == nil:
		var err error
		if ah, err = h.open(name); err != nil {
			return nil, err
		}
		h.homes[name] = ah
	case ah.users == 0 && ah.home != nil:
		// A login refreshed outside the run since (it may rotate) is
		// the one the agent must use.
		if _, err := ah.home.Refresh(); err != nil {
			h.tell(err.Error())
		}
	}
	ah.addDir(dir)
	ah.users++
	return ah.copies, nil
}

// leave says one of the named agent's processes exited; after the last,
// its copy is synced.
func (h *agentHomes) leave(name string) {
	defer h.flush()
	h.mu.Lock()
	defer h.mu.Unlock()
	ah := h.homes[name]
	if ah == nil {
		return
	}
	if ah.users--; ah.users == 0 && ah.home != nil {
		h.sync(ah)
	}
}

// close syncs each copy a last time and removes it. It is called when no
// agent is at work any more (the command is ending), and again by a
// deferred call, which finds nothing left to do.
func (h *agentHomes) close() {
	defer h.flush()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for _, ah := range h.homes {
		if ah.home == nil {
			continue
		}
		h.sync(ah)
		if err := ah.home.Close(); err != nil {
			h.tell(err.Error())
		}
	}
}

// addDir adds dir, and its real path, to the directories the agent ran
// in.
func (ah *agentHome) addDir(dir string) {
	if dir == "" {
		return
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	for _, d := range []string{filepath.Clean(dir), real} {
		if !slices.Contains(ah.dirs, d) {
			ah.dirs = append(ah.dirs, d)
		}
	}
}

// notOwnSession is why a session file the agent wrote is not written
// back.
const notOwnSession = "not a session of this project: written for another project, it would be resumed there outside the sandbox"

// open makes the named agent's copy. An agent that declares nothing (the
// command agent) has none.
func (h *agentHomes) open(name string) (*agentHome, error) {
	spec, _ := agent.Lookup(name)
	ah := &agentHome{}
	l := agenthome.Layout{
		Roots:     h.expand(spec.ConfigDirs),
		Scratch:   h.expand(spec.Scratch),
		ReadOnly:  h.expand(spec.ReadOnly),
		WriteBack: h.expand(spec.WriteBack),
	}
	if len(l.Roots) == 0 {
		return ah, nil
	}
	if own := spec.OwnSession; own != nil {
		l.Vet = func(root, rel string, head io.Reader) string {
			if own(root, rel, head, ah.dirs) {
				return ""
			}
			return notOwnSession
		}
	}
	if h.dir == "" {
		return nil, errors.New("its per-run copy needs a state directory: set XDG_STATE_HOME or HOME")
	}
	home, err := agenthome.Open(l, agenthome.Options{Dir: h.dir, Home: Getenv(h.env, "HOME")})
	if err != nil {
		return nil, err
	}
	ah.home = home
	for _, b := range home.Binds() {
		ah.copies = append(ah.copies, sandbox.Copy{Path: b.Real, Source: b.Copy, ReadOnly: b.ReadOnly})
	}
	for _, c := range home.NotCopied() {
		h.tell(fmt.Sprintf("%s is %s: the %s agent's per-run copy of its configuration goes without it", c.Path, c.Detail, name))
	}
	return ah, nil
}

// expand makes a Spec's paths absolute; those whose variable is not set
// drop out.
func (h *agentHomes) expand(paths []string) []string {
	var out []string
	for _, p := range paths {
		if abs := agent.ExpandPath(p, h.env); abs != "" {
			out = append(out, abs)
		}
	}
	return out
}

// sync syncs ah's copy and tells what was discarded.
func (h *agentHomes) sync(ah *agentHome) {
	rep, err := ah.home.Sync()
	if err != nil {
		h.tell(err.Error())
	}
	for _, msg := range copyMessages(rep) {
		h.tell(msg)
	}
}

// tell queues msg for the user (the caller holds mu); flush tells what
// is queued, once the command can show it (setWarn). flush runs without
// mu: a renderer may take its time, and must not hold up the other
// agents' starts and exits.
func (h *agentHomes) tell(msg string) { h.pending = append(h.pending, msg) }

func (h *agentHomes) flush() {
	h.mu.Lock()
	warn, msgs := h.warn, h.pending
	if warn != nil {
		h.pending = nil
	}
	h.mu.Unlock()
	if warn == nil {
		return
	}
	for _, msg := range msgs {
		warn(msg)
	}
}

// configPaths are the agent's configuration directories and files that
// exist, absolute.
func configPaths(spec agent.Spec, env []string) []string {
	var out []string
	for _, p := range spec.ConfigDirs {
		if abs := agent.ExpandPath(p, env); abs != "" {
			if _, err := os.Lstat(abs); err == nil {
				out = append(out, abs)
			}
		}
	}
	return out
}

// copyMessages words a Sync's report: one line for what the agent
// changed in its configuration and lost with its copy, one for each
// write-back refused. What was written back goes unsaid: it is what the
// user expects.
func copyMessages(rep agenthome.Report) []string {
	const most = 5
	var changes, kept []string
	for _, c := range rep.Discarded {
		switch c.Kind {
		case agenthome.Kept:
			kept = append(kept, fmt.Sprintf("the agent changed %s, which ralph writes back, but %s: yours is kept", c.Path, c.Detail))
		case agenthome.Changed, agenthome.Added, agenthome.Removed:
			what := string(c.Kind) + " " + c.Path
			if c.Detail != "" {
				what += " (" + c.Detail + ")"
			}
			changes = append(changes, what)
		case agenthome.NotCopied:
		}
	}
	if len(changes) == 0 {
		return kept
	}
	what := "the change was"
	if len(changes) > 1 {
		what = "the changes were"
	}
	if len(changes) > most {
		changes = append(changes[:most:most], fmt.Sprintf("%d more", len(changes)-most))
	}
	msg := fmt.Sprintf("the agent %s; %s discarded (ralph keeps the agent's own configuration a per-run copy)", joinAnd(changes), what)
	return append([]string{msg}, kept...)
}

// joinAnd joins a list as a sentence does: "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
