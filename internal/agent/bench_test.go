package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// benchDialect says how to build a benchmark stream in one dialect from its
// recorded sample: the sample's tool call and tool result lines are
// repeated with a tool output of the wanted size in place of the recorded
// one.
type benchDialect struct {
	agent   string // the adapter whose decoder reads it
	fixture string
	call    string   // a substring of the sample's tool call line; "" when the result line is the call
	result  string   // a substring of the sample's tool result line
	outputs []string // the JSON strings in the result line that hold the tool's output
}

var benchDialects = []benchDialect{
	{
		agent: "claude", fixture: "claude-stream-sample.jsonl",
		call: `"type":"tool_use"`, result: `"type":"tool_result"`,
		// Claude Code prints a Bash output twice: in the tool_result and in
		// tool_use_result.stdout.
		outputs: []string{`"(Bash completed with no output)"`, `"stdout":""`},
	},
	{
		agent: "cursor", fixture: "claude-stream-sample.jsonl",
		call: `"type":"tool_use"`, result: `"type":"tool_result"`,
		outputs: []string{`"(Bash completed with no output)"`, `"stdout":""`},
	},
	{
		agent: "qwen", fixture: "qwen-stream-json-sample.jsonl",
		call: `"type":"tool_use"`, result: `"type":"tool_result"`,
		outputs: []string{`"Command: echo hi > file.txt\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: 0\nSignal: 0\nProcess Group PGID: 28405"`},
	},
	{
		agent: "codex", fixture: "codex-exec-json-sample.jsonl",
		call: `"type":"item.started"`, result: `"status":"completed"`,
		outputs: []string{`"aggregated_output":""`},
	},
	{
		agent: "gemini", fixture: "gemini-stream-sample.jsonl",
		call: `"type":"tool_use"`, result: `"type":"tool_result"`,
		outputs: []string{`"output":""`},
	},
	{
		agent: "opencode", fixture: "opencode-json-sample.jsonl",
		result: `"type":"tool_use"`,
		// The output and metadata.output.
		outputs: []string{`"(no output)"`},
	},
	{
		agent: "droid", fixture: "droid-stream-json-sample.jsonl",
		call: `"type":"tool_call"`, result: `"type":"tool_result"`,
		outputs: []string{`"Command completed successfully\n\n[Process exited with code 0]"`},
	},
	{
		agent: "copilot", fixture: "copilot-json-sample.jsonl",
		call: `"type":"tool.execution_start"`, result: `"type":"tool.execution_complete"`,
		// result.content and result.detailedContent.
		outputs: []string{`"\n<shellId: 0 completed with exit code 0>"`},
	},
}

