package guard

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Fixtures: one small test file per language, the line numbers in
// comments.
var (
	goTest = lines(
		"package x",                             // 1
		"",                                      // 2
		`import "testing"`,                      // 3
		"",                                      // 4
		"func TestA(t *testing.T) {",            // 5
		"\tif got := 1; got != 1 {",             // 6
		"\t\tt.Errorf(\"got %d\", got)",         // 7
		"\t}",                                   // 8
		"}",                                     // 9
		"",                                      // 10
		"func TestB(t *testing.T) {",            // 11
		"\tt.Run(\"sub\", func(t *testing.T) {", // 12
		"\t\tt.Fatal(\"no\")",                   // 13
		"\t})",                                  // 14
		"}",                                     // 15
	)
	goSrc = lines(
		"package x",            // 1
		"",                     // 2
		"func f() error {",     // 3
		"\treturn nil",         // 4
		"}",                    // 5
		"",                     // 6
		"func g() { _ = f() }", // 7
	)
	jsTest = lines(
		"import { describe, it, expect } from 'vitest'", // 1
		"",                              // 2
		"describe('adder', () => {",     // 3
		"  it('adds', () => {",          // 4
		"    expect(add(1, 2)).toBe(3)", // 5
		"  })",                          // 6
		"",                              // 7
		"  it('subtracts', () => {",     // 8
		"    expect(sub(3, 2)).toBe(1)", // 9
		"  })",                          // 10
		"})",                            // 11
	)
	jsSrc = lines(
		"export function add(a, b) {", // 1
		"  return a + b",              // 2
		"}",                           // 3
	)
	pyTest = lines(
		"import pytest",             // 1
		"",                          // 2
		"",                          // 3
		"def test_add():",           // 4
		"    assert add(1, 2) == 3", // 5
		"",                          // 6
		"",                          // 7
		"def test_sub():",           // 8
		"    assert sub(3, 2) == 1", // 9
	)
	pySrc = lines(
		"import os",        // 1
		"",                 // 2
		"",                 // 3
		"def add(a, b):",   // 4
		"    return a + b", // 5
	)
	pyproject = lines(
		"[project]",                   // 1
		`name = "calc"`,               // 2
		`dependencies = ["requests"]`, // 3
		"",                            // 4
		"[tool.ruff]",                 // 5
		"line-length = 88",            // 6
		`select = ["E", "F"]`,         // 7
	)
	rsLib = lines(
		"pub fn add(a: i32, b: i32) -> i32 {", // 1
		"    a + b",                           // 2
		"}",                                   // 3
		"",                                    // 4
		"#[cfg(test)]",                        // 5
		"mod tests {",                         // 6
		"    use super::*;",                   // 7
		"",                                    // 8
		"    #[test]",                         // 9
		"    fn adds() {",                     // 10
		"        assert_eq!(add(1, 2), 3);",   // 11
		"    }",                               // 12
		"",                                    // 13
		"    #[test]",                         // 14
		"    fn adds_zero() {",                // 15
		"        assert_eq!(add(0, 0), 0);",   // 16
		"    }",                               // 17
		"}",                                   // 18
	)
	cargo = lines(
		"[package]",            // 1
		`name = "calc"`,        // 2
		"",                     // 3
		"[lints.clippy]",       // 4
		`unwrap_used = "deny"`, // 5
	)
	javaTest = lines(
		"package calc;",                      // 1
		"",                                   // 2
		"import org.junit.jupiter.api.Test;", // 3
		"import static org.junit.jupiter.api.Assertions.assertEquals;", // 4
		"",                  // 5
		"class CalcTest {",  // 6
		"    @Test",         // 7
		"    void adds() {", // 8
		"        assertEquals(3, Calc.add(1, 2));", // 9
		"    }",                  // 10
		"",                       // 11
		"    @Test",              // 12
		"    void subtracts() {", // 13
		"        assertEquals(1, Calc.sub(3, 2));", // 14
		"    }", // 15
		"}",     // 16
	)
	javaSrc = lines(
		"package calc;", // 1
		"",              // 2
		"class Calc {",  // 3
		"    static int add(int a, int b) { return a + b; }", // 4
		"}", // 5
	)
	makefile = lines(
		".PHONY: build test verify", // 1
		"",                          // 2
		"build:",                    // 3
		"\tgo build ./...",          // 4
		"",                          // 5
		"test:",                     // 6
		"\tgo test ./...",           // 7
		"",                          // 8
		"verify:",                   // 9
		"\tgo vet ./...",            // 10
		"\tgo test -race ./...",     // 11
	)
	packageJSON = lines(
		"{",                         // 1
		`  "name": "calc",`,         // 2
		`  "scripts": {`,            // 3
		`    "build": "tsc",`,       // 4
		`    "test": "vitest run",`, // 5
		`    "lint:ci": "eslint ."`, // 6
		"  },",                      // 7
		`  "dependencies": {`,       // 8
		`    "left-pad": "1.0.0"`,   // 9
		"  }",                       // 10
		"}",                         // 11
	)
)

