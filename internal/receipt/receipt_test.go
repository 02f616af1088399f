package receipt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ralph-loop/ralph/internal/state"
)

// history is a hand-written history.jsonl: a line of an older ralph (no
// attempt, no cost_source, $0: unknown), then a run of three tasks and an
// end review. The figures the tests expect are added up by hand below.
const history = `{"run_id":"r0","iteration":1,"task_id":"US-4","agent":"claude","model":"sonnet","duration_ms":1000,"outcome":"gate_failed","input_tokens":10,"output_tokens":1,"cost_usd":0}
{"run_id":"r1","iteration":1,"task_id":"US-1","attempt":1,"agent":"claude","model":"sonnet","duration_ms":2000,"outcome":"no_marker","input_tokens":1000,"output_tokens":100,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":0.10,"cost_source":"reported"}
{"run_id":"r1","iteration":2,"task_id":"US-1","attempt":2,"agent":"claude","model":"sonnet","duration_ms":3000,"outcome":"task_done","input_tokens":2000,"output_tokens":200,"cache_read_tokens":500,"cache_write_tokens":100,"cost_usd":0.20,"cost_source":"reported","gates":[{"command":"go test ./...","result":"ok","exit_code":0,"duration_ms":10}],"guard":{"mode":"warn","findings":[],"blocking":0},"review":{"verdict":"SHIP","agent":"codex","model":"gpt-5","attempts":1,"input_tokens":300,"output_tokens":30,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":0.05,"cost_source":"estimated","duration_ms":500}}
{"run_id":"r1","iteration":3,"task_id":"US-2","attempt":1,"agent":"command","model":"","duration_ms":1000,"outcome":"task_done","cost_usd":null,"cost_source":"unknown","gates":[{"command":"go test ./...","result":"ok","exit_code":0,"duration_ms":10}],"guard":{"mode":"warn","findings":[],"blocking":0}}
{"run_id":"r1","iteration":4,"task_id":"US-3","attempt":1,"agent":"claude","model":"sonnet","duration_ms":100,"outcome":"rate_limited","cost_usd":0,"cost_source":"reported"}
{"run_id":"r1","iteration":5,"task_id":"US-3","attempt":1,"agent":"claude","model":"sonnet","duration_ms":4000,"outcome":"task_done","input_tokens":3000,"output_tokens":300,"cost_usd":0.30,"cost_source":"reported","guard":{"mode":"warn","findings":[{"rule":"skip-added","file":"a_test.go"}],"blocking":1}}
{"run_id":"r1","iteration":5,"task_id":"","agent":"codex","model":"gpt-5","duration_ms":900,"outcome":"end_review","input_tokens":150,"output_tokens":15,"cost_usd":0.04,"cost_source":"unknown","end_review":{"round":1,"reviewers":[{"verdict":"SHIP","agent":"codex","model":"gpt-5","attempts":1,"input_tokens":100,"output_tokens":10,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":0.04,"cost_source":"estimated","duration_ms":900},{"verdict":"SHIP","agent":"claude","attempts":1,"input_tokens":50,"output_tokens":5,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":0,"cost_source":"unknown","duration_ms":800}]}}
`

func readHistory(t *testing.T) []state.Record {
	t.Helper()
	var recs []state.Record
	for n, line := range strings.Split(strings.TrimSpace(history), "\n") {
		var r state.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		recs = append(recs, r)
	}
	return recs
}

var approx = cmpopts.EquateApprox(0, 1e-9)

func yes() *bool { return new(true) }
func no() *bool  { return new(false) }

