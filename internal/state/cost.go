package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Where a cost comes from (cost_source in history, totals and events).
const (
	// CostReported: the agent reported the cost (Claude Code, OpenCode).
	CostReported = "reported"
	// CostEstimated: the agent reported tokens only, and ralph priced them
	// with its price table (internal/price).
	CostEstimated = "estimated"
	// CostUnknown: the agent reported tokens of a model ralph has no price
	// for; the cost counted is $0 for them.
	CostUnknown = "unknown"
)

// CombineCostSource is the source of a sum of two costs: the least certain
// of the two ("" counts for nothing).
func CombineCostSource(a, b string) string {
	rank := func(s string) int {
		switch s {
		case CostReported:
			return 1
		case CostEstimated:
			return 2
		case CostUnknown:
			return 3
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// FormatCost writes a cost as receipts show it: "$0.1234" reported,
// "~$0.1234" estimated, "≥$0.1234" when part of it is of unknown price
// ("unknown" when all of it is: never "$0", and no "$?" that reads as an
// error).
func FormatCost(usd float64, source string) string {
	switch source {
	case CostEstimated:
		return fmt.Sprintf("~$%.4f", usd)
	case CostUnknown:
		if usd == 0 {
			return "unknown"
		}
		return fmt.Sprintf("≥$%.4f", usd)
	}
	return fmt.Sprintf("$%.4f", usd)
}

// QuotaWindow is the latest known state of one of the account's usage
// windows (five_hour, seven_day, ...), as the agent last reported it.
type QuotaWindow struct {
	// Status is allowed, allowed_warning or rejected.
	Status string `json:"status"`
	// Utilization is the share of the window used, in percent, where the
	// agent reports it.
	Utilization *float64 `json:"utilization,omitempty"`
	// ResetsAt is when the window resets, where the agent said.
	ResetsAt *time.Time `json:"resets_at,omitempty"`
	// Step is how much of the window, in percent, the last iteration
	// used, where two reports in the same period tell.
	Step *float64 `json:"step,omitempty"`
	// UpdatedAt is when the agent reported it.
	UpdatedAt time.Time `json:"updated_at"`
	// Agent is the agent that reported the window: its account's. Empty
	// in a state an older ralph wrote: the run's agent's.
	Agent string `json:"agent,omitempty"`
}

// String is the window's state in a few words: "allowed_warning, 85% used,
// resets 2026-11-30 18:00 UTC".
func (q QuotaWindow) String() string {
	s := q.Status
	if q.Utilization != nil {
		s += fmt.Sprintf(", %.0f%% used", *q.Utilization)
	}
	if q.ResetsAt != nil {
		s += ", resets " + q.ResetsAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	return s
}

// CostKnown says whether any of the line's cost is known. A line of
// unknown cost has cost_source "unknown" and $0 (tokens of a model without
// a price, a plain-text agent that reports no usage), or, written by an
// older ralph, no cost_source and $0 (a crash, an agent of no usage):
// unknown, never free. An unknown line with a cost above $0 (an end
// review some of whose reviewers had no price) is known in part: at
// least that much.
func (r Record) CostKnown() bool {
	return r.CostUSD > 0 || (r.CostSource != "" && r.CostSource != CostUnknown)
}

// MarshalJSON writes the record with cost_usd null when its cost is
// unknown (CostKnown), in its place among the fields. (Read back, null
// leaves CostUSD at 0: no UnmarshalJSON is needed.)
func (r Record) MarshalJSON() ([]byte, error) {
	type fields Record // without the methods: no recursion
	data, err := json.Marshal(fields(r))
	if err != nil || r.CostKnown() {
		return data, err
	}
	return nullCost(data), nil
}

// CostKnown says whether any of the review's cost is known, as
// Record.CostKnown does for the agent's.
func (r ReviewEvidence) CostKnown() bool {
	return r.CostUSD > 0 || (r.CostSource != "" && r.CostSource != CostUnknown)
}

// MarshalJSON writes the review with cost_usd null when its cost is
// unknown (CostKnown).
func (r ReviewEvidence) MarshalJSON() ([]byte, error) {
	type fields ReviewEvidence
	data, err := json.Marshal(fields(r))
	if err != nil || r.CostKnown() {
		return data, err
	}
	return nullCost(data), nil
}

// nullCost makes the first cost_usd of an object's JSON, an unknown cost
// written $0, null. The object's own comes before any nested one (a
// record's before its review's), and a string's quotes are escaped, so no
// text can look like it.
func nullCost(data []byte) []byte {
	return bytes.Replace(data, []byte(`"cost_usd":0,`), []byte(`"cost_usd":null,`), 1)
}
