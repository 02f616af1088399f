package redact

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestString(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain text", "nothing to hide here: https://example.com:8080/path", "nothing to hide here: https://example.com:8080/path"},
		{"url password", "postgres://app:PASSWORD@db/app", "postgres://app:<redacted>@db/app"},
		{"url password, no user", "redis://:s3cret@cache:6379/0", "redis://:<redacted>@cache:6379/0"},
		{"url password in a sentence", "connect to https://bob:hunter2@git.example.com/x.git failed", "connect to https://bob:<redacted>@git.example.com/x.git failed"},
		{"url user only", "ssh://git@github.com/o/r", "ssh://git@github.com/o/r"},
		{"bearer", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "Authorization: Bearer <redacted>"},
		{"bearer lower case", "curl -H 'authorization: bearer abcdefghijklmnopqrstuv'", "curl -H 'authorization: bearer <redacted>'"},
		{"bearer in prose", "Bearer tokens are secrets", "Bearer tokens are secrets"},
		{"basic", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic <redacted>"},
		{"openai", "OPENAI key sk-proj-abcdefghijklmnopqrstuvwxyz0123", "OPENAI key <redacted>"},
		{"anthropic", "export X=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz_0123-xyz", "export X=<redacted>"},
		{"short sk- word", "the sk-learn package", "the sk-learn package"},
		{"github classic", "token ghp_0123456789abcdefghijABCDEFGHIJ012345", "token <redacted>"},
		{"github server", "ghs_0123456789abcdefghijKLMNOP", "<redacted>"},
		{"github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "<redacted>"},
		{"slack", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "<redacted>"},
		{"aws key id", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "aws_access_key_id = <redacted>"},
		{"aws secret", "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key=<redacted>"},
		{"aws secret, quoted", `"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"`, `"AWS_SECRET_ACCESS_KEY": "<redacted>"`},
		{"google", "key=AIzaSyA-1234567890abcdefghijklmnopqrstu", "key=<redacted>"},
		{"two in a line", "postgres://a:b@h and ghp_0123456789abcdefghijABCDEF", "postgres://a:<redacted>@h and <redacted>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, String(tt.in)); diff != "" {
				t.Errorf("String(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"API_TOKEN=s3cret":                            "API_TOKEN=<redacted>",
		"ANTHROPIC_API_KEY=whatever":                  "ANTHROPIC_API_KEY=<redacted>",
		"DATABASE_URL=postgres://app:PASSWORD@db/a":   "DATABASE_URL=postgres://app:<redacted>@db/a",
		"EXTRA=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx": "EXTRA=<redacted>",
		"NO_COLOR=1": "NO_COLOR=1",
		"NOEQUALS":   "NOEQUALS",
	} {
		if got := Env(in); got != want {
			t.Errorf("Env(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzString: redacting never reveals more than it was given, is stable
// (redacting again changes nothing), and a secret of each shape put
// anywhere in the text is gone.
func FuzzString(f *testing.F) {
	for _, s := range []string{"postgres://app:PASSWORD@db/app", "Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
		"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx", "ghp_0123456789abcdefghijABCDEF", "AKIAIOSFODNN7EXAMPLE", "plain text", ""} {
		f.Add(s, "before ", " after")
	}
	secrets := []string{"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx", "ghp_0123456789abcdefghijABCDEF", "xoxb-1234567890-AbCdEfGh",
		"AKIAIOSFODNN7EXAMPLE", "github_pat_11ABCDEFG0123456789_abcdef"}
	f.Fuzz(func(t *testing.T, s, before, after string) {
		once := String(s)
		if twice := String(once); twice != once {
			t.Fatalf("not stable: %q -> %q -> %q", s, once, twice)
		}
		for _, secret := range secrets {
			// Separated from what surrounds it, as a token is.
			text := before + " " + secret + " " + after
			if got := String(text); strings.Contains(got, secret) {
				t.Fatalf("%q kept in %q", secret, got)
			}
		}
		url := "https://user:" + "pw" + strings.Map(func(r rune) rune {
			if r <= ' ' || r == '/' || r == '@' || r == ':' || r == '?' || r == '#' || r > 126 {
				return -1
			}
			return r
		}, after) + "@host/x"
		if got := String(before + " " + url); strings.Contains(got, "user:pw") {
			t.Fatalf("url password kept: %q", got)
		}
	})
}

// TestWriter: a secret written in pieces is hidden; the text around it
// arrives whole.
func TestWriter(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	w := NewWriter(&b)
	for _, piece := range []string{"line one\nurl postgres://app:PASS", "WORD@db/app\n", "tail ghp_0123456789", "abcdefghijABCDEF"} {
		if _, err := w.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "line one\nurl postgres://app:<redacted>@db/app\ntail <redacted>"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}
