package guard

import (
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSeeds are diffs as git prints them: deleted binary and text files,
// a mode change, CRLF content, quoted and spaced names, a rename, a new
// file, hunks with and without context.
var fuzzSeeds = []string{
	"diff --git a/bin_test.go b/bin_test.go\ndeleted file mode 100644\nindex d5d0b8b..0000000\nBinary files a/bin_test.go and /dev/null differ\n" +
		"diff --git a/crlf.txt b/crlf.txt\nold mode 100644\nnew mode 100755\nindex c30dea8..06c9c76\n--- a/crlf.txt\n+++ b/crlf.txt\n@@ -2 +2 @@ a\n-b\r\n+c\r\n" +
		"diff --git a/my dir/a_test.go b/my dir/a_test.go\ndeleted file mode 100644\nindex a72b584..0000000\n--- a/my dir/a_test.go\t\n+++ /dev/null\n@@ -1,5 +0,0 @@\n-package x\n-\n-func TestA(t *testing.T) {\n-\tt.Error(\"x\")\n-}\n" +
		"diff --git \"a/na\\303\\257ve_test.go\" \"b/na\\303\\257ve_test.go\"\nindex c1b0730..e69de29 100644\n--- \"a/na\\303\\257ve_test.go\"\n+++ \"b/na\\303\\257ve_test.go\"\n@@ -1 +0,0 @@\n-x\n\\ No newline at end of file\n",
	"diff --git a/x_test.go b/x_test.go\nindex 1111111..2222222 100644\n--- a/x_test.go\n+++ b/x_test.go\n@@ -5,3 +5,4 @@ import \"testing\"\n func TestA(t *testing.T) {\n+\tt.Skip(\"flaky\")\n \tif got := 1; got != 1 {\n-\t\tt.Errorf(\"got %d\", got)\n+\t\t// t.Errorf(\"got %d\", got)\n",
	"diff --git a/x_test.go b/y_test.go\nsimilarity index 100%\nrename from x_test.go\nrename to y_test.go\n" +
		"diff --git a/src/lib.rs b/src/lib.rs\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ b/src/lib.rs\n@@ -0,0 +1,3 @@\n+#![allow(clippy::unwrap_used)]\n+#[test]\n+/* fn a() {}\n",
	"diff --git a/pyproject.toml b/pyproject.toml\nindex 1..2 100644\n--- a/pyproject.toml\n+++ b/pyproject.toml\n@@ -5,3 +5,3 @@\n [tool.ruff]\n line-length = 88\n-select = [\"E\", \"F\"]\n+select = [\"E\"]\n" +
		"diff --git a/Makefile b/Makefile\nindex 1..2 100644\n--- a/Makefile\n+++ b/Makefile\n@@ -7 +7 @@ test:\n-\tgo test ./...\n+\ttrue\n",
	"diff --git a/tests/test_calc.py b/tests/test_calc.py\nindex 1..2 100644\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -7,3 +7,4 @@ class TestAdd(unittest.TestCase):\n     def test_add(self):\n-        self.assertEqual(add(1, 2), 3)\n+        pass  # self.assertEqual(add(1, 2), 3)\n+        return\n         self.assertEqual(add(2, 2), 4)\n",
	"diff --git a/a.test.ts b/a.test.ts\nindex 1..2 100644\n--- a/a.test.ts\n+++ b/a.test.ts\n@@ -4,3 +4,6 @@ describe('adder', () => {\n   it('adds', () => {\n-    expect(add(1, 2)).toBe(3)\n+    expect(true).toBe(true)\n+    if (false) {\n+      expect(add(2, 2)).toBe(4) // x\n+    }\n   })\n",
	"",
	"not a diff at all\n",
}

func FuzzGuard(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), "Remove TestA. Skip the flaky test. Update the CI workflow.")
	}
	f.Fuzz(func(t *testing.T, diff []byte, task string) {
		opts := Options{
			GateCommands: []string{"make test", "npm run lint", "bash .ci/run"},
			PlanFile:     "prd.json",
			Task:         task,
			After:        func(string) ([]byte, bool) { return diff, true },
		}
		findings, err := Check(diff, opts)
		if err != nil {
			if findings != nil {
				t.Fatalf("Check returned findings with an error: %v", err)
			}
			return
		}
		if !sort.SliceIsSorted(findings, func(i, j int) bool {
			a, b := findings[i], findings[j]
			if a.File != b.File {
				return a.File < b.File
			}
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			if a.Rule != b.Rule {
				return a.Rule < b.Rule
			}
			return a.Text < b.Text
		}) {
			t.Fatalf("findings out of order: %+v", findings)
		}
		for i, fd := range findings {
			if i > 0 && fd.Rule == findings[i-1].Rule && fd.File == findings[i-1].File && fd.Line == findings[i-1].Line && fd.Text == findings[i-1].Text {
				t.Fatalf("duplicate finding %+v", fd)
			}
			if len(fd.Text) > maxText+len("…") {
				t.Fatalf("text of %d bytes: %q", len(fd.Text), fd.Text)
			}
			if utf8.Valid(diff) && !utf8.ValidString(fd.Text) {
				t.Fatalf("text cut inside a rune: %q", fd.Text)
			}
			if fd.Rule == "" || fd.Why == "" || fd.Line < 0 {
				t.Fatalf("incomplete finding %+v", fd)
			}
		}
		if r := Report(findings, 512); len(r) > 512 {
			t.Fatalf("report of %d bytes", len(r))
		}
		if r := Report(findings, 0); strings.Count(r, "\n") > len(findings)+1 {
			t.Fatalf("report has more lines than findings:\n%s", r)
		}
	})
}