// toolOutput is n bytes of what a Read tool prints: numbered lines of
// source code, with the tabs, quotes, backslashes and the odd non-ASCII
// letter that JSON escapes or checks (the fake agent's toolstream prints
// the same).
func toolOutput(n int) string {
	lines := [...]string{
		"package main",
		"",
		"import (",
		"\t\"fmt\"",
		"\t\"os\"",
		")",
		"",
		"// run prints each argument; it returns the first error.",
		"func run(args []string) error {",
		"\tif len(args) == 0 {",
		"\t\treturn fmt.Errorf(\"usage: %s FILE\", os.Args[0])",
		"\t}",
		"\tfor i, a := range args {",
		"\t\tfmt.Printf(\"%d: %q\\n\", i, a) // naïve café, on purpose",
		"\t}",
		"\treturn nil",
		"}",
	}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, lines[i%len(lines)])
	}
	s := b.String()[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// withOutput returns the result line with the tool's output replaced by
// one of about lineSize bytes in all.
func (bd benchDialect) withOutput(t testing.TB, resultLine string, lineSize int) []byte {
	t.Helper()
	build := func(n int) []byte {
		q, err := json.Marshal(toolOutput(n))
		if err != nil {
			t.Fatal(err)
		}
		line := resultLine
		for _, o := range bd.outputs {
			if !strings.Contains(line, o) {
				t.Fatalf("%s: %s not in %s", bd.fixture, o, line)
			}
			// `"key":"value"` keeps its key.
			key := ""
			if i := strings.Index(o, `":`); i > 0 {
				key = o[:i+2]
			}
			line = strings.ReplaceAll(line, o, key+string(q))
		}
		return []byte(line)
	}
	// Once to see what a byte of output costs, once at the right size.
	small := build(4096)
	perByte := float64(len(build(8192))-len(small)) / 4096
	n := int(float64(lineSize-len(small))/perByte) + 4096
	return build(max(n, 0))
}

// fixtureLines splits a sample into its lines (with their newlines) and
// finds the tool call and result lines.
func (bd benchDialect) fixtureLines(t testing.TB) (lines []string, call, result int) {
	t.Helper()
	call, result = -1, -1
	for line := range bytes.Lines(readFixture(t, bd.fixture)) {
		s := string(line)
		switch {
		case bd.call != "" && call < 0 && strings.Contains(s, bd.call):
			call = len(lines)
		case result < 0 && strings.Contains(s, bd.result):
			result = len(lines)
		}
		lines = append(lines, s)
	}
	if result < 0 || bd.call != "" && call < 0 {
		t.Fatalf("%s: no tool call or result line", bd.fixture)
	}
	return lines, call, result
}

// mixStream is the sample with, in place of its tool result, one result
// line of bigLine bytes, then tool calls each with a result line of
// lineSize bytes, to about total bytes.
func (bd benchDialect) mixStream(t testing.TB, bigLine, lineSize, total int) []byte {
	t.Helper()
	lines, call, result := bd.fixtureLines(t)
	var b bytes.Buffer
	b.Grow(total + bigLine)
	for _, l := range lines[:result] {
		b.WriteString(l)
	}
	b.Write(bd.withOutput(t, lines[result], bigLine))
	small := bd.withOutput(t, lines[result], lineSize)
	for b.Len() < total {
		if call >= 0 {
			b.WriteString(lines[call])
		}
		b.Write(small)
	}
	for _, l := range lines[result+1:] {
		b.WriteString(l)
	}
	return b.Bytes()
}

// benchDecode runs decodeStream b.N times and reports, beside the MB/s of
// wall time, the MB per second of the process's CPU time (GC included),
// which other load on a shared machine disturbs less.
func benchDecode(b *testing.B, agent string, stream []byte) {
	b.Helper()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	start := cpuTime(b)
	n := 0
	for b.Loop() {
		decodeStream(b, agent, stream)
		n++
	}
	if cpu := (cpuTime(b) - start).Seconds(); cpu > 0 {
		b.ReportMetric(float64(n)*float64(len(stream))/1e6/cpu, "MB/cpu-s")
	}
}

// cpuTime is the user and system time the process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// decodeStream runs a decoder over a stream the way Run does, keeping no
// events.
func decodeStream(t testing.TB, agent string, stream []byte) int {
	t.Helper()
	a, err := New(agent, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := a.NewDecoder()
	events := 0
	emit := func(Event) { events++ }
	lr := newLineReader(bytes.NewReader(stream), defaultLineLimits())
	for {
		line, err := lr.Next()
		if err != nil {
			break
		}
		d.Line(line, emit)
	}
	d.Finish()
	return events
}

// BenchmarkDecode measures the decoders end to end from the raw stream
// (line reading included) on two streams per dialect:
//
//   - mix: what tools/bench's stream-mix scenario streams per task: one
//     20 MB tool result line, then tool calls with 64 KiB results, about
//     201 MB in all;
//   - fixture: the recorded sample repeated to about 4 MB of short lines;
//
// and for Claude Code also text: 64 MB of assistant lines of 64 KiB of
// text, which unlike a tool result is decoded whole.
//
// Run the mixes with -benchtime 2x (a mix is 201 MB) and -count for a
// median.
func BenchmarkDecode(b *testing.B) {
	b.Run("claude/text", func(b *testing.B) {
		bd := benchDialect{
			agent: "claude", fixture: "claude-stream-sample.jsonl",
			result: `"text":"I'll create the file now."`, outputs: []string{`"I'll create the file now."`},
		}
		lines, _, result := bd.fixtureLines(b)
		line := bd.withOutput(b, lines[result], 64<<10)
		benchDecode(b, bd.agent, bytes.Repeat(line, (64<<20)/len(line)))
	})
	for _, bd := range benchDialects {
		b.Run(bd.agent+"/mix", func(b *testing.B) {
			benchDecode(b, bd.agent, bd.mixStream(b, 20<<20, 64<<10, 201<<20))
		})
		b.Run(bd.agent+"/fixture", func(b *testing.B) {
			sample := readFixture(b, bd.fixture)
			benchDecode(b, bd.agent, bytes.Repeat(sample, (4<<20)/len(sample)))
		})
	}
}

// TestBenchStreams checks that the benchmark streams decode into what they
// say: the tool results, and the 20 MB one through the shortener.
func TestBenchStreams(t *testing.T) {
	t.Parallel()
	for _, bd := range benchDialects {
		t.Run(bd.agent, func(t *testing.T) {
			t.Parallel()
			stream := bd.mixStream(t, 2<<20, 64<<10, 4<<20)
			res, events := runDecoded(t, bd.agent, stream, 0, "")
			results := 0
			for _, e := range events {
				if e.Kind == EventToolResult {
					results++
					if len(e.Text) < maxToolResult || !strings.Contains(e.Text, "func run(args []string) error {") {
						t.Fatalf("tool result %q", e.Text)
					}
				}
			}
			if want := (4<<20-2<<20)/(64<<10) + 1; results < want-2 {
				t.Errorf("%d tool results, want about %d", results, want)
			}
			if res.IsError || !strings.Contains(res.FinalText, "COMPLETE") {
				t.Errorf("Result %+v", res)
			}
		})
	}
}
