package proc_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ralph-loop/ralph/internal/proc"
)

func TestTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		size    int
		writes  []string
		want    string
		dropped int64
	}{
		{name: "under the size", size: 8, writes: []string{"ab", "cd"}, want: "abcd"},
		{name: "exactly the size", size: 4, writes: []string{"ab", "cd"}, want: "abcd"},
		{name: "wraps", size: 4, writes: []string{"abc", "def"}, want: "cdef", dropped: 2},
		{name: "one write longer than the size", size: 4, writes: []string{"abcdefgh"}, want: "efgh", dropped: 4},
		{name: "many small writes", size: 3, writes: strings.Split("abcdefghij", ""), want: "hij", dropped: 7},
		// "é" is two bytes, "€" three: a cut inside one starts the tail
		// at the next whole character.
		{name: "cut inside a two-byte character", size: 3, writes: []string{"aéé"}, want: "é", dropped: 3},
		{name: "cut inside a three-byte character", size: 5, writes: []string{"x€€"}, want: "€", dropped: 4},
		{name: "cut on a character boundary", size: 4, writes: []string{"aéé"}, want: "éé", dropped: 1},
		{name: "an uncut tail is kept as written", size: 8, writes: []string{"\x80ab"}, want: "\x80ab"},
		{name: "size zero keeps nothing", size: 0, writes: []string{"abc"}, want: "", dropped: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tail := proc.NewTail(tt.size)
			for _, w := range tt.writes {
				if n, err := tail.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if diff := cmp.Diff(tt.want, tail.String()); diff != "" {
				t.Errorf("String (-want +got):\n%s", diff)
			}
			if got := tail.Dropped(); got != tt.dropped {
				t.Errorf("Dropped = %d, want %d", got, tt.dropped)
			}
		})
	}
}

// TestTailBoundedAndWhole writes a long mixed text in uneven pieces: the
// tail never holds more than its size, always ends the text and always
// starts on a whole character.
func TestTailBoundedAndWhole(t *testing.T) {
	t.Parallel()
	text := []byte(strings.Repeat("aé€😀", 500))
	for size := 1; size <= 40; size++ {
		tail := proc.NewTail(size)
		for i, n := 0, 1; i < len(text); i, n = i+n, n%7+1 {
			_, _ = tail.Write(text[i:min(i+n, len(text))])
		}
		got := tail.Bytes()
		raw := tail.AppendTo(nil)
		switch {
		case len(raw) != size || !bytes.HasSuffix(text, raw):
			t.Errorf("size %d: raw tail %q is not the text's last %d bytes", size, raw, size)
		case !bytes.HasSuffix(raw, got) || len(raw)-len(got) > utf8.UTFMax-1:
			t.Errorf("size %d: Bytes %q trims too much of %q", size, got, raw)
		case !utf8.Valid(got):
			t.Errorf("size %d: Bytes %q is not whole characters", size, got)
		case tail.Dropped() != int64(len(text)-len(got)):
			t.Errorf("size %d: Dropped %d, want %d", size, tail.Dropped(), len(text)-len(got))
		}
	}
}

func TestTailReset(t *testing.T) {
	t.Parallel()
	tail := proc.NewTail(4)
	_, _ = tail.Write([]byte("abcdef"))
	tail.Reset(2)
	if tail.String() != "" || tail.Dropped() != 0 {
		t.Errorf("after Reset: %q, dropped %d", tail.String(), tail.Dropped())
	}
	_, _ = tail.Write([]byte("xyz"))
	if got := string(tail.AppendTo([]byte("<"))); got != "<yz" {
		t.Errorf("AppendTo = %q, want %q", got, "<yz")
	}
}
