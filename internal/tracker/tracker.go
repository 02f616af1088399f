// Package tracker connects a run to an issue tracker: the tracker's open
// work becomes a plan (kept as a snapshot in .ralph/ so a network failure
// mid-run loses nothing), what happens to each task is written back to
// it, and a run can end at a pull request whose feedback becomes tasks.
//
// The loop knows nothing of trackers: the command line loads the snapshot
// as an ordinary plan and turns the loop's events into write-backs. A
// tracker (GitHub now; Linear, Jira or GitLab later) implements the small
// interfaces below and nothing else changes.
package tracker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/task"
)

// Source lists a tracker's open work as tasks, in the tracker's order.
type Source interface {
	// Name is the plan as the user wrote it: github:OWNER/REPO.
	Name() string
	// Tasks returns the open items of the query as tasks. Their status is
	// done where the tracker says ralph finished them (a label).
	Tasks(ctx context.Context) ([]task.Task, error)
}

// WriteBack records what happened to a task in the tracker. Each call is
// idempotent: calling it again (a retry, a rerun after a crash) leaves
// the tracker as one call would, with no second comment and no label
// added and removed again.
type WriteBack interface {
	Started(ctx context.Context, u Update) error
	Done(ctx context.Context, u Update) error
	Failed(ctx context.Context, u Update) error
	// Stopped says the run ended (a limit, Ctrl-C) with the task
	// started and neither done nor failed: it is no longer in progress.
	Stopped(ctx context.Context, u Update) error
}

// Tracker is a plan source that takes write-backs.
type Tracker interface {
	Source
	WriteBack
}

// PullRequests is a tracker's code review: the one pull (or merge)
// request of a run branch, and what its checks and reviewers ask of it.
type PullRequests interface {
	// CheckWrite fails when the credentials may not write, before
	// anything is pushed or written.
	CheckWrite(ctx context.Context) error
	// OpenOrUpdate makes the one open request from pr.Head say pr.
	OpenOrUpdate(ctx context.Context, pr PullRequest) (PullResult, error)
	// Feedback is what request n asks for, as tasks.
	Feedback(ctx context.Context, n int) (Feedback, error)
	// Answer tells the author of the feedback behind task id (a review
	// comment) which commit addressed it, once; other tasks need no
	// answer.
	Answer(ctx context.Context, n int, id, commit string) error
}

// PullRequest is what a run's pull request should say.
type PullRequest struct {
	// Head is the run branch, Base the branch it merges into ("" is the
	// repository's default branch).
	Head, Base  string
	Title, Body string
	Draft       bool
}

// PullResult is the pull request as it is after OpenOrUpdate.
type PullResult struct {
	Number  int
	URL     string
	Created bool
	Draft   bool
}

// Feedback is what a pull request asks of its branch.
type Feedback struct {
	// Branch is the request's head branch.
	Branch string
	// Tasks are the failing checks and unanswered review comments.
	Tasks []task.Task
	// Pending counts the checks still running.
	Pending int
}

// Update is what a write-back says about a task.
type Update struct {
	Task  task.Task
	RunID string
	// Receipt adds up the task's iterations; Error is the last one's
	// error, for Failed.
	Receipt Receipt
	Error   string
	// Status is how the run ended, for Stopped.
	Status string
}

// Receipt is what a task cost and the evidence that it is done, from the
// history.
type Receipt struct {
	Iterations int
	Duration   time.Duration
	Tokens     int64
	CostUSD    float64
	// Commits are the task's commits, oldest first.
	Commits []string
	// Gates, Guard and Review are the evidence of the accepted claim, one
	// line each (state's GatesLine, GuardLine, ReviewLine); empty where
	// the step did not run.
	Gates, Guard, Review string
	// Verdict is the reviewer's verdict (SHIP, REVISE), if one ran.
	Verdict string
	// LastError is the last failed iteration's error.
	LastError string
	// RunID is the run that finished the task.
	RunID string
}

// ReceiptOf adds up the history lines of task id (every run's).
func ReceiptOf(history []state.Record, id string) Receipt {
	var r Receipt
	for _, rec := range history {
		if rec.TaskID != id {
			continue
		}
		r.Iterations++
		r.Duration += time.Duration(rec.DurationMS) * time.Millisecond
		r.Tokens += rec.InputTokens + rec.OutputTokens + rec.CacheReadTokens + rec.CacheWriteTokens
		r.CostUSD += rec.CostUSD
		if rec.Commit != "" {
			r.Commits = append(r.Commits, rec.Commit)
		}
		if rec.Error != "" {
			r.LastError = rec.Error
		}
		if rec.Outcome == state.OutcomeTaskDone {
			r.RunID = rec.RunID
			r.Gates = state.GatesLine(rec.Gates)
			r.Guard, r.Review, r.Verdict = "", "", ""
			if rec.Guard != nil {
				r.Guard = state.GuardLine(rec.Guard)
			}
			if rec.Review != nil {
				r.Review = state.ReviewLine(rec.Review)
				r.Verdict = rec.Review.Verdict
			}
		}
	}
	return r
}

// Line is the receipt in one line: "2 iterations, 1m30s, 12.3k tokens,
// $0.42".
func (r Receipt) Line() string {
	parts := []string{fmt.Sprintf("%d iteration%s", r.Iterations, plural(r.Iterations)),
		r.Duration.Round(time.Second).String(), tokens(r.Tokens) + " tokens"}
	if r.CostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", r.CostUSD))
	}
	return strings.Join(parts, ", ")
}

func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ShortCommit is a commit id cut to 12 characters.
func ShortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
