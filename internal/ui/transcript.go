package ui

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ralph-loop/ralph/internal/agent"
)

// TranscriptOptions configure the readable rendering of an agent's raw
// output (ralph logs, the TUI's transcript pager).
type TranscriptOptions struct {
	// Color adds ANSI colors.
	Color bool
	// ResultLines bounds the lines shown of each tool result (default 6).
	ResultLines int
}

// maxTranscriptLine bounds one raw line held while decoding. Agents print
// JSON lines of tens of megabytes (a tool result holding a whole file);
// past this a line is skipped with a note rather than held in memory.
const maxTranscriptLine = 64 << 20

// TranscriptWriter decodes raw agent output written to it with the agent's
// own decoder and prints it readably: assistant text, one line per tool
// call with its key argument, tool results cut to a few lines, errors, and
// the result's tokens and cost at the end. Write may be called with any
// chunks of the output (follow mode feeds it what the file grew by).
type TranscriptWriter struct {
	dec  agent.Decoder
	p    transcriptPrinter
	buf  []byte
	skip int64 // bytes of an over-long line being skipped
	err  error
	res  agent.Result
}

// NewTranscriptWriter returns a writer printing to w what dec decodes.
func NewTranscriptWriter(w io.Writer, dec agent.Decoder, opts TranscriptOptions) *TranscriptWriter {
	if opts.ResultLines <= 0 {
		opts.ResultLines = 6
	}
	return &TranscriptWriter{dec: dec, p: transcriptPrinter{w: w, opts: opts, pal: newPalette(opts.Color)}}
}

// Write decodes every complete line in p; a partial last line waits for
// the rest.
func (t *TranscriptWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if t.skip > 0 {
			if i < 0 {
				t.skip += int64(len(p))
				break
			}
			t.p.note(fmt.Sprintf("(a line of %d MB skipped)", (t.skip+int64(i))>>20))
			t.skip, p = 0, p[i+1:]
			continue
		}
		if i < 0 {
			if len(t.buf)+len(p) > maxTranscriptLine {
				t.skip = int64(len(t.buf) + len(p))
				t.buf = t.buf[:0]
				break
			}
			t.buf = append(t.buf, p...)
			break
		}
		line := p[:i]
		if len(t.buf) > 0 {
			t.buf = append(t.buf, line...)
			line = t.buf
		}
		t.line(line)
		t.buf, p = t.buf[:0], p[i+1:]
	}
	return n, t.err
}

func (t *TranscriptWriter) line(b []byte) {
	t.dec.Line(bytes.TrimSuffix(b, []byte("\r")), t.p.event)
	if t.p.err != nil && t.err == nil {
		t.err = t.p.err
	}
}

// Close decodes a last line without a newline and prints the result:
// tokens, cost, context used and any error.
func (t *TranscriptWriter) Close() error {
	if len(t.buf) > 0 {
		t.line(t.buf)
		t.buf = nil
	}
	t.res = t.dec.Finish()
	t.p.summary(t.res)
	if t.err == nil {
		t.err = t.p.err
	}
	return t.err
}

// Result is what the decoder made of the output, once closed.
func (t *TranscriptWriter) Result() agent.Result { return t.res }

// transcriptPrinter writes decoded events as readable lines.
type transcriptPrinter struct {
	w    io.Writer
	opts TranscriptOptions
	pal  palette
	last string // the last assistant text, so the final result is not repeated
	err  error
}

func (p *transcriptPrinter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *transcriptPrinter) note(s string) { p.printf("%s\n", p.pal.dim(s)) }

func (p *transcriptPrinter) event(e agent.Event) {
	// Text, never commands, to the terminal.
	e.Text, e.Tool, e.ToolInput = Text(e.Text), Text(e.Tool), Text(e.ToolInput)
	switch e.Kind {
	case agent.EventText:
		p.last = strings.TrimSpace(e.Text)
		p.block("● ", e.Text, nil)
	case agent.EventToolCall:
		p.printf("%s %s %s\n", p.pal.cyan("→"), p.pal.bold(e.Tool), e.ToolInput)
	case agent.EventToolResult:
		p.toolResult(e.Text)
	case agent.EventError:
		p.block("! ", e.Text, p.pal.red)
	case agent.EventResult:
		if text := strings.TrimSpace(e.Text); text != "" && text != p.last {
			p.block("■ ", text, nil)
		}
	default:
		// The other values need nothing here.
	}
}

// block prints text with a marker before its first line and its other
// lines indented under it.
func (p *transcriptPrinter) block(mark, text string, paint func(string) string) {
	text = strings.TrimRight(text, "\n ")
	if strings.TrimSpace(text) == "" {
		return
	}
	for i, l := range strings.Split(text, "\n") {
		prefix := "  "
		if i == 0 {
			prefix = mark
		}
		if paint != nil {
			l = paint(l)
		}
		p.printf("%s%s\n", prefix, strings.TrimRight(l, "\r"))
	}
}

// toolResult prints the first lines of a tool's output, each cut to a
// readable width, and how many lines were left out.
func (p *transcriptPrinter) toolResult(text string) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if strings.TrimSpace(text) == "" {
		lines = []string{"(no output)"}
	}
	shown := min(len(lines), p.opts.ResultLines)
	for i, l := range lines[:shown] {
		prefix := "    "
		if i == 0 {
			prefix = "  ⎿ "
		}
		p.printf("%s%s\n", prefix, p.pal.dim(truncateRunes(strings.TrimRight(l, "\r"), 200)))
	}
	if more := len(lines) - shown; more > 0 {
		p.printf("    %s\n", p.pal.dim(fmt.Sprintf("… %d more lines", more)))
	}
}

func (p *transcriptPrinter) summary(r agent.Result) {
	var parts []string
	if n := r.Usage.InputTokens + r.Usage.OutputTokens + r.Usage.CacheReadTokens + r.Usage.CacheWriteTokens; n > 0 {
		parts = append(parts, fmt.Sprintf("%s tokens (%s in, %s out, %s cache read, %s cache write)", tokens(n),
			tokens(r.Usage.InputTokens), tokens(r.Usage.OutputTokens), tokens(r.Usage.CacheReadTokens), tokens(r.Usage.CacheWriteTokens)))
	}
	if r.HasCost && r.CostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", r.CostUSD))
	}
	if r.ContextUsedPercent >= 0.5 {
		parts = append(parts, fmt.Sprintf("context %.0f%%", r.ContextUsedPercent))
	}
	switch {
	case r.Turns == 1:
		parts = append(parts, "1 turn")
	case r.Turns > 1:
		parts = append(parts, fmt.Sprintf("%d turns", r.Turns))
	}
	if len(parts) > 0 {
		p.printf("%s\n", p.pal.dim("── "+strings.Join(parts, " · ")))
	}
	if r.IsError {
		kind := string(r.ErrorKind)
		if kind == "" {
			kind = "error"
		}
		p.printf("%s\n", p.pal.red(fmt.Sprintf("── %s: %s", Text(kind), oneLine(Text(r.ErrorText), 300))))
	}
}

// truncateRunes cuts s to n runes, marking the cut.
func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// copyFile writes the file at path to w.
func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
