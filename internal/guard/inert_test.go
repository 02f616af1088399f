package guard

import (
	"strings"
	"testing"
)

// pyUnit is a unittest file, the form issue 38's user typed.
var pyUnit = lines(
	"import unittest",                        // 1
	"",                                       // 2
	"from calc import add",                   // 3
	"",                                       // 4
	"",                                       // 5
	"class TestAdd(unittest.TestCase):",      // 6
	"    def test_add(self):",                // 7
	"        self.assertEqual(add(1, 2), 3)", // 8
	"        self.assertEqual(add(2, 2), 4)", // 9
	"",                                       // 10
	"    def test_zero(self):",               // 11
	"        self.assertEqual(add(0, 0), 0)", // 12
)

// pyLoop is a pytest test over a table.
var pyLoop = lines(
	"CASES = [(1, 2, 3)]",              // 1
	"",                                 // 2
	"",                                 // 3
	"def test_add():",                  // 4
	"    for a, b, want in CASES:",     // 5
	"        assert add(a, b) == want", // 6
)

// goTestify is a Go test with testify's assertions.
var goTestify = lines(
	"package calc",                    // 1
	"",                                // 2
	"func TestAdd(t *testing.T) {",    // 3
	"\tassert.Equal(t, 3, Add(1, 2))", // 4
	"\trequire.NoError(t, Check())",   // 5
	"}",                               // 6
)

