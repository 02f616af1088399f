package tracker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"

	"github.com/ralph-loop/ralph/internal/task"
)

// Sync fetches src's tasks and writes them to path as a prd.json plan,
// the snapshot the run works on: the loop marks tasks done in it as in
// any plan file, so nothing it did is lost when the tracker cannot be
// reached.
//
// A task the snapshot already says is done stays done: the run finished
// it and the tracker may not have heard yet. A dependency on an item the
// query does not return is dropped (it is closed, or not ralph's work).
// A source with a Branch() method names the plan's branch (branchName),
// which the run checks out. The new plan is validated before it is written (a dependency cycle
// across issues is an error naming them) and nothing is written when it
// is invalid or unchanged.
//
// When the tracker cannot be reached and a snapshot exists, Sync keeps it
// and says so in warning; without one the error is returned.
func Sync(ctx context.Context, src Source, path string) (warning string, err error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	tasks, err := src.Tasks(ctx)
	if err != nil {
		if old != nil && ctx.Err() == nil && !IsPermanent(err) {
			return fmt.Sprintf("%s: %v; working from the snapshot %s", src.Name(), err, path), nil
		}
		return "", err
	}
	done := map[string]bool{}
	if old != nil {
		if p, err := task.ParseAs(task.FormatPRD, path, old); err == nil {
			for _, t := range p.Tasks {
				done[t.ID] = t.Status == task.StatusDone
			}
		}
	}
	ids := map[string]bool{}
	for _, t := range tasks {
		ids[t.ID] = true
	}
	plan := &task.Plan{Name: src.Name(), Tasks: make([]task.Task, 0, len(tasks))}
	if b, ok := src.(interface{ Branch() string }); ok {
		plan.Branch = b.Branch()
	}
	for _, t := range tasks {
		if done[t.ID] {
			t.Status = task.StatusDone
		}
		var deps []string
		for _, d := range t.DependsOn {
			if ids[d] {
				deps = append(deps, d)
			}
		}
		t.DependsOn = deps
		plan.Tasks = append(plan.Tasks, t)
	}
	data, err := task.Encode(task.FormatPRD, plan)
	if err != nil {
		return "", err
	}
	if _, err := task.ParseAs(task.FormatPRD, path, data); err != nil {
		return "", fmt.Errorf("%s: the issues do not make a valid plan; nothing written:\n%w", src.Name(), err)
	}
	if bytes.Equal(data, old) {
		return "", nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return "", renameio.WriteFile(path, data, 0o644)
}

// Permanent marks an error that waiting or a snapshot does not help: a
// repository that does not exist, a token without the scope.
type Permanent struct{ Err error }

func (e *Permanent) Error() string { return e.Err.Error() }
func (e *Permanent) Unwrap() error { return e.Err }

// IsPermanent reports whether err is a Permanent error.
func IsPermanent(err error) bool {
	var p *Permanent
	return errors.As(err, &p)
}