func TestTotals(t *testing.T) {
	t.Parallel()
	got := Build(readHistory(t), ByTask).Totals
	want := Totals{
		Runs: 2, // r0 (the older ralph's line), r1
		// US-1..US-4; the end review is no task. Verified: US-1 (gate
		// ok, guard clean, SHIP) and US-2 (gate ok, guard clean, no
		// reviewer); not US-3 (the guard found a blocking change) nor
		// US-4 (its gate failed).
		Tasks: 4, TasksVerified: 2, Iterations: 7,
		Usage: Usage{
			// Each line's time; a review's time is inside its
			// iteration's, an end reviewer's is its own (900 and 800).
			DurationMS: 1000 + 2000 + 3000 + 1000 + 100 + 4000 + 900 + 800,
			// 10 + 1000 + 2000 + 300 (review) + 3000 + 100 + 50 (end reviewers)
			InputTokens:     6460,
			OutputTokens:    1 + 100 + 200 + 30 + 300 + 10 + 5,
			CacheReadTokens: 500, CacheWriteTokens: 100,
			// Known: 0.10 + 0.20 + 0.05 (review) + 0 (rate limited) + 0.30
			// + 0.04 (end reviewer) = 0.69. No price: the older line's
			// $0, the command agent's null, the second end reviewer's.
			Cost: Cost{USD: new(0.69), Source: state.CostUnknown, Unpriced: 3},
		},
		PerVerifiedTask: new(0.69 / 2), // 0.345, a lower bound
	}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if got, want := got.CostLine(), "at least $0.6900 (3 iterations had no price) · per verified task at least $0.3450"; got != want {
		t.Errorf("cost line %q, want %q", got, want)
	}
}

