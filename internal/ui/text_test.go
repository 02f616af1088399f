package ui

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "All good. <promise>TASK_DONE</promise>", "All good. <promise>TASK_DONE</promise>"},
		{"newlines and tabs stay", "a\n\tb\n", "a\n\tb\n"},
		{"unicode stays", "ünïcödé → ✓ 日本", "ünïcödé → ✓ 日本"},
		{"OSC 52 clipboard, BEL", "x\x1b]52;c;cm0gLXJmIH4=\x07y", "xy"},
		{"OSC 0 title, ST", "x\x1b]0;pwned\x1b\\y", "xy"},
		{"OSC 8 link", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"DCS", "a\x1bP+q544e\x1b\\b", "ab"},
		{"APC", "a\x1b_Gf=100;AAAA\x1b\\b", "ab"},
		{"CSI colour", "\x1b[31mred\x1b[0m", "red"},
		{"CSI clear screen and cursor", "\x1b[2J\x1b[H\x1b[10;5Hhi", "hi"},
		{"CSI private mode", "\x1b[?1049h\x1b[?25lx", "x"},
		{"two-byte escapes", "\x1bcreset\x1b7saved\x1b8", "resetsaved"},
		{"C1 CSI", "a\u009b31mb", "ab"},
		{"C1 OSC to C1 ST", "a\u009d0;t\u009cb", "ab"},
		{"carriage return and backspace", "rm -rf /\r# safe\b\b", "rm -rf /# safe"},
		{"other C0 and DEL", "a\x00b\x07c\x7fd", "abcd"},
		{"unterminated OSC", "a\x1b]52;c;AAAA", "a"},
		{"ESC at the end", "a\x1b", "a"},
		{"invalid UTF-8", "a\xffb", "a\ufffdb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzText: whatever goes in, what comes out holds no ESC, no C0 control
// but newline and tab, no DEL and no C1 control, is valid UTF-8, and is
// already clean.
func FuzzText(f *testing.F) {
	for _, s := range []string{"x\x1b]52;c;AAAA\x07y", "\x1b[31mred\x1b[0m", "a\u009b31mb", "\x1bP\x1b\\", "ok\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Text(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				t.Fatalf("Text(%q) = %q holds control %U", s, got, r)
			}
		}
		if again := Text(got); again != got {
			t.Fatalf("Text is not idempotent: %q, then %q", got, again)
		}
		if strings.Contains(got, "\x1b") {
			t.Fatalf("ESC left in %q", got)
		}
	})
}
