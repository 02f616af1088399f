package loop

import (
	"context"
	"fmt"

	"github.com/ralph-loop/ralph/internal/task"
)

// commit records the iteration's changes, one commit per accepted task. It
// returns the new commit's hash, or "" when commits are off, there is no
// repository, or nothing changed. A failing commit is a warning: the task's
// state is already saved and must not be lost over it.
func (r *runner) commit(ctx context.Context, t task.Task, doneIDs []string) string {
	if !r.opts.Commit || r.deps.Repo == nil {
		return ""
	}
	subject := t
	if len(doneIDs) > 0 {
		if dt, ok := r.deps.Plan.Plan().Task(doneIDs[0]); ok {
			subject = dt
		}
	}
	msg, err := commitMessage(r.opts.CommitTemplate, subject)
	if err != nil {
		r.warn("%v", err)
		return ""
	}
	if len(doneIDs) == 0 {
		msg = fmt.Sprintf("chore: ralph iteration %d (%s, in progress)", r.st.Iteration, t.ID)
	} else {
		msg = withTrailers(msg, r.trailers)
	}
	hash, err := r.deps.Repo.Commit(ctx, msg)
	if err != nil {
		r.warn("commit failed; the task's state is kept and its changes stay uncommitted for the next commit: %v", err)
		return ""
	}
	if hash == "" && len(doneIDs) > 0 && r.opts.Ownership == OwnerRunner {
		// In agent ownership the agent may well have committed itself.
		r.warn("nothing to commit for %s: no file changed, the plan file included", subject.ID)
	}
	return hash
}
