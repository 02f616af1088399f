package agent

import (
	"bytes"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-loop/ralph/internal/fakeagent"
)

// benchDialect builds the benchmark streams of one dialect from its
// recorded sample (see fakeagent.Dialect, which the whole-process
// benchmark's fake agent uses too).
type benchDialect struct{ fakeagent.Dialect }

func benchDialects() []benchDialect {
	var ds []benchDialect
	for _, d := range fakeagent.Dialects() {
		ds = append(ds, benchDialect{d})
	}
	return ds
}

// withOutput returns the result line with the tool's output replaced by
// one of about lineSize bytes in all.
func (bd benchDialect) withOutput(t testing.TB, resultLine string, lineSize int) []byte {
	t.Helper()
	line, err := bd.WithOutput(resultLine, lineSize)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// fixtureLines splits a sample into its lines (with their newlines) and
// finds the tool call and result lines.
func (bd benchDialect) fixtureLines(t testing.TB) (lines []string, call, result int) {
	t.Helper()
	lines, call, result, err := bd.Lines(readFixture(t, bd.Fixture))
	if err != nil {
		t.Fatal(err)
	}
	return lines, call, result
}

// mixStream is the sample with, in place of its tool result, one result
// line of bigLine bytes, then tool calls each with a result line of
// lineSize bytes, to about total bytes.
func (bd benchDialect) mixStream(t testing.TB, bigLine, lineSize, total int) []byte {
	t.Helper()
	stream, err := bd.MixStream(readFixture(t, bd.Fixture), bigLine, lineSize, total)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// benchDecode runs decodeStream b.N times and reports, beside the MB/s of
// wall time, the MB per second of the process's CPU time (GC included),
// which other load on a shared machine disturbs less, and the allocations
// per MB of stream.
func benchDecode(b *testing.B, agent string, stream []byte) {
	b.Helper()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := cpuTime(b)
	n := 0
	for b.Loop() {
		decodeStream(b, agent, stream)
		n++
	}
	cpu := (cpuTime(b) - start).Seconds()
	runtime.ReadMemStats(&m1)
	mb := float64(n) * float64(len(stream)) / 1e6
	if cpu > 0 {
		b.ReportMetric(mb/cpu, "MB/cpu-s")
	}
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/mb, "allocs/MB")
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
		bd := benchDialect{fakeagent.Dialect{
			Agent: "claude", Fixture: "claude-stream-sample.jsonl",
			Result: `"text":"I'll create the file now."`, Outputs: []string{`"I'll create the file now."`},
		}}
		lines, _, result := bd.fixtureLines(b)
		line := bd.withOutput(b, lines[result], 64<<10)
		benchDecode(b, bd.Agent, bytes.Repeat(line, (64<<20)/len(line)))
	})
	for _, bd := range benchDialects() {
		b.Run(bd.Agent+"/mix", func(b *testing.B) {
			benchDecode(b, bd.Agent, bd.mixStream(b, 20<<20, 64<<10, 201<<20))
		})
		b.Run(bd.Agent+"/fixture", func(b *testing.B) {
			sample := readFixture(b, bd.Fixture)
			benchDecode(b, bd.Agent, bytes.Repeat(sample, (4<<20)/len(sample)))
		})
	}
}

// TestBenchStreams checks that the benchmark streams decode into what they
// say: the tool results, and the 20 MB one through the shortener.
func TestBenchStreams(t *testing.T) {
	t.Parallel()
	for _, bd := range benchDialects() {
		t.Run(bd.Agent, func(t *testing.T) {
			t.Parallel()
			stream := bd.mixStream(t, 2<<20, 64<<10, 4<<20)
			res, events := runDecoded(t, bd.Agent, stream, 0, "")
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
