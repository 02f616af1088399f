package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestVisible(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain\tline\n", "plain\tline\n"},
		{"# hi\x1b[1A\x1b[2K\x1b[8m[notify]", `# hi\x1b[1A\x1b[2K\x1b[8m[notify]`},
		{"a\rb\bc\x7f", `a\x0db\x08c\x7f`},
		{"x = 1 \u202e// evil\u202c", "x = 1 <U+202E>// evil<U+202C>"},
		{"a\u200bb\u2066c\u2069", "a<U+200B>b<U+2066>c<U+2069>"},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bad \xff byte", `bad \xff byte`},
		{"café ✓", "café ✓"},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, Visible(tt.in)); d != "" {
			t.Errorf("Visible(%q) (-want +got):\n%s", tt.in, d)
		}
	}
}

func TestTextShowsHidden(t *testing.T) {
	t.Parallel()
	if got := Text("ok \u202eevil\u202c \x1b[2Kx\u200b"); got != "ok <U+202E>evil<U+202C> x<U+200B>" {
		t.Fatalf("Text = %q", got)
	}
	if family := "👨\u200d👩\u200d👧"; Text(family) != family {
		t.Fatalf("Text broke an emoji sequence: %q", Text(family))
	}
}

// safe reports whether s holds nothing a terminal obeys or hides.
func safe(s string) bool {
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || hidden(r) {
			return false
		}
	}
	return true
}

func FuzzVisible(f *testing.F) {
	f.Add("# hi\x1b[1A\x1b[2K[notify]\u202e\u200b\xff")
	f.Fuzz(func(t *testing.T, s string) {
		if v := Visible(s); !safe(v) || !utf8.ValidString(v) {
			t.Fatalf("Visible(%q) = %q", s, v)
		}
		if v := Text(s); !safe(strings.Map(func(r rune) rune {
			if joiner(r) {
				return 'j'
			}
			return r
		}, v)) {
			t.Fatalf("Text(%q) = %q", s, v)
		}
	})
}
