package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tinyLimits makes every bound reachable with short inputs.
func tinyLimits() lineLimits {
	return lineLimits{
		bufSize: 16,
		maxLine: 64,
		strCap:  16, strHead: 4, strTail: 4,
		smallCap: 8, smallHead: 2, smallTail: 2,
		budget:   128,
		maxDepth: 8, maxLiteral: 16,
		rawHead: 16, rawTail: 16,
	}
}

// readLines returns copies of every line the reader gives.
func readLines(t testing.TB, r io.Reader, lim lineLimits) []string {
	t.Helper()
	lr := newLineReader(r, lim)
	var lines []string
	for {
		line, err := lr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Next: %v", err)
			}
			return lines
		}
		lines = append(lines, string(line))
	}
}

func TestLineReaderShortLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 60) // stitched from several 16-byte reads
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"one", "a\n", []string{"a"}},
		{"no final newline", "a\nb", []string{"a", "b"}},
		{"blank lines", "\n\nc\n", []string{"", "", "c"}},
		{"carriage return kept", "a\r\n", []string{"a\r"}},
		{"stitched", long + "\n" + long, []string{long, long}},
		{"at the bound", strings.Repeat("y", 64) + "\n", []string{strings.Repeat("y", 64)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := readLines(t, strings.NewReader(tt.in), tinyLimits())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLineReaderLongLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "long string keeps head and tail",
			in:   `{"type": "user", "text": "` + "abcd" + strings.Repeat("-", 100) + "wxyz" + `"}`,
			want: `{"type":"user","text":"abcd…[100 bytes elided]…wxyz"}`,
		},
		{
			name: "cut not inside escapes",
			in:   `{"t":"ab\"cdefgh` + strings.Repeat("-", 60) + `\n\"\\\u00e9ab"}`,
			// The last four bytes would start inside \u00e9.
			want: `{"t":"ab\"…[78 bytes elided]…ab"}`,
		},
		{
			name: "cut not inside characters",
			in:   `{"t":"aéé` + strings.Repeat("-", 60) + `ééé"}`,
			want: `{"t":"aé…[64 bytes elided]…éé"}`,
		},
		{
			name: "short strings and structure kept",
			in:   `[1, true, null, {"a": "b"}, -2.5e3, "` + strings.Repeat("s", 50) + `"]`,
			want: `[1,true,null,{"a":"b"},-2.5e3,"ssss…[42 bytes elided]…ssss"]`,
		},
		{
			name: "past the budget, elements are dropped",
			in:   `{"a":[` + strings.Repeat(`"0123456789abcdef",`, 20) + `1],"type":"x"}`,
			// 7 elements fit the 128-byte budget; the 8th starts a skip
			// to the end of the array; "type" is then dropped too.
			want: `{"a":[` + strings.Repeat(`"0123456789abcdef",`, 6) + `"0123456789abcdef"]}`,
		},
		{
			name: "not JSON keeps raw head and tail",
			in:   "plain text " + strings.Repeat(".", 100) + " the end",
			want: "plain text .....…[87 bytes elided]…........ the end",
		},
		{
			name: "truncated JSON keeps raw head and tail",
			in:   `{"a":"` + strings.Repeat("x", 100),
			want: `{"a":"xxxxxxxxxx…[74 bytes elided]…xxxxxxxxxxxxxxxx`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := readLines(t, strings.NewReader(tt.in+"\nnext\n"), tinyLimits())
			if diff := cmp.Diff([]string{tt.want, "next"}, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLineReaderHugeLine streams a 20 MB JSON line with the real limits:
// the decoder gets a short valid line, and memory does not follow the line.
func TestLineReaderHugeLine(t *testing.T) {
	t.Parallel()
	line := hugeLine(20 << 20)
	got := readLines(t, bytes.NewReader(line), defaultLineLimits())
	if len(got) != 1 {
		t.Fatalf("got %d lines, want 1", len(got))
	}
	if !json.Valid([]byte(got[0])) {
		t.Fatalf("shortened line is not JSON: %.200q", got[0])
	}
	if len(got[0]) > 40<<10 {
		t.Errorf("shortened line is %d bytes, want about 32 KiB", len(got[0]))
	}
	var l struct {
		Type    string
		Message struct{ Content []struct{ Content string } }
	}
	if err := json.Unmarshal([]byte(got[0]), &l); err != nil {
		t.Fatal(err)
	}
	c := l.Message.Content[0].Content
	if l.Type != "user" || !strings.HasPrefix(c, "line 0\n") || !strings.Contains(c, "bytes elided]…") {
		t.Errorf("unexpected shortened content: type %q, %.100q", l.Type, c)
	}
}

// hugeLine is a Claude tool result line of about n bytes, with escapes.
func hugeLine(n int) []byte {
	var block bytes.Buffer
	for i := 0; block.Len() < 4096; i++ {
		fmt.Fprintf(&block, `line %d\n \"quoted\" \u00e9 tab\t end\\ `, i)
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"`)
	b.Write(bytes.Repeat(block.Bytes(), n/block.Len()+1))
	b.WriteString(`"}]},"session_id":"s"}` + "\n")
	return b.Bytes()
}

func BenchmarkLineReader(b *testing.B) {
	sample, err := os.ReadFile("testdata/claude-stream-sample.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	claude := bytes.Repeat(sample, (4<<20)/len(sample))
	huge := hugeLine(20 << 20)
	for _, bm := range []struct {
		name string
		in   []byte
	}{
		{"claude-lines", claude},
		{"20MB-line", huge},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(bm.in)))
			b.ReportAllocs()
			for b.Loop() {
				lr := newLineReader(bytes.NewReader(bm.in), defaultLineLimits())
				for {
					if _, err := lr.Next(); err != nil {
						break
					}
				}
			}
		})
	}
}

func FuzzLineReader(f *testing.F) {
	for _, name := range []string{"claude-stream-sample.jsonl", "claude-stream-partial-sample.jsonl"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		for line := range bytes.Lines(data) {
			f.Add(line)
		}
	}
	f.Add([]byte(`{"a":"` + strings.Repeat(`x\"\\\u00e9`, 20) + `"}`))
	f.Add([]byte(`[[[[[[[[[[1]]]]]]]]]]`))
	f.Add([]byte(`{"a":[` + strings.Repeat(`"0123456789abcdef",`, 20) + `1]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		lim := tinyLimits()
		lr := newLineReader(bytes.NewReader(in), lim)
		rest := in
		for {
			got, err := lr.Next()
			if err != nil {
				if len(rest) != 0 {
					t.Fatalf("stopped with %q unread", rest)
				}
				return
			}
			want, after, _ := bytes.Cut(rest, []byte("\n"))
			rest = after
			if len(want) <= lim.maxLine {
				if !bytes.Equal(got, want) {
					t.Fatalf("short line changed:\n in %q\nout %q", want, got)
				}
				continue
			}
			if len(got) > lim.maxOut() {
				t.Fatalf("line of %d bytes kept as %d bytes, bound %d", len(want), len(got), lim.maxOut())
			}
			if keepsJSON(want, lim) && !json.Valid(got) {
				t.Fatalf("valid JSON came out invalid:\n in %q\nout %q", want, got)
			}
		}
	})
}

// keepsJSON says whether a long line must come out valid JSON: it is valid,
// its top level is an object, array or string, and it is within the depth
// and literal bounds.
func keepsJSON(line []byte, lim lineLimits) bool {
	if !json.Valid(line) {
		return false
	}
	trimmed := bytes.TrimLeft(line, " \t\r")
	if len(trimmed) == 0 || !bytes.ContainsRune([]byte(`{["`), rune(trimmed[0])) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
				if depth > lim.maxDepth {
					return false
				}
			} else {
				depth--
			}
		case json.Number:
			if len(v) > lim.maxLiteral {
				return false
			}
		}
	}
}

// TestLineReaderKeepsJSONValid shortens random long JSON lines with tiny
// limits: valid JSON in, valid JSON out, within the bound.
func TestLineReaderKeepsJSONValid(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	lim := tinyLimits()
	for i := range 3000 {
		var b bytes.Buffer
		randomJSON(r, &b, 0, lim.maxDepth)
		in := b.Bytes()
		if !json.Valid(in) {
			t.Fatalf("generator made invalid JSON: %q", in)
		}
		got := readLines(t, bytes.NewReader(append(in, '\n')), lim)
		if len(got) != 1 {
			t.Fatalf("doc %d: got %d lines", i, len(got))
		}
		if len(in) > lim.maxLine && !json.Valid([]byte(got[0])) {
			t.Fatalf("doc %d: invalid output\n in %q\nout %q", i, in, got[0])
		}
		if len(got[0]) > lim.maxOut() {
			t.Fatalf("doc %d: %d bytes out, bound %d", i, len(got[0]), lim.maxOut())
		}
	}
}

// randomJSON writes a random JSON value with random whitespace; the top
// level is always a container.
func randomJSON(r *rand.Rand, b *bytes.Buffer, depth, maxDepth int) {
	ws := func() {
		if r.IntN(4) == 0 {
			b.WriteString([]string{" ", "\t", "  ", "\r"}[r.IntN(4)])
		}
	}
	kind := r.IntN(6)
	if depth == 0 {
		kind = r.IntN(2)
	}
	if depth >= maxDepth-1 && kind < 2 {
		kind = 2
	}
	ws()
	switch kind {
	case 0, 1:
		open, close := byte('['), byte(']')
		if kind == 1 {
			open, close = '{', '}'
		}
		b.WriteByte(open)
		n := r.IntN(6)
		for i := range n {
			if i > 0 {
				ws()
				b.WriteByte(',')
			}
			if kind == 1 {
				ws()
				randomString(r, b)
				ws()
				b.WriteByte(':')
			}
			randomJSON(r, b, depth+1, maxDepth)
		}
		ws()
		b.WriteByte(close)
	case 2, 3:
		randomString(r, b)
	case 4:
		b.WriteString([]string{"0", "-1.5e3", "123456", "true", "false", "null"}[r.IntN(6)])
	default:
		fmt.Fprintf(b, "%d", r.IntN(1000))
	}
	ws()
}

func randomString(r *rand.Rand, b *bytes.Buffer) {
	pieces := []string{"a", "bc", "-", " ", `\"`, `\\`, `\n`, `\/`, `\u00e9`, `\ud83d\ude00`, "é", "😀", "x"}
	b.WriteByte('"')
	n := r.IntN(40)
	if r.IntN(3) == 0 {
		n = r.IntN(200)
	}
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	b.WriteByte('"')
}