// TestCheckInert: an assertion this change makes inert — commented out,
// replaced by a no-op or by one that cannot fail, made unreachable — in
// each language. Each case is read from every form of diff (guardCase.run).
func TestCheckInert(t *testing.T) {
	t.Parallel()
	const py, jv = "tests/test_calc.py", "src/test/java/calc/CalcTest.java"
	pyAt := func(old, new string) map[string]string { return map[string]string{py: sub(t, pyUnit, old, new)} }
	const pyA = "        self.assertEqual(add(1, 2), 3)\n"
	for _, tc := range []guardCase{
		// Python.
		{name: "py: pass and the assertion in a trailing comment", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        pass  # self.assertEqual(add(1, 2), 3)\n"),
			want:  []string{"assertion-commented " + py + ":8"}},
		{name: "py: commented out", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        # self.assertEqual(add(1, 2), 3)\n"),
			want:  []string{"assertion-commented " + py + ":8"}},
		{name: "py: commented out reformatted, with a note", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        pass  # was: self.assertEqual(add(1,2), 3)  # flaky\n"),
			want:  []string{"assertion-commented " + py + ":8"}},
		{name: "py: commented out and changed", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        pass  # self.assertEqual(add(1, 2), 4)\n"),
			want:  []string{"assertion-removed " + py + ":8"}},
		{name: "py: in a docstring", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        \"\"\"\n"+pyA+"        \"\"\"\n"),
			want:  []string{"assertion-commented " + py + ":8"}},
		{name: "py: pass", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        pass\n"),
			want:  []string{"assertion-removed " + py + ":8"}},
		{name: "py: assert True", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        assert True\n"),
			want:  []string{"assertion-removed " + py + ":8"}},
		{name: "py: assertTrue(True)", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        self.assertTrue(True)\n"),
			want:  []string{"assertion-removed " + py + ":8"}},
		{name: "py: assertEqual of two constants", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        self.assertEqual(3, 3)\n"),
			want:  []string{"assertion-removed " + py + ":8"}},
		{name: "py: early return", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        return\n"+pyA),
			want:  []string{"assertion-unreachable " + py + ":9", "assertion-unreachable " + py + ":10"}, needsContent: true},
		{name: "py: if True: return", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        if True: return\n"+pyA),
			want:  []string{"assertion-unreachable " + py + ":9", "assertion-unreachable " + py + ":10"}, needsContent: true},
		{name: "py: continue at the top of a loop", before: map[string]string{"test_loop.py": pyLoop},
			after: map[string]string{"test_loop.py": sub(t, pyLoop, "    for a, b, want in CASES:\n", "    for a, b, want in CASES:\n        continue\n")},
			want:  []string{"assertion-unreachable test_loop.py:7"}, needsContent: true},
		{name: "py: if False: around it", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        if False:\n    "+pyA),
			want:  []string{"assertion-unreachable " + py + ":9"}},

		// Go.
		{name: "go: a trailing comment", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\t\tt.Errorf(\"got %d\", got)", "\t\t_ = got // t.Errorf(\"got %d\", got)")},
			want:  []string{"assertion-commented x_test.go:7"}},
		{name: "go: a block comment on the line", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\t\tt.Errorf(\"got %d\", got)", "\t\t/* t.Errorf(\"got %d\", got) */")},
			want:  []string{"assertion-commented x_test.go:7"}},
		{name: "go: _ = got", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\t\tt.Errorf(\"got %d\", got)", "\t\t_ = got")},
			want:  []string{"assertion-removed x_test.go:7"}},
		{name: "go: testify with constants", before: map[string]string{"calc_test.go": goTestify},
			after: map[string]string{"calc_test.go": sub(t, goTestify, "assert.Equal(t, 3, Add(1, 2))", "assert.Equal(t, 3, 3)")},
			want:  []string{"assertion-removed calc_test.go:4"}},
		{name: "go: require.NoError(t, nil)", before: map[string]string{"calc_test.go": goTestify},
			after: map[string]string{"calc_test.go": sub(t, goTestify, "Check())", "nil)")},
			want:  []string{"assertion-removed calc_test.go:5"}},
		{name: "go: early return", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "func TestA(t *testing.T) {\n", "func TestA(t *testing.T) {\n\treturn\n")},
			want:  []string{"assertion-unreachable x_test.go:8"}, needsContent: true},
		{name: "go: the condition made false", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\tif got := 1; got != 1 {", "\tif false {")},
			want:  []string{"assertion-unreachable x_test.go:7"}, needsContent: true},
		{name: "go: false after the if's statement", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "got != 1 {", "false {")},
			want:  []string{"assertion-unreachable x_test.go:7"}, needsContent: true},
		{name: "go: if false around it, gofmt'd", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\tif got := 1; got != 1 {\n\t\tt.Errorf(\"got %d\", got)\n\t}\n",
				"\tif false {\n\t\tif got := 1; got != 1 {\n\t\t\tt.Errorf(\"got %d\", got)\n\t\t}\n\t}\n")},
			want: []string{"assertion-unreachable x_test.go:8"}},
		{name: "go: if true { return }", before: map[string]string{"calc_test.go": goTestify},
			after: map[string]string{"calc_test.go": sub(t, goTestify, "\tassert.Equal", "\tif true { return }\n\tassert.Equal")},
			want:  []string{"assertion-unreachable calc_test.go:5", "assertion-unreachable calc_test.go:6"}, needsContent: true},

		// JavaScript and TypeScript.
		{name: "js: commented out", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "    expect(add(", "    // expect(add(")},
			want:  []string{"assertion-commented a.test.ts:5"}},
		{name: "js: a block comment on the line", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "    expect(add(1, 2)).toBe(3)", "    /* expect(add(1, 2)).toBe(3) */")},
			want:  []string{"assertion-commented a.test.ts:5"}},
		{name: "js: expect(true).toBe(true)", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "expect(add(1, 2)).toBe(3)", "expect(true).toBe(true)")},
			want:  []string{"assertion-removed a.test.ts:5"}},
		{name: "js: early return", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "  it('adds', () => {\n", "  it('adds', () => {\n    return\n")},
			want:  []string{"assertion-unreachable a.test.ts:6"}, needsContent: true},
		{name: "js: if (true) return", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "  it('adds', () => {\n", "  it('adds', () => {\n    if (true) return;\n")},
			want:  []string{"assertion-unreachable a.test.ts:6"}, needsContent: true},
		{name: "js: if (false) around it", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "    expect(add(1, 2)).toBe(3)\n", "    if (false) {\n      expect(add(1, 2)).toBe(3)\n    }\n")},
			want:  []string{"assertion-unreachable a.test.ts:6"}},
		{name: "js: if (false) before it, not reindented", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "    expect(add(1, 2)).toBe(3)\n", "    if (false)\n    expect(add(1, 2)).toBe(3)\n")},
			want:  []string{"assertion-unreachable a.test.ts:6"}, needsContent: true},
		{name: "js: if (false) on the line", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "    expect(add(1, 2))", "    if (false) expect(add(1, 2))")},
			want:  []string{"assertion-unreachable a.test.ts:5"}},

		// Rust.
		{name: "rs: commented out", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "        assert_eq!(add(1, 2), 3);", "        // assert_eq!(add(1, 2), 3);")},
			want:  []string{"assertion-commented src/lib.rs:11"}},
		{name: "rs: a trailing comment", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "        assert_eq!(add(1, 2), 3);", "        let _ = add(1, 2); // assert_eq!(add(1, 2), 3);")},
			want:  []string{"assertion-commented src/lib.rs:11"}},
		{name: "rs: assert!(true)", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "        assert_eq!(add(1, 2), 3);", "        assert!(true);")},
			want:  []string{"assertion-removed src/lib.rs:11"}},
		{name: "rs: early return", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "    fn adds() {\n", "    fn adds() {\n        return;\n")},
			want:  []string{"assertion-unreachable src/lib.rs:12"}, needsContent: true},
		{name: "rs: if false around it", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "        assert_eq!(add(1, 2), 3);\n", "        if false {\n            assert_eq!(add(1, 2), 3);\n        }\n")},
			want:  []string{"assertion-unreachable src/lib.rs:12"}},

		// Java.
		{name: "java: commented out", before: map[string]string{jv: javaTest},
			after: map[string]string{jv: sub(t, javaTest, "        assertEquals(3,", "        // assertEquals(3,")},
			want:  []string{"assertion-commented " + jv + ":9"}},
		{name: "java: a block comment", before: map[string]string{jv: javaTest},
			after: map[string]string{jv: sub(t, javaTest, "        assertEquals(3, Calc.add(1, 2));", "        /*\n        assertEquals(3, Calc.add(1, 2));\n        */")},
			want:  []string{"assertion-commented " + jv + ":9"}},
		{name: "java: assertTrue(true)", before: map[string]string{jv: javaTest},
			after: map[string]string{jv: sub(t, javaTest, "assertEquals(3, Calc.add(1, 2));", "assertTrue(true);")},
			want:  []string{"assertion-removed " + jv + ":9"}},
		{name: "java: if (true) return", before: map[string]string{jv: javaTest},
			after: map[string]string{jv: sub(t, javaTest, "    void adds() {\n", "    void adds() {\n        if (true) return;\n")},
			want:  []string{"assertion-unreachable " + jv + ":10"}, needsContent: true},
		{name: "java: if (false) around it", before: map[string]string{jv: javaTest},
			after: map[string]string{jv: sub(t, javaTest, "        assertEquals(3, Calc.add(1, 2));\n", "        if (false) {\n            assertEquals(3, Calc.add(1, 2));\n        }\n")},
			want:  []string{"assertion-unreachable " + jv + ":10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

// TestCheckInertNearMisses: changes that look like the cheats and are not
// (no finding).
func TestCheckInertNearMisses(t *testing.T) {
	t.Parallel()
	const py, jv = "tests/test_calc.py", "src/test/java/calc/CalcTest.java"
	pyAt := func(old, new string) map[string]string { return map[string]string{py: sub(t, pyUnit, old, new)} }
	const pyA = "        self.assertEqual(add(1, 2), 3)\n"
	withTrue := sub(t, pyUnit, pyA, pyA+"        assert True\n")
	strs := lines("def test_hash():", `    assert tag("a # b") == "#a"`, `    assert tag("// x") == "x"`)
	for _, tc := range []guardCase{
		{name: "py: a comment that never was code", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        # assert add is symmetric: add(a, b) == add(b, a)\n        # self.assertEqual(add(b, a), add(a, b)) would say so\n"+pyA)},
		{name: "py: a note after an assertion", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        self.assertEqual(add(1, 2), 3)  # the simplest sum\n")},
		{name: "py: an assertion moved to another test", before: map[string]string{py: pyUnit},
			after: map[string]string{py: sub(t, sub(t, pyUnit, pyA, ""), "        self.assertEqual(add(0, 0), 0)\n", "        self.assertEqual(add(0, 0), 0)\n"+pyA)}},
		{name: "py: assertions moved into a helper", before: map[string]string{py: pyUnit},
			after: pyAt(pyA+"        self.assertEqual(add(2, 2), 4)\n", "        self.check()\n\n    def check(self):\n"+pyA+"        self.assertEqual(add(2, 2), 4)\n")},
		{name: "py: a conditional return", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        if add is None:\n            return\n"+pyA)},
		{name: "py: a conditional continue", before: map[string]string{"test_loop.py": pyLoop},
			after: map[string]string{"test_loop.py": sub(t, pyLoop, "    for a, b, want in CASES:\n", "    for a, b, want in CASES:\n        if want is None:\n            continue\n")}},
		{name: "py: a one-line conditional return", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        if add is None: return\n"+pyA)},
		{name: "py: a return in a nested function", before: map[string]string{py: pyUnit},
			after: pyAt(pyA, "        def three():\n            return 3\n        self.assertEqual(add(1, 2), three())\n")},
		{name: "py: a return after the last assertion", before: map[string]string{py: pyUnit},
			after: pyAt("        self.assertEqual(add(2, 2), 4)\n", "        self.assertEqual(add(2, 2), 4)\n        return\n")},
		{name: "py: an assertion that could not fail removed", before: map[string]string{py: withTrue},
			after: map[string]string{py: pyUnit}},
		{name: "py: # and // in strings", before: map[string]string{"test_tag.py": strs},
			after: map[string]string{"test_tag.py": sub(t, strs, `"#a"`, `"#A"`)}},
		{name: "go: a comment that never was code", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\t\tt.Errorf(", "\t\t// t.Errorf, not t.Fatalf: the other checks still run.\n\t\tt.Errorf(")}},
		{name: "go: a conditional return", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "func TestA(t *testing.T) {\n", "func TestA(t *testing.T) {\n\tif testing.Short() {\n\t\treturn\n\t}\n")}},
		{name: "go: a return in a closure", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "func TestA(t *testing.T) {\n", "func TestA(t *testing.T) {\n\tone := func() int {\n\t\treturn 1\n\t}\n\t_ = one\n")}},
		{name: "go: a return after the check", before: map[string]string{"x_test.go": goTest},
			after: map[string]string{"x_test.go": sub(t, goTest, "\t\tt.Errorf(\"got %d\", got)\n\t}\n", "\t\tt.Errorf(\"got %d\", got)\n\t}\n\treturn\n")}},
		{name: "js: a comment that never was code", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "    expect(add(1, 2))", "    // expect the sum, not the concatenation:\n    expect(add(1, 2))")}},
		{name: "js: a conditional return", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "  it('adds', () => {\n", "  it('adds', () => {\n    if (!add) return\n")}},
		{name: "js: a return in a callback", before: map[string]string{"a.test.ts": jsTest},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "  it('adds', () => {\n", "  it('adds', () => {\n    const sums = [1, 2].map((x) => {\n      return add(x, x)\n    })\n")}},
		{name: "js: expect.assertions is not vacuous", before: map[string]string{"a.test.ts": sub(t, jsTest, "    expect(add(1, 2))", "    expect.assertions(1)\n    expect(add(1, 2))")},
			after: map[string]string{"a.test.ts": sub(t, jsTest, "    expect(add(1, 2))", "    expect.assertions(1)\n    expect(add(1, 2))")}},
		{name: "rs: a conditional return", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "    fn adds() {\n", "    fn adds() {\n        if cfg!(miri) { return; }\n")}},
		{name: "rs: a lifetime before a comment", before: map[string]string{"src/lib.rs": rsLib},
			after: map[string]string{"src/lib.rs": sub(t, rsLib, "    use super::*;\n", "    use super::*;\n    fn id<'a>(s: &'a str) -> &'a str { s } // assert_eq! needs it\n")}},
		{name: "java: should in a comment", before: map[string]string{jv: javaTest},
			after: map[string]string{jv: sub(t, javaTest, "    void adds() {\n", "    void adds() {\n        // this should hold for any two ints\n")}},
		{name: "java: a conditional return", before: map[string]string{jv: javaTest},
			after: map[string]string{jv: sub(t, javaTest, "    void adds() {\n", "    void adds() {\n        if (Calc.broken()) return;\n")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

// TestCheckInertDetails pins what a finding says: the trailing-comment
// form names the test and the line as the file has it now; an unreachable
// assertion names the return above it; a no-op is named.
func TestCheckInertDetails(t *testing.T) {
	t.Parallel()
	const py = "tests/test_calc.py"
	const pyA = "        self.assertEqual(add(1, 2), 3)\n"
	for _, tc := range []struct {
		name, after string
		want        Finding
	}{
		{"trailing comment", sub(t, pyUnit, pyA, "        pass  # self.assertEqual(add(1, 2), 3)\n"),
			Finding{Rule: RuleAssertionCommented, File: py, Line: 8, Text: "pass  # self.assertEqual(add(1, 2), 3)", Why: "Python assertion commented out", Test: "test_add"}},
		{"no-op", sub(t, pyUnit, pyA, "        assert True\n"),
			Finding{Rule: RuleAssertionRemoved, File: py, Line: 8, Removed: true, Text: "self.assertEqual(add(1, 2), 3)", Why: "Python assertion removed; in its place: assert True", Test: "test_add"}},
		{"return", sub(t, pyUnit, pyA, "        return\n"+pyA),
			Finding{Rule: RuleAssertionUnreachable, File: py, Line: 9, Text: "self.assertEqual(add(1, 2), 3)", Why: "Python assertion no longer runs: line 8 adds `return` before it", Test: "test_add"}},
		{"if False", sub(t, pyUnit, pyA, "        if False:\n    "+pyA),
			Finding{Rule: RuleAssertionUnreachable, File: py, Line: 9, Text: "self.assertEqual(add(1, 2), 3)", Why: "Python assertion no longer runs: line 8 adds `if False:` around it: a branch never taken", Test: "test_add"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := makeDiffs(t, change{map[string]string{py: pyUnit}, map[string]string{py: tc.after}})
			got, err := Check(d.u0, d.withContent(Options{}))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || got[0] != tc.want {
				t.Errorf("got %+v\nwant %+v\n%s", got, tc.want, d.u0)
			}
		})
	}
}

// TestCheckInertAllowed: a task that asks for the change allows it.
func TestCheckInertAllowed(t *testing.T) {
	t.Parallel()
	const py = "tests/test_calc.py"
	d := makeDiffs(t, change{map[string]string{py: pyUnit}, map[string]string{py: sub(t, pyUnit, "    def test_add(self):\n", "    def test_add(self):\n        return\n")}})
	got, err := Check(d.u0, d.withContent(Options{Task: "Disable test_add until the parser lands."}))
	if err != nil {
		t.Fatal(err)
	}
	if b := brief(got); strings.Join(b, "|") != "assertion-unreachable "+py+":9 allowed|assertion-unreachable "+py+":10 allowed" {
		t.Errorf("got %v", b)
	}
}
