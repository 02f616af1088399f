// Package loop is ralph's engine: the iteration state machine and the
// policies that decide what each agent run means (done, retry, wait, stop).
//
// It never prints and never spawns processes itself: it talks to the agent,
// the plan, the store, the repository and the gates through the small
// interfaces declared here, and reports what happens as Events that
// renderers show.
package loop

import (
	"context"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// Agent runs one agent invocation.
type Agent interface {
	Name() string
	// Invocation is what Run would start, for --dry-run.
	Invocation(req agent.Request) (agent.Invocation, error)
	Run(ctx context.Context, req agent.Request, sink agent.Sink) (agent.Result, error)
}

// Plan is the tasks file as the loop needs it.
type Plan interface {
	Plan() *task.Plan
	SetStatus(id string, st task.Status) error
	// Reload re-reads the file; changed reports whether it differed.
	Reload() (changed bool, err error)
	// Modified reports whether the file on disk differs from what was last
	// read or written.
	Modified() (bool, error)
	// Restore writes back what was last read or written.
	Restore() error
	// MergeEdits takes in an edit made on disk since the last read or
	// write, as runner ownership allows: status changes reverted, deleted
	// tasks restored, the rest kept (task.File.MergeEdits).
	MergeEdits() (task.Edits, error)
}

// Network is what the sandbox's proxy saw of the agent's requests.
type Network interface {
	// Watch starts an iteration's account; refused is called at each
	// refusal, as it happens (from another goroutine). end stops the
	// account and returns its lines, one per host.
	Watch(refused func(message string)) (end func() []string)
}

// Store keeps state.json, history and transcripts.
type Store interface {
	LoadState() (state.State, error)
	SaveState(state.State) error
	AppendHistory(state.Record) error
	History() ([]state.Record, error)
	IterationFiles(runID string, iteration int) (promptPath, outPath string, err error)
}

// Repo is the version control the loop commits to. Nil means none.
type Repo interface {
	// Changes lists the files (absolute paths) whose content changed since
	// the previous call, ralph's own files excepted; the first call sets
	// the baseline. It may run while Commit or Dirty does.
	Changes(ctx context.Context) ([]string, error)
	// Dirty reports whether Commit would find anything to commit.
	Dirty(ctx context.Context) (bool, error)
	// Commit records every change but ralph's own files; it returns "" when
	// there was nothing to commit.
	Commit(ctx context.Context, message string) (string, error)
}

// Gate runs the quality checks a task must pass before it is accepted.
// Nil means none.
type Gate interface {
	Check(ctx context.Context, t task.Task) (ok bool, output string, err error)
}

// Trees reads the working tree by content, as tree ids, for what checks a
// task's work beside the gates: the tamper guard reads the diff since the
// task started, the reviewer reads it too, and what a reviewer changed is
// put back. Nil means none: no guard, and reviewers get no diff.
type Trees interface {
	// Snapshot identifies the working tree's content (ralph's own files
	// excepted) as a tree id.
	Snapshot(ctx context.Context) (string, error)
	// Seen is the tree id of the working tree as the last look (Snapshot,
	// or Repo's Changes) saw it, without looking again.
	Seen(ctx context.Context) (string, error)
	// Diff is the patch between two trees, with a few lines of context,
	// the files in exclude (absolute paths) left out. An empty to is the
	// tree the last look saw; that diff may run beside Seen, and beside
	// Repo's Dirty.
	Diff(ctx context.Context, from, to string, exclude []string) ([]byte, error)
	// Files reads files (relative to the top of the tree, with slashes)
	// as tree has them; a file not there is missing from the map.
	Files(ctx context.Context, tree string, paths []string) (map[string][]byte, error)
	// RestoreTree puts the working tree back to tree: changed files as
	// they were, new ones removed. It returns the files it put back.
	RestoreTree(ctx context.Context, tree string) ([]string, error)
}