func TestByTask(t *testing.T) {
	t.Parallel()
	recs := readHistory(t)
	got := Build(recs, ByTask).Rows
	want := []Row{
		{TaskID: "US-4", Iterations: 1, Attempts: 1, LastOutcome: state.OutcomeGateFailed, Verified: no(),
			Agents: []string{"claude"}, Models: []string{"sonnet"},
			Usage: Usage{DurationMS: 1000, InputTokens: 10, OutputTokens: 1, Cost: Cost{Source: state.CostUnknown, Unpriced: 1}}},
		// no_marker (attempt 1) then task_done (attempt 2); the
		// reviewer's tokens and cost are the task's: 0.10 + 0.20 + 0.05.
		{TaskID: "US-1", Iterations: 2, Attempts: 2, LastOutcome: state.OutcomeTaskDone, Verified: yes(),
			Agents: []string{"claude", "codex"}, Models: []string{"sonnet", "gpt-5"}, Reviews: 1,
			Usage: Usage{DurationMS: 5000, InputTokens: 3300, OutputTokens: 330, CacheReadTokens: 500, CacheWriteTokens: 100,
				Cost: Cost{USD: new(0.35), Source: state.CostEstimated}},
			Gates: recs[2].Gates, Guard: recs[2].Guard, Review: recs[2].Review},
		{TaskID: "US-2", Iterations: 1, Attempts: 1, LastOutcome: state.OutcomeTaskDone, Verified: yes(),
			Agents: []string{"command"}, Models: []string{"command default"},
			Usage: Usage{DurationMS: 1000, Cost: Cost{Source: state.CostUnknown, Unpriced: 1}},
			Gates: recs[3].Gates, Guard: recs[3].Guard},
		// The rate-limited iteration is no attempt, and cost $0 (known).
		{TaskID: "US-3", Iterations: 2, Attempts: 1, LastOutcome: state.OutcomeTaskDone, Verified: no(),
			Agents: []string{"claude"}, Models: []string{"sonnet"},
			Usage: Usage{DurationMS: 4100, InputTokens: 3000, OutputTokens: 300, Cost: Cost{USD: new(0.30), Source: state.CostReported}},
			Guard: recs[5].Guard},
		// One reviewer priced ($0.04), one not: at least $0.04.
		{TaskID: EndReviewRow, Iterations: 1, LastOutcome: state.OutcomeEndReview,
			Agents: []string{"codex", "claude"}, Models: []string{"gpt-5", "claude default"}, Reviews: 2,
			Usage: Usage{DurationMS: 1700, InputTokens: 150, OutputTokens: 15, Cost: Cost{USD: new(0.04), Source: state.CostUnknown, Unpriced: 1}}},
	}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

func TestByModelAndAgent(t *testing.T) {
	t.Parallel()
	recs := readHistory(t)
	byModel := []Row{
		// The agent's lines on US-4, US-1 (2), US-3 (2): 0 + 0.10 + 0.20
		// + 0 + 0.30, and the older line of no price.
		{Model: "sonnet", Iterations: 5, Tasks: []string{"US-4", "US-1", "US-3"}, Agents: []string{"claude"},
			Usage: Usage{DurationMS: 10100, InputTokens: 6010, OutputTokens: 601, CacheReadTokens: 500, CacheWriteTokens: 100,
				Cost: Cost{USD: new(0.60), Source: state.CostUnknown, Unpriced: 1}}},
		// US-1's reviewer (a review, no iteration of its own) and the
		// first end reviewer: 0.05 + 0.04.
		{Model: "gpt-5", Iterations: 1, Reviews: 2, Tasks: []string{"US-1"}, Agents: []string{"codex"},
			Usage: Usage{DurationMS: 900, InputTokens: 400, OutputTokens: 40, Cost: Cost{USD: new(0.09), Source: state.CostEstimated}}},
		{Model: "command default", Iterations: 1, Tasks: []string{"US-2"}, Agents: []string{"command"},
			Usage: Usage{DurationMS: 1000, Cost: Cost{Source: state.CostUnknown, Unpriced: 1}}},
		{Model: "claude default", Iterations: 1, Reviews: 1, Agents: []string{"claude"},
			Usage: Usage{DurationMS: 800, InputTokens: 50, OutputTokens: 5, Cost: Cost{Source: state.CostUnknown, Unpriced: 1}}},
	}
	if diff := cmp.Diff(byModel, Build(recs, ByModel).Rows, approx); diff != "" {
		t.Errorf("by model (-want +got):\n%s", diff)
	}
	byAgent := []Row{
		{Agent: "claude", Iterations: 6, Reviews: 1, Tasks: []string{"US-4", "US-1", "US-3"}, Models: []string{"sonnet", "claude default"},
			Usage: Usage{DurationMS: 10900, InputTokens: 6060, OutputTokens: 606, CacheReadTokens: 500, CacheWriteTokens: 100,
				Cost: Cost{USD: new(0.60), Source: state.CostUnknown, Unpriced: 2}}},
		{Agent: "codex", Iterations: 1, Reviews: 2, Tasks: []string{"US-1"}, Models: []string{"gpt-5"},
			Usage: Usage{DurationMS: 900, InputTokens: 400, OutputTokens: 40, Cost: Cost{USD: new(0.09), Source: state.CostEstimated}}},
		{Agent: "command", Iterations: 1, Tasks: []string{"US-2"}, Models: []string{"command default"},
			Usage: Usage{DurationMS: 1000, Cost: Cost{Source: state.CostUnknown, Unpriced: 1}}},
	}
	if diff := cmp.Diff(byAgent, Build(recs, ByAgent).Rows, approx); diff != "" {
		t.Errorf("by agent (-want +got):\n%s", diff)
	}
}

func TestCostLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		t    Totals
		want string
	}{
		{"none verified", Totals{Tasks: 2, Usage: Usage{Cost: Cost{USD: new(1.5), Source: state.CostReported}}},
			"$1.5000 · per verified task n/a (none verified)"},
		{"estimated", Totals{Tasks: 2, TasksVerified: 2, PerVerifiedTask: new(0.75), Usage: Usage{Cost: Cost{USD: new(1.5), Source: state.CostEstimated}}},
			"~$1.5000 · per verified task ~$0.7500"},
		{"all unknown", Totals{Tasks: 1, TasksVerified: 1, Usage: Usage{Cost: Cost{Source: state.CostUnknown, Unpriced: 2}}},
			"unknown (2 iterations had no price) · per verified task unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.t.CostLine(); got != tc.want {
				t.Errorf("CostLine() = %q, want %q", got, tc.want)
			}
		})
	}
}