// threeTests follows goTest: TestC on line 17, TestD's check on 23.
const threeTests = "\nfunc TestC(t *testing.T) {\n\tt.Log(\"c\")\n}\n\nfunc TestD(t *testing.T) {\n\tx := 1\n\tt.Error(\"d\")\n\t_ = x\n}\n"

// sub returns s with old replaced by new once; the fixture must hold old.
func sub(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("fixture lacks %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

type guardCase struct {
	name          string
	before, after map[string]string
	opts          Options
	want          []string
	// needsContent: the finding depends on knowing what surrounds a line
	// (a TOML section); a bare -U0 diff does not show it, so that mode
	// expects nothing.
	needsContent bool
}

// run checks one case on every form of diff ralph may be handed: -U0
// without renames, with and without the files' contents; git diff with
// context and renames; a diff of two trees; and the -U0 diff with CRLF
// line ends.
func (tc guardCase) run(t *testing.T) {
	t.Helper()
	d := makeDiffs(t, change{tc.before, tc.after})
	crlf := bytes.ReplaceAll(d.u0, []byte("\n"), []byte("\r\n"))
	modes := []struct {
		name string
		diff []byte
		opts Options
		bare bool
	}{
		{"u0+content", d.u0, d.withContent(tc.opts), false},
		{"u0", d.u0, tc.opts, true},
		{"u3", d.u3, tc.opts, false},
		{"trees", d.trees, tc.opts, false},
		{"crlf", crlf, d.withContent(tc.opts), false},
	}
	for _, m := range modes {
		got, err := Check(m.diff, m.opts)
		if err != nil {
			t.Fatalf("%s: Check: %v\n%s", m.name, err, m.diff)
		}
		want := tc.want
		if m.bare && tc.needsContent {
			want = nil
		}
		if diff := cmp.Diff(want, brief(got)); diff != "" {
			t.Errorf("%s: findings (-want +got):\n%s\ndiff:\n%s\nreport:\n%s", m.name, diff, m.diff, Report(got, 0))
		}
	}
}

func TestCheckGo(t *testing.T) {
	t.Parallel()
	for _, tc := range []guardCase{
		{name: "test file deleted", before: map[string]string{"x_test.go": goTest, "x.go": goSrc}, after: map[string]string{"x.go": goSrc},
			want: []string{"test-deleted x_test.go:0"}},
		{name: "test file emptied", before: map[string]string{"x_test.go": goTest}, after: map[string]string{"x_test.go": ""},
			want: []string{"test-deleted x_test.go:0"}},
		{name: "test function and its subtest removed", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\nfunc TestB(t *testing.T) {\n\tt.Run(\"sub\", func(t *testing.T) {\n\t\tt.Fatal(\"no\")\n\t})\n}\n", "")},
			want:  []string{"test-removed x_test.go:11", "test-removed x_test.go:12"}},
		{name: "assertion commented out next to a removed test", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\t\tt.Errorf(\"got %d\", got)\n\t}\n}\n\nfunc TestB(t *testing.T) {\n\tt.Run(\"sub\", func(t *testing.T) {\n\t\tt.Fatal(\"no\")\n\t})\n}\n", "\t\t// t.Errorf(\"got %d\", got)\n\t}\n}\n")},
			want:  []string{"assertion-commented x_test.go:7", "test-removed x_test.go:11", "test-removed x_test.go:12"}},
		{name: "assertion removed in the test after a removed one", before: map[string]string{"x_test.go": goTest + threeTests},
			after: map[string]string{"x_test.go": goTest + sub(t, sub(t, threeTests, "func TestC(t *testing.T) {\n\tt.Log(\"c\")\n}\n\n", ""), "\tt.Error(\"d\")\n", "")},
			want:  []string{"test-removed x_test.go:17", "assertion-removed x_test.go:23"}},
		{name: "skip added", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "func TestA(t *testing.T) {\n", "func TestA(t *testing.T) {\n\tt.Skip(\"flaky\")\n")},
			want:  []string{"skip-added x_test.go:6"}},
		{name: "assertion removed", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\t\tt.Errorf(\"got %d\", got)\n", "")},
			want:  []string{"assertion-removed x_test.go:7"}},
		{name: "assertion commented out", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\t\tt.Errorf(", "\t\t// t.Errorf(")},
			want:  []string{"assertion-commented x_test.go:7"}},
		{name: "block comment around a test", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, sub(t, goTest, "func TestA", "/*\nfunc TestA"), "}\n\nfunc TestB", "}\n*/\n\nfunc TestB")},
			want:  []string{"assertion-commented x_test.go:5"}},
		{name: "nolint added", before: map[string]string{"x.go": goSrc},
			after: map[string]string{"x.go": sub(t, goSrc, "_ = f() }", "_ = f() } //nolint:errcheck")},
			want:  []string{"suppression-added x.go:7"}},
		{name: "build tag ignore added to a test file", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": "//go:build ignore\n\n" + goTest},
			want:  []string{"skip-added x_test.go:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

func TestCheckJS(t *testing.T) {
	t.Parallel()
	for _, tc := range []guardCase{
		{name: "test file deleted", before: map[string]string{"src/a.test.ts": jsTest, "src/a.ts": jsSrc}, after: map[string]string{"src/a.ts": jsSrc},
			want: []string{"test-deleted src/a.test.ts:0"}},
		{name: "__tests__ file deleted", before: map[string]string{"src/__tests__/a.js": jsTest}, after: map[string]string{"src/a.js": jsSrc},
			want: []string{"test-deleted src/__tests__/a.js:0"}},
		{name: "spec file deleted", before: map[string]string{"a.spec.mjs": jsTest}, after: map[string]string{},
			want: []string{"test-deleted a.spec.mjs:0"}},
		{name: "test case removed", before: map[string]string{"a.test.js": jsTest},
			after: map[string]string{"a.test.js": sub(t, jsTest, "\n  it('subtracts', () => {\n    expect(sub(3, 2)).toBe(1)\n  })\n", "")},
			want:  []string{"test-removed a.test.js:8"}},
		{name: "it.skip", before: map[string]string{"a.test.js": jsTest},
			after: map[string]string{"a.test.js": sub(t, jsTest, "it('adds'", "it.skip('adds'")},
			want:  []string{"skip-added a.test.js:4"}},
		{name: "it.only narrows the suite", before: map[string]string{"a.test.js": jsTest},
			after: map[string]string{"a.test.js": sub(t, jsTest, "it('subtracts'", "it.only('subtracts'")},
			want:  []string{"skip-added a.test.js:8"}},
		{name: "xit", before: map[string]string{"a.test.js": jsTest},
			after: map[string]string{"a.test.js": sub(t, jsTest, "it('adds'", "xit('adds'")},
			want:  []string{"skip-added a.test.js:4"}},
		{name: "describe.skip", before: map[string]string{"a.test.js": jsTest},
			after: map[string]string{"a.test.js": sub(t, jsTest, "describe('adder'", "describe.skip('adder'")},
			want:  []string{"skip-added a.test.js:3"}},
		{name: "test.todo", before: map[string]string{"a.test.js": jsTest},
			after: map[string]string{"a.test.js": strings.TrimSuffix(jsTest, "})\n") + "  test.todo('multiplies')\n})\n"},
			want:  []string{"skip-added a.test.js:11"}},
		{name: "expect removed", before: map[string]string{"a.test.js": jsTest},
			after: map[string]string{"a.test.js": sub(t, jsTest, "    expect(add(1, 2)).toBe(3)\n", "")},
			want:  []string{"assertion-removed a.test.js:5"}},
		{name: "expect commented out", before: map[string]string{"a.test.js": jsTest},
			after: map[string]string{"a.test.js": sub(t, jsTest, "    expect(sub(", "    // expect(sub(")},
			want:  []string{"assertion-commented a.test.js:9"}},
		{name: "eslint-disable added", before: map[string]string{"src/a.js": jsSrc},
			after: map[string]string{"src/a.js": sub(t, jsSrc, "  return a + b\n", "  // eslint-disable-next-line no-console\n  console.log(a)\n  return a + b\n")},
			want:  []string{"suppression-added src/a.js:2"}},
		{name: "ts-ignore added", before: map[string]string{"src/a.ts": jsSrc},
			after: map[string]string{"src/a.ts": sub(t, jsSrc, "  return a + b\n", "  // @ts-ignore\n  return a + b\n")},
			want:  []string{"suppression-added src/a.ts:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

func TestCheckPython(t *testing.T) {
	t.Parallel()
	for _, tc := range []guardCase{
		{name: "test file deleted", before: map[string]string{"tests/test_calc.py": pyTest}, after: map[string]string{},
			want: []string{"test-deleted tests/test_calc.py:0"}},
		{name: "test function removed", before: map[string]string{"tests/test_calc.py": pyTest},
			after: map[string]string{"tests/test_calc.py": sub(t, pyTest, "\n\ndef test_sub():\n    assert sub(3, 2) == 1\n", "")},
			want:  []string{"test-removed tests/test_calc.py:8"}},
		{name: "pytest skip", before: map[string]string{"calc_test.py": pyTest},
			after: map[string]string{"calc_test.py": sub(t, pyTest, "def test_add", "@pytest.mark.skip(reason=\"flaky\")\ndef test_add")},
			want:  []string{"skip-added calc_test.py:4"}},
		{name: "xfail", before: map[string]string{"test_calc.py": pyTest},
			after: map[string]string{"test_calc.py": sub(t, pyTest, "def test_sub", "@pytest.mark.xfail\ndef test_sub")},
			want:  []string{"skip-added test_calc.py:8"}},
		{name: "unittest skip", before: map[string]string{"test_calc.py": pyTest},
			after: map[string]string{"test_calc.py": sub(t, pyTest, "def test_sub", "@unittest.skip(\"later\")\ndef test_sub")},
			want:  []string{"skip-added test_calc.py:8"}},
		{name: "assert removed", before: map[string]string{"test_calc.py": pyTest},
			after: map[string]string{"test_calc.py": sub(t, pyTest, "    assert sub(3, 2) == 1", "    pass")},
			want:  []string{"assertion-removed test_calc.py:9"}},
		{name: "assert commented out", before: map[string]string{"test_calc.py": pyTest},
			after: map[string]string{"test_calc.py": sub(t, pyTest, "    assert sub(", "    # assert sub(")},
			want:  []string{"assertion-commented test_calc.py:9"}},
		{name: "noqa and type ignore", before: map[string]string{"calc.py": pySrc},
			after: map[string]string{"calc.py": sub(t, sub(t, pySrc, "import os", "import os  # noqa: F401"), "    return a + b", "    return a + b  # type: ignore")},
			want:  []string{"suppression-added calc.py:1", "suppression-added calc.py:5"}},
		{name: "pylint disable", before: map[string]string{"calc.py": pySrc},
			after: map[string]string{"calc.py": "# pylint: disable=missing-docstring\n" + pySrc},
			want:  []string{"suppression-added calc.py:1"}},
		{name: "pyproject ruff section", before: map[string]string{"pyproject.toml": pyproject},
			after: map[string]string{"pyproject.toml": sub(t, pyproject, `["E", "F"]`, `["E"]`)},
			want:  []string{"config-changed pyproject.toml:7"}, needsContent: true},
		{name: "pyproject dependencies are not a check", before: map[string]string{"pyproject.toml": pyproject},
			after: map[string]string{"pyproject.toml": sub(t, pyproject, `["requests"]`, `["requests", "rich"]`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

func TestCheckRust(t *testing.T) {
	t.Parallel()
	for _, tc := range []guardCase{
		{name: "integration test deleted", before: map[string]string{"tests/it.rs": rsLib, "src/lib.rs": rsLib}, after: map[string]string{"src/lib.rs": rsLib},
			want: []string{"test-deleted tests/it.rs:0"}},
		{name: "test function removed", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "\n    #[test]\n    fn adds_zero() {\n        assert_eq!(add(0, 0), 0);\n    }\n", "")},
			want:  []string{"test-removed src/lib.rs:14"}},
		{name: "cfg(test) module removed", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": rsLib[:strings.Index(rsLib, "\n#[cfg(test)]")+1]},
			want:  []string{"test-removed src/lib.rs:5", "test-removed src/lib.rs:9", "test-removed src/lib.rs:14"}},
		{name: "test attribute dropped", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "    #[test]\n    fn adds()", "    fn adds()")},
			want:  []string{"test-removed src/lib.rs:9"}},
		{name: "ignore added", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "    #[test]\n    fn adds()", "    #[test]\n    #[ignore]\n    fn adds()")},
			want:  []string{"skip-added src/lib.rs:10"}},
		{name: "assert_eq removed", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "        assert_eq!(add(1, 2), 3);\n", "")},
			want:  []string{"assertion-removed src/lib.rs:11"}},
		{name: "assert_eq commented out", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "        assert_eq!(add(0", "        // assert_eq!(add(0")},
			want:  []string{"assertion-commented src/lib.rs:16"}},
		{name: "allow added", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": "#![allow(clippy::unwrap_used)]\n" + rsLib},
			want:  []string{"suppression-added src/lib.rs:1"}},
		{name: "Cargo.toml lints", before: map[string]string{"Cargo.toml": cargo},
			after: map[string]string{"Cargo.toml": sub(t, cargo, `"deny"`, `"allow"`)},
			want:  []string{"config-changed Cargo.toml:5"}, needsContent: true},
		{name: "clippy.toml", before: map[string]string{"clippy.toml": "msrv = \"1.70\"\n"},
			after: map[string]string{"clippy.toml": "msrv = \"1.60\"\n"},
			want:  []string{"config-changed clippy.toml:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

func TestCheckJVM(t *testing.T) {
	t.Parallel()
	const path = "src/test/java/calc/CalcTest.java"
	for _, tc := range []guardCase{
		{name: "test class deleted", before: map[string]string{path: javaTest}, after: map[string]string{},
			want: []string{"test-deleted " + path + ":0"}},
		{name: "test method removed", before: map[string]string{path: javaTest},
			after: map[string]string{path: sub(t, javaTest, "\n    @Test\n    void subtracts() {\n        assertEquals(1, Calc.sub(3, 2));\n    }\n", "")},
			want:  []string{"test-removed " + path + ":12"}},
		{name: "disabled", before: map[string]string{path: javaTest},
			after: map[string]string{path: sub(t, javaTest, "    @Test\n    void adds", "    @Disabled\n    @Test\n    void adds")},
			want:  []string{"skip-added " + path + ":7"}},
		{name: "assertEquals removed", before: map[string]string{path: javaTest},
			after: map[string]string{path: sub(t, javaTest, "        assertEquals(3, Calc.add(1, 2));\n", "")},
			want:  []string{"assertion-removed " + path + ":9"}},
		{name: "SuppressWarnings", before: map[string]string{"src/main/java/calc/Calc.java": javaSrc},
			after: map[string]string{"src/main/java/calc/Calc.java": sub(t, javaSrc, "class Calc", "@SuppressWarnings(\"unchecked\")\nclass Calc")},
			want:  []string{"suppression-added src/main/java/calc/Calc.java:3"}},
		{name: "Kotlin Ignore", before: map[string]string{"src/test/kotlin/CalcTest.kt": "class CalcTest {\n    @Test\n    fun adds() {\n        assertEquals(3, add(1, 2))\n    }\n}\n"},
			after: map[string]string{"src/test/kotlin/CalcTest.kt": "class CalcTest {\n    @Ignore\n    @Test\n    fun adds() {\n        assertEquals(3, add(1, 2))\n    }\n}\n"},
			want:  []string{"skip-added src/test/kotlin/CalcTest.kt:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

func TestCheckConfiguration(t *testing.T) {
	t.Parallel()
	gates := Options{GateCommands: []string{"bash scripts/check.sh", "make verify", "npm run lint:ci"}, PlanFile: "prd.json"}
	for _, tc := range []guardCase{
		{name: "GitHub workflow", before: map[string]string{".github/workflows/ci.yml": "on: push\njobs: {}\n"},
			after: map[string]string{".github/workflows/ci.yml": "on: workflow_dispatch\njobs: {}\n"},
			want:  []string{"ci-changed .github/workflows/ci.yml:1"}},
		{name: "GitLab CI deleted", before: map[string]string{".gitlab-ci.yml": "test:\n  script: make test\n"}, after: map[string]string{},
			want: []string{"ci-changed .gitlab-ci.yml:0"}},
		{name: "Jenkinsfile and CircleCI", before: map[string]string{"Jenkinsfile": "a\n", ".circleci/config.yml": "a\n"},
			after: map[string]string{"Jenkinsfile": "b\n", ".circleci/config.yml": "b\n"},
			want:  []string{"ci-changed .circleci/config.yml:1", "ci-changed Jenkinsfile:1"}},
		{name: ".ci script made non-executable", before: map[string]string{".ci/run@x": "#!/bin/sh\nmake test\n"},
			after: map[string]string{".ci/run": "#!/bin/sh\nmake test\n"},
			want:  []string{"ci-changed .ci/run:0"}},
		{name: "golangci-lint", before: map[string]string{".golangci.yml": "linters:\n  enable:\n    - errcheck\n"},
			after: map[string]string{".golangci.yml": "linters:\n  enable: []\n"},
			want:  []string{"config-changed .golangci.yml:2"}},
		{name: "eslint, prettier, jest, vitest", before: map[string]string{".eslintrc.json": "{}\n", "eslint.config.js": "a\n", ".prettierrc": "a\n", "jest.config.js": "a\n", "vitest.config.ts": "a\n"},
			after: map[string]string{".eslintrc.json": "{\"rules\": {}}\n", "eslint.config.js": "b\n", ".prettierrc": "b\n", "jest.config.js": "b\n", "vitest.config.ts": "b\n"},
			want: []string{"config-changed .eslintrc.json:1", "config-changed .prettierrc:1", "config-changed eslint.config.js:1",
				"config-changed jest.config.js:1", "config-changed vitest.config.ts:1"}},
		{name: "setup.cfg, tox.ini, .coveragerc", before: map[string]string{"setup.cfg": "a\n", "tox.ini": "a\n", ".coveragerc": "a\n"},
			after: map[string]string{"setup.cfg": "b\n", "tox.ini": "b\n", ".coveragerc": "b\n"},
			want:  []string{"config-changed .coveragerc:1", "config-changed setup.cfg:1", "config-changed tox.ini:1"}},
		{name: "tsconfig strict flag", before: map[string]string{"tsconfig.json": "{\n  \"compilerOptions\": {\n    \"strict\": true,\n    \"outDir\": \"dist\"\n  }\n}\n"},
			after: map[string]string{"tsconfig.json": "{\n  \"compilerOptions\": {\n    \"strict\": false,\n    \"outDir\": \"dist\"\n  }\n}\n"},
			want:  []string{"config-changed tsconfig.json:3"}},
		{name: "tsconfig outDir is not a check", before: map[string]string{"tsconfig.build.json": "{\n  \"strict\": true,\n  \"outDir\": \"dist\"\n}\n"},
			after: map[string]string{"tsconfig.build.json": "{\n  \"strict\": true,\n  \"outDir\": \"build\"\n}\n"}},
		{name: "package.json test script", before: map[string]string{"package.json": packageJSON},
			after: map[string]string{"package.json": sub(t, packageJSON, `"vitest run"`, `"vitest run --passWithNoTests"`)},
			want:  []string{"config-changed package.json:5"}},
		{name: "package.json dependencies are not a check", before: map[string]string{"package.json": packageJSON},
			after: map[string]string{"package.json": sub(t, packageJSON, `"1.0.0"`, `"1.1.0"`)}},
		{name: "Makefile test target", before: map[string]string{"Makefile": makefile},
			after: map[string]string{"Makefile": sub(t, makefile, "\tgo test ./...\n", "\ttrue\n")},
			want:  []string{"config-changed Makefile:7"}},
		{name: "Makefile build target is not a check", before: map[string]string{"Makefile": makefile},
			after: map[string]string{"Makefile": sub(t, makefile, "\tgo build ./...", "\tgo build -trimpath ./...")}},
		{name: "ralph.toml", before: map[string]string{"ralph.toml": "[gates]\ncommands = [\"make test\"]\n"},
			after: map[string]string{"ralph.toml": "[gates]\ncommands = []\n"},
			want:  []string{"gate-changed ralph.toml:2"}},
		{name: "script a gate runs", opts: gates, before: map[string]string{"scripts/check.sh": "#!/bin/sh\ngo test ./...\n"},
			after: map[string]string{"scripts/check.sh": "#!/bin/sh\nexit 0\n"},
			want:  []string{"gate-changed scripts/check.sh:2"}},
		{name: "Makefile target a gate runs", opts: gates, before: map[string]string{"Makefile": makefile},
			after: map[string]string{"Makefile": sub(t, makefile, "\tgo test -race ./...", "\tgo test -run XXX ./...")},
			want:  []string{"gate-changed Makefile:11"}},
		{name: "package.json script a gate runs", opts: gates, before: map[string]string{"package.json": packageJSON},
			after: map[string]string{"package.json": sub(t, packageJSON, `"eslint ."`, `"true"`)},
			want:  []string{"gate-changed package.json:6"}},
		{name: "plan file", opts: gates, before: map[string]string{"prd.json": "{\"userStories\": []}\n"},
			after: map[string]string{"prd.json": "{\"userStories\": [{\"passes\": true}]}\n"},
			want:  []string{"plan-changed prd.json:1"}},
		{name: "shellcheck disable", before: map[string]string{"run.sh": "#!/bin/sh\necho $1\n"},
			after: map[string]string{"run.sh": "#!/bin/sh\n# shellcheck disable=SC2086\necho $1\n"},
			want:  []string{"suppression-added run.sh:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

// TestCheckPaths covers what git does to names and bytes: spaces, quoted
// non-ASCII names, CRLF files, binary files, deleted and added files.
func TestCheckPaths(t *testing.T) {
	t.Parallel()
	crlfTest := strings.ReplaceAll(goTest, "\n", "\r\n")
	for _, tc := range []guardCase{
		{name: "path with spaces", before: map[string]string{"my dir/a_test.go": goTest}, after: map[string]string{},
			want: []string{"test-deleted my dir/a_test.go:0"}},
		{name: "quoted non-ASCII path", before: map[string]string{"naïve_test.go": goTest},
			after: map[string]string{"naïve_test.go": sub(t, goTest, "func TestA(t *testing.T) {\n", "func TestA(t *testing.T) {\n\tt.Skip()\n")},
			want:  []string{"skip-added naïve_test.go:6"}},
		{name: "CRLF file", before: map[string]string{"crlf_test.go": crlfTest},
			after: map[string]string{"crlf_test.go": sub(t, crlfTest, "func TestA(t *testing.T) {\r\n", "func TestA(t *testing.T) {\r\n\tt.Skip()\r\n")},
			want:  []string{"skip-added crlf_test.go:6"}},
		{name: "binary test file deleted", before: map[string]string{"bin_test.go": "package x\x00\x01"}, after: map[string]string{},
			want: []string{"test-deleted bin_test.go:0"}},
		{name: "binary file changed", before: map[string]string{"logo.png": "\x89PNG\x00\x01"}, after: map[string]string{"logo.png": "\x89PNG\x00\x02"}},
		{name: "tab in a name", before: map[string]string{"a\tb_test.go": goTest}, after: map[string]string{},
			want: []string{"test-deleted a\tb_test.go:0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

// TestCheckHonestChanges: changes that do not weaken a check report
// nothing.
func TestCheckHonestChanges(t *testing.T) {
	t.Parallel()
	moved := sub(t, goTest, "package x", "package y")
	head, testB, _ := strings.Cut(goTest, "func TestB")
	header, testA, _ := strings.Cut(head, "func TestA")
	testBFirst := header + "func TestB" + testB + "\nfunc TestA" + strings.TrimSuffix(testA, "\n")
	for _, tc := range []guardCase{
		{name: "new test file", before: map[string]string{"x.go": goSrc}, after: map[string]string{"x.go": goSrc, "x_test.go": goTest}},
		{name: "test added", before: map[string]string{"a.test.js": jsTest},
			after: map[string]string{"a.test.js": strings.TrimSuffix(jsTest, "})\n") + "\n  it('adds zero', () => {\n    expect(add(0, 0)).toBe(0)\n  })\n})\n"}},
		{name: "code fixed", before: map[string]string{"x.go": goSrc, "x_test.go": goTest},
			after: map[string]string{"x.go": sub(t, goSrc, "\treturn nil", "\treturn errors.New(\"x\")"), "x_test.go": goTest}},
		{name: "test file renamed with its content", before: map[string]string{"x_test.go": goTest}, after: map[string]string{"y_test.go": goTest}},
		{name: "test file moved and edited", before: map[string]string{"x/x_test.go": goTest}, after: map[string]string{"y/x_test.go": moved}},
		{name: "tests moved between files", before: map[string]string{"tests/test_calc.py": pyTest},
			after: map[string]string{"tests/test_add.py": "def test_add():\n    assert add(1, 2) == 3\n", "tests/test_sub.py": "def test_sub():\n    assert sub(3, 2) == 1\n"}},
		{name: "test moved within its file", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": testBFirst}},
		{name: "assertion edited in place", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, `t.Errorf("got %d", got)`, `t.Errorf("got %d, want 1", got)`)}},
		{name: "assertion rewritten", before: map[string]string{"a.test.js": jsTest},
			after: map[string]string{"a.test.js": sub(t, jsTest, "expect(add(1, 2)).toBe(3)", "expect(add(1, 2)).toEqual(3)")}},
		{name: "skip message edited", before: map[string]string{"x_test.go": sub(t, goTest, "func TestB(t *testing.T) {\n", "func TestB(t *testing.T) {\n\tif testing.Short() {\n\t\tt.Skip(\"slow\")\n\t}\n")},
			after: map[string]string{"x_test.go": sub(t, goTest, "func TestB(t *testing.T) {\n", "func TestB(t *testing.T) {\n\tif testing.Short() {\n\t\tt.Skip(\"slow: runs the whole suite\")\n\t}\n")}},
		{name: "README and docs", before: map[string]string{"README.md": "# x\n"}, after: map[string]string{"README.md": "# x\n\nMore.\n", "docs/testing.md": "Run tests with make test.\n"}},
		{name: "comment mentioning assert in code", before: map[string]string{"x.go": goSrc},
			after: map[string]string{"x.go": sub(t, goSrc, "func f() error {", "// f never fails; callers need not assert.Equal anything.\nfunc f() error {")}},
		{name: "new test file with a license block", before: map[string]string{},
			after: map[string]string{"x_test.go": "/*\nCopyright 2026.\n*/\n\n" + goTest}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

// TestCheckRenamedAway: a test file renamed to a name no runner picks up
// is a deleted test file, whether git shows a rename or a delete and an
// add.
func TestCheckRenamedAway(t *testing.T) {
	t.Parallel()
	d := makeDiffs(t, change{map[string]string{"x_test.go": goTest}, map[string]string{"x_test.go.bak": goTest}})
	for name, diff := range map[string][]byte{"u0": d.u0, "u3": d.u3} {
		got, err := Check(diff, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"test-deleted x_test.go:0"}; !cmp.Equal(want, brief(got)) {
			t.Errorf("%s: got %v, want %v\n%s", name, brief(got), want, diff)
		}
	}
}

// TestCheckDetails pins the fields of findings: text, why, test name.
func TestCheckDetails(t *testing.T) {
	t.Parallel()
	d := makeDiffs(t, change{
		before: map[string]string{"x_test.go": goTest, "tests/test_calc.py": pyTest},
		after: map[string]string{
			"x_test.go":          sub(t, goTest, "func TestA(t *testing.T) {\n", "func TestA(t *testing.T) {\n\tt.Skip(\"flaky\")\n"),
			"tests/test_calc.py": sub(t, pyTest, "def test_sub", "@pytest.mark.skip\ndef test_sub"),
		},
	})
	got, err := Check(d.u0, d.withContent(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	want := []Finding{
		{Rule: RuleSkipAdded, File: "tests/test_calc.py", Line: 8, Text: "@pytest.mark.skip", Why: "Python test skipped", Test: "test_sub"},
		{Rule: RuleSkipAdded, File: "x_test.go", Line: 6, Text: `t.Skip("flaky")`, Why: "Go test skipped", Test: "TestA"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	// Without the contents, the Go test's name still comes from git's
	// hunk header.
	got, err = Check(d.u0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Test != "TestA" {
		t.Errorf("bare -U0: got %+v, want the Go skip in TestA", got)
	}
}

func TestCheckEmptyAndInvalid(t *testing.T) {
	t.Parallel()
	if got, err := Check(nil, Options{}); err != nil || got != nil {
		t.Errorf("Check(nil) = %v, %v; want nothing", got, err)
	}
	cc := []byte("diff --cc x_test.go\nindex 1,2..3\n--- a/x_test.go\n+++ b/x_test.go\n@@@ -1,1 -1,1 +1,1 @@@\n- a\n -b\n++c\n")
	if _, err := Check(cc, Options{}); err == nil || !strings.Contains(err.Error(), "combined") {
		t.Errorf("Check of a merge diff: err = %v, want one about combined diffs", err)
	}
	bad := []byte("diff --git a/x_test.go b/x_test.go\n--- a/x_test.go\n+++ b/x_test.go\n@@ -1,2 +1,2 @@\n-a\n")
	if _, err := Check(bad, Options{}); err == nil {
		t.Error("Check of a truncated hunk: no error")
	}
}

// BenchmarkCheck reads a -U0 diff of a 30,000-line test file in which half
// the tests are removed and the other half skipped: 7,500 findings.
func BenchmarkCheck(b *testing.B) {
	var before, after strings.Builder
	for _, s := range []*strings.Builder{&before, &after} {
		s.WriteString("package x\n\nimport \"testing\"\n\n")
	}
	for i := range 5000 {
		fmt.Fprintf(&before, "func Test%d(t *testing.T) {\n\tif f() != %d {\n\t\tt.Errorf(\"bad\")\n\t}\n}\n\n", i, i)
		if i%2 == 0 {
			fmt.Fprintf(&after, "func Test%d(t *testing.T) {\n\tif f() != %d {\n\t\tt.Skip(\"bad\")\n\t}\n}\n\n", i, i)
		}
	}
	d := makeDiffs(b, change{map[string]string{"big_test.go": before.String()}, map[string]string{"big_test.go": after.String()}})
	b.SetBytes(int64(len(d.u0)))
	for b.Loop() {
		if fs, err := Check(d.u0, Options{}); err != nil || len(fs) != 7500 {
			b.Fatalf("Check = %d findings, %v", len(fs), err)
		}
	}
}
