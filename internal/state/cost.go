package state

import (
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
// ("$?" when all of it is).
func FormatCost(usd float64, source string) string {
	switch source {
	case CostEstimated:
		return fmt.Sprintf("~$%.4f", usd)
	case CostUnknown:
		if usd == 0 {
			return "$?"
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