// TestFuzzSeeds: the seeds are real git output and read without error.
func TestFuzzSeeds(t *testing.T) {
	t.Parallel()
	want := []string{
		"test-deleted bin_test.go:0 | test-deleted my dir/a_test.go:0 | test-deleted naïve_test.go:0",
		"skip-added x_test.go:6 | assertion-commented x_test.go:8",
		"suppression-added src/lib.rs:1 | assertion-commented src/lib.rs:3",
		"config-changed Makefile:7 | config-changed pyproject.toml:7",
		"assertion-commented tests/test_calc.py:8 | assertion-unreachable tests/test_calc.py:10",
		"assertion-unreachable a.test.ts:7",
		"",
		"",
	}
	for i, s := range fuzzSeeds {
		got, err := Check([]byte(s), Options{})
		if err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
		if g := strings.Join(brief(got), " | "); g != want[i] {
			t.Errorf("seed %d: got %q, want %q", i, g, want[i])
		}
	}
}

// syntaxes are the languages' syntaxes, for the fuzz targets to pick from.
var syntaxes = []syntax{goSyntax, jsSyntax, rsSyntax, jvmSyntax, pySyntax, shSyntax}

// FuzzScan: reading a line never panics, keeps UTF-8 whole, and its code
// read again is the same code with no comment in it.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		"pass  # self.assertEqual(add(1, 2), 3)", `x = "a # b"  # c`, "\t\t_ = got // t.Errorf(\"got %d\", got)",
		"/* t.Errorf(x) */ y()", "*/ t.Errorf(x)", `fn id<'a>(s: &'a str) -> &'a str { s } // assert_eq!`,
		`let c = '\''; // x`, "`raw // string` // c", `x = """doc`, `""" a """ b`, "'''", `'\u{1F600}'`, "é'é'",
	} {
		f.Add(s, byte(0), false)
		f.Add(s, byte(4), true)
	}
	f.Fuzz(func(t *testing.T, text string, lang byte, inBlock bool) {
		sx := syntaxes[int(lang)%len(syntaxes)]
		sc := sx.scan(text, inBlock)
		if len(sc.code) > len(text) || len(sc.remark) > len(text) {
			t.Fatalf("scan(%q) = %+v: longer than the line", text, sc)
		}
		if utf8.ValidString(text) && (!utf8.ValidString(sc.code) || !utf8.ValidString(sc.remark)) {
			t.Fatalf("scan(%q) = %+v: cut inside a rune", text, sc)
		}
		if sc.commented() && sc.code != "" {
			t.Fatalf("scan(%q) = %+v: all comment, with code", text, sc)
		}
		if again := sx.scan(sc.code, false); again.code != sc.code || again.comment {
			t.Fatalf("scan(%q).code = %q reads again as %+v", text, sc.code, again)
		}
	})
}

// FuzzDeadAfter: the lines a stop keeps from running are below it (or on
// it, for a branch on one line), in order, within the span, and never
// empty; in Python an exit's dead lines are indented at least as much as
// it. vacuous and tokens never panic on any line.
func FuzzDeadAfter(f *testing.F) {
	f.Add("    def test_add(self):\n        return\n        self.assertEqual(add(1, 2), 3)\n\n    def test_b(self):\n        pass\n", 2, byte(4))
	f.Add("    if False:\n        self.fail()\n    x = 1\n", 1, byte(4))
	f.Add("func TestA(t *testing.T) {\n\treturn\n\tif x {\n\t\tt.Errorf(\"}\")\n\t}\n}\n", 2, byte(0))
	f.Add("  it('a', () => {\n    if (false)\n    {\n      expect(x).toBe(1) }\n  })\n", 2, byte(1))
	f.Add("switch x {\ncase 1:\n\treturn\ncase 2:\n\tt.Fatal(1)\n}\n", 3, byte(0))
	f.Add("        if (false) { assertEquals(1, f()); } else {\n", 1, byte(3))
	f.Fuzz(func(t *testing.T, file string, n int, lang byte) {
		sx := syntaxes[int(lang)%len(syntaxes)]
		ls := strings.Split(file, "\n")
		if n < 1 || n > len(ls) {
			return
		}
		at := func(i int) (string, bool) {
			if i < 1 || i > len(ls) {
				return "", false
			}
			return ls[i-1], true
		}
		dead := sx.deadAfter(at, n, ls[n-1], false)
		last := n - 1
		for _, d := range dead {
			if d.n < n || d.n > n+maxDeadSpan || d.n > len(ls) || d.n < last || d.code == "" {
				t.Fatalf("line %d of %q: dead lines %+v", n, file, dead)
			}
			last = d.n
			if sx.indented && sx.exit.MatchString(strings.TrimSpace(ls[n-1])) && indentOf(ls[d.n-1]) < indentOf(ls[n-1]) {
				t.Fatalf("line %d of %q: dead line %d is outside the exit's block", n, file, d.n)
			}
		}
		for _, l := range ls {
			vacuous(sx, l)
		}
	})
}
