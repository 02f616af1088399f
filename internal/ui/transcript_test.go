package ui

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/golden"

	"github.com/ralph-loop/ralph/internal/agent"
)

func claudeDecoder(t *testing.T) agent.Decoder {
	t.Helper()
	ad, err := agent.New("claude", agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ad.NewDecoder()
}

// render feeds raw to a transcript writer in chunks of n bytes.
func render(t *testing.T, raw []byte, n int) string {
	t.Helper()
	var b bytes.Buffer
	tw := NewTranscriptWriter(&b, claudeDecoder(t), TranscriptOptions{})
	for len(raw) > 0 {
		k := min(n, len(raw))
		if _, err := tw.Write(raw[:k]); err != nil {
			t.Fatal(err)
		}
		raw = raw[k:]
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTranscriptOfRealClaudeOutput(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"claude-stream-sample.jsonl", "claude-stream-429-sample.jsonl"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(filepath.Join("..", "agent", "testdata", name))
			if err != nil {
				t.Skip(err)
			}
			got := render(t, raw, len(raw))
			golden.Check(t, filepath.Join("testdata", "transcript", strings.TrimSuffix(name, ".jsonl")+".golden"), got)
			// However the output arrives (follow mode reads what the file
			// grew by), the rendering is the same.
			for _, n := range []int{1, 7, 4096} {
				if diff := cmp.Diff(got, render(t, raw, n)); diff != "" {
					t.Errorf("chunks of %d (-whole +chunked):\n%s", n, diff)
				}
			}
		})
	}
}

func TestTranscriptCutsToolResultsAndKeepsText(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	tw := NewTranscriptWriter(&b, claudeDecoder(t), TranscriptOptions{ResultLines: 3})
	lines := []string{
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"First line.\nSecond line."}]}}`,
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./...","description":"run the tests"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb\nc\nd\ne"}]}}`,
		`noise that is not JSON`,
		`{"type":"result","subtype":"success","is_error":false,"result":"Second line.","total_cost_usd":0.01,"num_turns":2,"usage":{"input_tokens":1000,"output_tokens":200}}`,
	}
	if _, err := tw.Write([]byte(strings.Join(lines, "\n"))); err != nil { // no final newline
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	want := `● First line.
  Second line.
→ Bash go test ./...
  ⎿ a
    b
    c
    … 2 more lines
■ Second line.
── 1.2k tokens (1.0k in, 200 out, 0 cache read, 0 cache write) · $0.0100 · 2 turns
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
	if r := tw.Result(); r.CostUSD != 0.01 || r.FinalText != "Second line." {
		t.Errorf("result = %+v", r)
	}
}

func TestTranscriptSkipsAnOverlongLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	tw := NewTranscriptWriter(&b, claudeDecoder(t), TranscriptOptions{})
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range 70 {
		if _, err := tw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write([]byte("\n" + `{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"after"}]}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, "(a line of 70 MB skipped)") || !strings.Contains(got, "● after") {
		t.Errorf("transcript:\n%s", got)
	}
}
