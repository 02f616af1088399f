package state

import (
	"testing"
	"time"
)

func TestCombineCostSource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b, want string }{
		{"", "", ""},
		{"", CostReported, CostReported},
		{CostReported, CostEstimated, CostEstimated},
		{CostEstimated, CostReported, CostEstimated},
		{CostUnknown, CostEstimated, CostUnknown},
		{CostReported, "", CostReported},
	} {
		if got := CombineCostSource(tc.a, tc.b); got != tc.want {
			t.Errorf("CombineCostSource(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
	var tot Totals
	tot.AddRecord(Record{CostUSD: 1, CostSource: CostReported, Review: &ReviewEvidence{CostUSD: 0.5, CostSource: CostEstimated}}, 1)
	if tot.CostUSD != 1.5 || tot.CostSource != CostEstimated {
		t.Errorf("totals = %+v, want $1.5 estimated", tot)
	}
}

func TestFormatCost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		usd    float64
		source string
		want   string
	}{
		{0.5, CostReported, "$0.5000"},
		{0.5, "", "$0.5000"},
		{1.55, CostEstimated, "~$1.5500"},
		{0, CostUnknown, "$?"},
		{2, CostUnknown, "≥$2.0000"},
	} {
		if got := FormatCost(tc.usd, tc.source); got != tc.want {
			t.Errorf("FormatCost(%v, %q) = %q, want %q", tc.usd, tc.source, got, tc.want)
		}
	}
}

func TestQuotaWindowString(t *testing.T) {
	t.Parallel()
	u := 85.0
	reset := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	q := QuotaWindow{Status: "allowed_warning", Utilization: &u, ResetsAt: &reset}
	if got, want := q.String(), "allowed_warning, 85% used, resets 2026-11-30 18:00 UTC"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (QuotaWindow{Status: "allowed"}).String(); got != "allowed" {
		t.Errorf("String() = %q", got)
	}
}
