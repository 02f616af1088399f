package completion

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDetectVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    Input
		order []Strategy
		want  Verdict
	}{
		{"ship", Input{Final: "Looks right.\n<promise>SHIP</promise>"}, nil,
			Verdict{Marker: Ship, Strategy: PromiseTag}},
		{"revise with numbered findings", Input{Final: "Not yet.\n\n1. The test for empty input was deleted.\n   It must come back.\n2) `go vet` fails.\n\n<promise>REVISE</promise>"}, nil,
			Verdict{Marker: Revise, Strategy: PromiseTag, Findings: []string{
				"The test for empty input was deleted. It must come back.", "`go vet` fails."}}},
		{"revise without numbers", Input{Final: "<promise>REVISE</promise> the README is not updated"}, nil,
			Verdict{Marker: Revise, Strategy: PromiseTag, Findings: []string{"the README is not updated"}}},
		{"last verdict wins", Input{Final: "At first <promise>REVISE</promise>, then on reflection <promise>ship</promise>"}, nil,
			Verdict{Marker: Ship, Strategy: PromiseTag}},
		{"in a code block is no verdict", Input{Final: "```\n<promise>SHIP</promise>\n```"}, nil, Verdict{}},
		{"in a code block, relaxed", Input{Final: "```\n<promise>SHIP</promise>\n```"}, []Strategy{PromiseTag, RelaxedTag},
			Verdict{Marker: Ship, Strategy: RelaxedTag}},
		{"an earlier message is not the final one", Input{Final: "done reading", Messages: []string{"<promise>SHIP</promise>"}}, nil, Verdict{}},
		{"a worker marker is no verdict", Input{Final: "<promise>TASK_DONE</promise>"}, nil, Verdict{}},
		{"the echoed prompt is no verdict", Input{Final: "End with <promise>SHIP</promise> or <promise>REVISE</promise>.",
			Prompt: "End with <promise>SHIP</promise> or <promise>REVISE</promise>."}, nil, Verdict{}},
		{"heuristic gives none", Input{Final: "Everything is done and correct."}, []Strategy{Heuristic}, Verdict{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(tt.want, DetectVerdict(tt.in, tt.order)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// A worker's Detect never reads a verdict as a claim.
func TestDetectIgnoresVerdicts(t *testing.T) {
	t.Parallel()
	if m := Detect(Input{Final: "<promise>SHIP</promise>"}, Strategies()); m.Marker != None {
		t.Errorf("Detect read SHIP as %q", m.Marker)
	}
}
