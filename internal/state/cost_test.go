package state

import (
	"encoding/json"
	"strings"
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
		{0, CostUnknown, "unknown"},
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

// An unknown cost is written null and read back unknown; a line of an
// older ralph ($0, no cost_source) reads as unknown, never as free.
func TestUnknownCostIsNull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		rec   Record
		json  string
		known bool
	}{
		{"unknown", Record{CostSource: CostUnknown}, `"cost_usd":null,"cost_source":"unknown"`, false},
		{"free", Record{CostSource: CostEstimated}, `"cost_usd":0,"cost_source":"estimated"`, true},
		{"reported", Record{CostUSD: 0.5, CostSource: CostReported}, `"cost_usd":0.5,"cost_source":"reported"`, true},
		{"in part", Record{CostUSD: 0.5, CostSource: CostUnknown}, `"cost_usd":0.5,"cost_source":"unknown"`, true},
		{"older ralph", Record{}, `"cost_usd":null`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data, err := json.Marshal(tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), tc.json) || strings.Count(string(data), `"cost_usd"`) != 1 {
				t.Errorf("%s: want one cost_usd, %s", data, tc.json)
			}
			var back Record
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if back.CostKnown() != tc.known || back.CostUSD != tc.rec.CostUSD {
				t.Errorf("read back %+v: known %v, want %v", back, back.CostKnown(), tc.known)
			}
		})
	}
	// A reviewer's unknown cost is null too, beside the agent's known one.
	data, err := json.Marshal(Record{CostUSD: 0.1, CostSource: CostReported, Review: &ReviewEvidence{CostSource: CostUnknown}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"cost_usd":0.1,`) || !strings.Contains(string(data), `"review":{"verdict":"","agent":"","attempts":0,"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":null,`) {
		t.Errorf("record with an unpriced review: %s", data)
	}
	var old Record
	if err := json.Unmarshal([]byte(`{"task_id":"A","outcome":"task_done","cost_usd":0}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.CostKnown() || old.Attempt != 0 {
		t.Errorf("older line: known %v attempt %d; want unknown, 0", old.CostKnown(), old.Attempt)
	}
}
