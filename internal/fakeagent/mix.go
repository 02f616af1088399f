package fakeagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Dialect says how to build a long stream in one agent's output dialect
// from its recorded sample: the sample's tool call and tool result lines
// are repeated with a tool output of the wanted size in place of the
// recorded one. The decoder benchmarks and the whole-process benchmark
// use the same streams.
type Dialect struct {
	Agent   string // the adapter whose decoder reads it
	Fixture string // the recorded sample, in internal/agent/testdata
	Call    string // a substring of the sample's tool call line; "" when the result line is the call
	Result  string // a substring of the sample's tool result line
	// Outputs are the JSON strings in the result line that hold the tool's
	// output.
	Outputs []string
}

// Dialects are the streams of every agent dialect ralph decodes.
func Dialects() []Dialect {
	return []Dialect{
		{
			Agent: "claude", Fixture: "claude-stream-sample.jsonl",
			Call: `"type":"tool_use"`, Result: `"type":"tool_result"`,
			// Claude Code prints a Bash output twice: in the tool_result and
			// in tool_use_result.stdout.
			Outputs: []string{`"(Bash completed with no output)"`, `"stdout":""`},
		},
		{
			Agent: "cursor", Fixture: "claude-stream-sample.jsonl",
			Call: `"type":"tool_use"`, Result: `"type":"tool_result"`,
			Outputs: []string{`"(Bash completed with no output)"`, `"stdout":""`},
		},
		{
			Agent: "qwen", Fixture: "qwen-stream-json-sample.jsonl",
			Call: `"type":"tool_use"`, Result: `"type":"tool_result"`,
			Outputs: []string{`"Command: echo hi > file.txt\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: 0\nSignal: 0\nProcess Group PGID: 28405"`},
		},
		{
			Agent: "codex", Fixture: "codex-exec-json-sample.jsonl",
			Call: `"type":"item.started"`, Result: `"status":"completed"`,
			Outputs: []string{`"aggregated_output":""`},
		},
		{
			Agent: "gemini", Fixture: "gemini-stream-sample.jsonl",
			Call: `"type":"tool_use"`, Result: `"type":"tool_result"`,
			Outputs: []string{`"output":""`},
		},
		{
			Agent: "opencode", Fixture: "opencode-json-sample.jsonl",
			Result: `"type":"tool_use"`,
			// The output and metadata.output.
			Outputs: []string{`"(no output)"`},
		},
		{
			Agent: "droid", Fixture: "droid-stream-json-sample.jsonl",
			Call: `"type":"tool_call"`, Result: `"type":"tool_result"`,
			Outputs: []string{`"Command completed successfully\n\n[Process exited with code 0]"`},
		},
		{
			Agent: "copilot", Fixture: "copilot-json-sample.jsonl",
			Call: `"type":"tool.execution_start"`, Result: `"type":"tool.execution_complete"`,
			// result.content and result.detailedContent.
			Outputs: []string{`"\n<shellId: 0 completed with exit code 0>"`},
		},
	}
}

// DialectOf returns the dialect of agent.
func DialectOf(agent string) (Dialect, bool) {
	for _, d := range Dialects() {
		if d.Agent == agent {
			return d, true
		}
	}
	return Dialect{}, false
}

// ToolOutput is n bytes of what a Read tool prints: numbered lines of
// source code, with the tabs, quotes, backslashes and the odd non-ASCII
// letter that JSON escapes or checks (toolstream prints the same).
func ToolOutput(n int) string {
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

// WithOutput returns the result line with the tool's output replaced by
// one of about lineSize bytes in all.
func (d Dialect) WithOutput(resultLine string, lineSize int) ([]byte, error) {
	build := func(n int) ([]byte, error) {
		q, err := json.Marshal(ToolOutput(n))
		if err != nil {
			return nil, err
		}
		line := resultLine
		for _, o := range d.Outputs {
			if !strings.Contains(line, o) {
				return nil, fmt.Errorf("%s: %s not in %s", d.Fixture, o, line)
			}
			// `"key":"value"` keeps its key.
			key := ""
			if i := strings.Index(o, `":`); i > 0 {
				key = o[:i+2]
			}
			line = strings.ReplaceAll(line, o, key+string(q))
		}
		return []byte(line), nil
	}
	// Once to see what a byte of output costs, once at the right size.
	small, err := build(4096)
	if err != nil {
		return nil, err
	}
	bigger, err := build(8192)
	if err != nil {
		return nil, err
	}
	perByte := float64(len(bigger)-len(small)) / 4096
	n := int(float64(lineSize-len(small))/perByte) + 4096
	return build(max(n, 0))
}

// Lines splits a sample into its lines (with their newlines) and finds
// the tool call and result lines (call is -1 when the result line is the
// call).
func (d Dialect) Lines(sample []byte) (lines []string, call, result int, err error) {
	call, result = -1, -1
	for line := range bytes.Lines(sample) {
		s := string(line)
		switch {
		case d.Call != "" && call < 0 && strings.Contains(s, d.Call):
			call = len(lines)
		case result < 0 && strings.Contains(s, d.Result):
			result = len(lines)
		}
		lines = append(lines, s)
	}
	if result < 0 || d.Call != "" && call < 0 {
		return nil, 0, 0, fmt.Errorf("%s: no tool call or result line", d.Fixture)
	}
	return lines, call, result, nil
}

// MixStream is the sample with, in place of its tool result, one result
// line of bigLine bytes, then tool calls each with a result line of
// lineSize bytes, to about total bytes.
func (d Dialect) MixStream(sample []byte, bigLine, lineSize, total int) ([]byte, error) {
	lines, call, result, err := d.Lines(sample)
	if err != nil {
		return nil, err
	}
	big, err := d.WithOutput(lines[result], bigLine)
	if err != nil {
		return nil, err
	}
	small, err := d.WithOutput(lines[result], lineSize)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(total + bigLine)
	for _, l := range lines[:result] {
		b.WriteString(l)
	}
	b.Write(big)
	for b.Len() < total {
		if call >= 0 {
			b.WriteString(lines[call])
		}
		b.Write(small)
	}
	for _, l := range lines[result+1:] {
		b.WriteString(l)
	}
	return b.Bytes(), nil
}
