package ui

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ralph-loop/ralph/internal/loop"
	"github.com/ralph-loop/ralph/internal/state"
)

// TestPlainRunEnded: the last line counts in English and does not repeat
// a status as its reason ("ralph interrupted: interrupted").
func TestPlainRunEnded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status, msg string
		iterations  int
		want        string
	}{
		{"interrupted", "interrupted", 1, "ralph interrupted · 0/2 tasks done · 1 iteration ·"},
		{"done", "all tasks done", 2, "ralph done: all tasks done · 0/2 tasks done · 2 iterations ·"},
		{"stuck", "stuck: 3 iterations in a row", 3, "ralph stuck: 3 iterations in a row · 0/2 tasks done · 3 iterations ·"},
	} {
		var out bytes.Buffer
		NewPlain(&out, PlainOptions{}).Handle(loop.Event{Kind: loop.EventRunEnded, Status: tc.status, Message: tc.msg,
			Plan: &loop.PlanProgress{Total: 2}, Totals: &state.Totals{Iterations: tc.iterations}})
		if !strings.HasPrefix(out.String(), tc.want) {
			t.Errorf("run ended %s/%q: got %q, want it to start %q", tc.status, tc.msg, out.String(), tc.want)
		}
	}
}

// TestPlainIterationEnded: one file is "1 file".
func TestPlainIterationEnded(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	NewPlain(&out, PlainOptions{}).Handle(loop.Event{Kind: loop.EventIterationEnded,
		Record: &state.Record{Outcome: state.OutcomeTaskDone, FilesChanged: 1}})
	if !strings.Contains(out.String(), "· 1 file") || strings.Contains(out.String(), "1 files") {
		t.Errorf("got %q, want it to say 1 file", out.String())
	}
}

// TestPlainLeftOut: what the commits left out, then the .gitignore lines
// as the user pastes them, one a line.
func TestPlainLeftOut(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	NewPlain(&out, PlainOptions{}).Handle(loop.Event{Kind: loop.EventLeftOut,
		Message: "left out of commits: __pycache__/ (3 files), coverage.xml (1 file) — add to .gitignore:",
		LeftOut: []loop.LeftOut{{Line: "__pycache__/", Files: 3}, {Line: "coverage.xml", Files: 1}}})
	want := "  ⊘ left out of commits: __pycache__/ (3 files), coverage.xml (1 file) — add to .gitignore:\n" +
		"    __pycache__/\n    coverage.xml\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// TestPlainAgentSwitched: who hands over to whom, and why.
func TestPlainAgentSwitched(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	NewPlain(&out, PlainOptions{}).Handle(loop.Event{Kind: loop.EventAgentSwitched, From: "claude", To: "codex",
		Message: "codex stands in for claude, limited until 2026-06-01T17:00:00Z"})
	want := "  ⇄ agent claude → codex: codex stands in for claude, limited until 2026-06-01T17:00:00Z\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// TestPlainIterationStartedOn: a route's choice follows the task.
func TestPlainIterationStartedOn(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	NewPlain(&out, PlainOptions{}).Handle(loop.Event{Kind: loop.EventIterationStarted, Iteration: 3,
		Task: &loop.TaskRef{ID: "A", Title: "Task A"}, Message: "on claude:opus (escalated to rung 1 of 1 after 2 failed attempts)"})
	want := "[3] A Task A · on claude:opus (escalated to rung 1 of 1 after 2 failed attempts)\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