// The JSON shape is what docs/concepts.md, Receipts documents: rows, then totals;
// an unknown cost is null, never 0.
func TestJSONShape(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Build(readHistory(t), ByTask).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`{"by":"task","rows":[{"task_id":"US-4","iterations":1,"attempts":1,"last_outcome":"gate_failed","verified":false,`,
		`"task_id":"US-2","iterations":1,"attempts":1,"last_outcome":"task_done","verified":true,"agents":["command"],"models":["command default"],"duration_ms":1000,"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":null,"cost_source":"unknown","unpriced":1,`,
		`"totals":{"runs":2,"tasks":4,"tasks_verified":2,"iterations":7,`,
		`"cost_usd":0.69,"cost_source":"unknown","unpriced":3,"cost_per_verified_task_usd":0.345}}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("JSON lacks %s:\n%s", want, out)
		}
	}
}

func TestParseBy(t *testing.T) {
	t.Parallel()
	if _, err := ParseBy("tasks"); err == nil || !strings.Contains(err.Error(), "want task, model or agent") {
		t.Errorf("ParseBy(tasks) = %v, want an error naming the choices", err)
	}
	if b, err := ParseBy("model"); err != nil || b != ByModel {
		t.Errorf("ParseBy(model) = %q, %v", b, err)
	}
}

// FuzzBuild: whatever history holds, the receipt adds up: the task rows'
// iterations, unpriced lines and known costs are the totals', each view
// has the same totals, and a record reads back as it was written (an
// unknown cost null, a known one a number).
func FuzzBuild(f *testing.F) {
	f.Add(history)
	f.Add(`{"task_id":"A","outcome":"task_done","cost_usd":null,"review":{"cost_usd":null}}`)
	f.Add(`{"outcome":"end_review","end_review":{"reviewers":[{"cost_usd":1e308},{"cost_usd":1e308}]}}`)
	f.Fuzz(func(t *testing.T, data string) {
		var recs []state.Record
		for line := range strings.SplitSeq(data, "\n") {
			var r state.Record
			if json.Unmarshal([]byte(line), &r) == nil {
				recs = append(recs, r)
			}
		}
		for _, r := range recs {
			out, err := json.Marshal(r)
			if err != nil {
				continue // a cost json cannot write (NaN): not one of ours
			}
			var back state.Record
			if err := json.Unmarshal(out, &back); err != nil || back.CostKnown() != r.CostKnown() {
				t.Fatalf("%s read back: known %v, want %v (%v)", out, back.CostKnown(), r.CostKnown(), err)
			}
		}
		rep := Build(recs, ByTask)
		iterations, unpriced, usd := 0, 0, 0.0
		for _, row := range rep.Rows {
			iterations += row.Iterations
			unpriced += row.Unpriced
			usd += deref(row.USD)
		}
		tot := rep.Totals
		if iterations != tot.Iterations || iterations != len(recs) || unpriced != tot.Unpriced || unpriced > tot.Iterations {
			t.Fatalf("rows: %d iterations, %d unpriced; totals %+v; %d records", iterations, unpriced, tot, len(recs))
		}
		if d := usd - deref(tot.USD); d > 1e-6*max(1, usd) || d < -1e-6*max(1, usd) {
			t.Fatalf("rows cost %v, totals %v", usd, deref(tot.USD))
		}
		if tot.TasksVerified > tot.Tasks || (tot.PerVerifiedTask != nil) != (tot.TasksVerified > 0 && tot.USD != nil) {
			t.Fatalf("totals %+v", tot)
		}
		for _, by := range []By{ByModel, ByAgent} {
			if got := Build(recs, by).Totals; !cmp.Equal(got, tot) {
				t.Fatalf("by %s: totals %+v, want %+v", by, got, tot)
			}
		}
	})
}
