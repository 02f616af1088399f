package receipt

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ralph-loop/ralph/internal/state"
	"github.com/ralph-loop/ralph/internal/words"
)

// FormatCost writes a sum of costs as a receipt shows it: "$0.1234"
// reported, "~$0.1234" estimated, "≥$0.1234" when some of it had no
// price, "unknown" when none had one.
func FormatCost(c Cost) string {
	switch {
	case c.USD == nil:
		return "unknown"
	case c.Unpriced > 0:
		return fmt.Sprintf("≥$%.4f", *c.USD)
	}
	return state.FormatCost(*c.USD, c.Source)
}

// WriteJSON writes the report as one JSON object.
func (rep Report) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(rep)
}

// WriteText writes the report as a table and its totals.
func (rep Report) WriteText(w io.Writer) error {
	if len(rep.Rows) == 0 {
		_, err := fmt.Fprintln(w, "no iterations yet")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch rep.By {
	case ByModel, ByAgent:
		head, other := "MODEL\tAGENTS", func(r Row) []string { return r.Agents }
		if rep.By == ByAgent {
			head, other = "AGENT\tMODELS", func(r Row) []string { return r.Models }
		}
		fmt.Fprintln(tw, head+"\tTASKS\tITERATIONS\tREVIEWS\tIN\tOUT\tCACHE R/W\tCOST")
		for _, r := range rep.Rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d/%d\t%s\n", r.Model+r.Agent, list(other(r)), len(r.Tasks),
				r.Iterations, r.Reviews, r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, FormatCost(r.Cost))
		}
	default:
		fmt.Fprintln(tw, "TASK\tATTEMPTS\tAGENTS\tMODELS\tTIME\tIN\tOUT\tCACHE R/W\tCOST\tVERIFIED\tENDED\tEVIDENCE")
		for _, r := range rep.Rows {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d/%d\t%s\t%s\t%s\t%s\n", r.TaskID, r.Attempts, list(r.Agents),
				list(r.Models), duration(r.DurationMS), r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens,
				FormatCost(r.Cost), yesNo(r.Verified), r.LastOutcome, EvidenceLine(r.Gates, r.Guard, r.Review))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, rep.Totals.Lines())
	return err
}

// Lines are the totals in two lines: what was done, then what it cost:
//
//	3 tasks, 2 verified · 5 iterations · 1 run · 4m2s
//	cost $0.5000 · per verified task $0.2500
func (t Totals) Lines() string {
	s := fmt.Sprintf("%s, %d verified · %s · %s · %s\n", words.Count(t.Tasks, "task"), t.TasksVerified,
		words.Count(t.Iterations, "iteration"), words.Count(t.Runs, "run"), duration(t.DurationMS))
	return s + "cost " + t.CostLine() + "\n"
}

// CostLine is the run's cost and its cost per verified task: "$0.5000 ·
// per verified task $0.2500"; "at least $0.5000 (2 iterations had no
// price) · per verified task at least $0.2500"; "... · per verified task
// n/a (none verified)".
func (t Totals) CostLine() string {
	total, per := "unknown", "n/a (none verified)"
	if t.USD != nil {
		total = state.FormatCost(*t.USD, t.Source)
	}
	if t.PerVerifiedTask != nil {
		per = state.FormatCost(*t.PerVerifiedTask, t.Source)
	} else if t.TasksVerified > 0 {
		per = "unknown"
	}
	if t.Unpriced > 0 && t.USD != nil {
		total = "at least " + strings.TrimPrefix(total, "≥")
		if t.PerVerifiedTask != nil {
			per = "at least " + strings.TrimPrefix(per, "≥")
		}
	}
	if t.Unpriced > 0 {
		total += fmt.Sprintf(" (%s had no price)", words.Count(t.Unpriced, "iteration"))
	}
	return total + " · per verified task " + per
}

// EvidenceLine says in a few words what checked a task: "gates 2/2 ok ·
// guard 0 findings · SHIP by claude/sonnet"; "" when nothing did.
func EvidenceLine(gates []state.GateRun, g *state.GuardEvidence, v *state.ReviewEvidence) string {
	var parts []string
	if len(gates) > 0 {
		ok := 0
		for _, run := range gates {
			if run.Result == "ok" {
				ok++
			}
		}
		parts = append(parts, fmt.Sprintf("gates %d/%d ok", ok, len(gates)))
	}
	if g != nil {
		parts = append(parts, "guard "+state.GuardLine(g))
	}
	if v != nil {
		parts = append(parts, state.ReviewLine(v))
	}
	return strings.Join(parts, " · ")
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "yes"
	}
	return "no"
}

func duration(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String()
}

// Line is a task's receipt in one line, as the page shows it: "2 attempts
// · sonnet,gpt-5 · 4130 tokens · cost ~$0.3500 · verified".
func (r Row) Line() string {
	parts := []string{words.Count(r.Attempts, "attempt")}
	if len(r.Models) > 0 {
		parts = append(parts, list(r.Models))
	}
	parts = append(parts, fmt.Sprintf("%d tokens", r.InputTokens+r.OutputTokens+r.CacheReadTokens+r.CacheWriteTokens),
		"cost "+FormatCost(r.Cost))
	switch {
	case r.Verified != nil && *r.Verified:
		parts = append(parts, "verified")
	case r.Verified != nil && r.LastOutcome == state.OutcomeTaskDone:
		parts = append(parts, "done, not verified")
	}
	return strings.Join(parts, " · ")
}
