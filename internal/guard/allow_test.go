package guard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheckExceptions: a change the task asks for is reported Allowed;
// the same change unasked, asked in the negative, or asked about another
// name is not.
func TestCheckExceptions(t *testing.T) {
	t.Parallel()
	skipped := map[string]string{"x_test.go": sub(t, goTest, "func TestA(t *testing.T) {\n", "func TestA(t *testing.T) {\n\tt.Skip(\"flaky\")\n")}
	noTestB := map[string]string{"x_test.go": goTest[:len(goTest)-len("\nfunc TestB(t *testing.T) {\n\tt.Run(\"sub\", func(t *testing.T) {\n\t\tt.Fatal(\"no\")\n\t})\n}\n")]}
	noAssert := map[string]string{"x_test.go": sub(t, goTest, "\t\tt.Errorf(\"got %d\", got)\n", "")}
	before := map[string]string{"x_test.go": goTest}
	for _, tc := range []guardCase{
		{name: "skip asked for", before: before, after: skipped,
			opts: Options{Task: "Quarantine flaky tests.\nSkip the flaky test TestA until the upstream fix lands."},
			want: []string{"skip-added x_test.go:6 allowed"}},
		{name: "skip not asked for", before: before, after: skipped, opts: Options{Task: "Make TestA pass."},
			want: []string{"skip-added x_test.go:6"}},
		{name: "removal asked for, with its subtests", before: before, after: noTestB,
			opts: Options{Task: "Title: clean up\nRemove the flaky test TestB; it tests a deleted feature."},
			want: []string{"test-removed x_test.go:11 allowed", "test-removed x_test.go:12 allowed"}},
		{name: "removal forbidden", before: before, after: noTestB,
			opts: Options{Task: "Do not remove TestB, fix it instead."},
			want: []string{"test-removed x_test.go:11", "test-removed x_test.go:12"}},
		{name: "another test named", before: before, after: noTestB,
			opts: Options{Task: "Remove TestA and TestBar."},
			want: []string{"test-removed x_test.go:11", "test-removed x_test.go:12"}},
		{name: "fix is not a licence to drop assertions", before: before, after: noAssert,
			opts: Options{Task: "Fix TestA."},
			want: []string{"assertion-removed x_test.go:7"}},
		{name: "assertion relaxed on request", before: before, after: noAssert,
			opts: Options{Task: "Relax the check in TestA: the value is random now."},
			want: []string{"assertion-removed x_test.go:7 allowed"}},
		{name: "test file deletion asked for", before: map[string]string{"x_test.go": goTest, "x.go": goSrc}, after: map[string]string{"x.go": goSrc},
			opts: Options{Task: "Delete x_test.go together with the old feature."},
			want: []string{"test-deleted x_test.go:0 allowed"}},
		{name: "CI update asked for", before: map[string]string{".github/workflows/ci.yml": "go: 1.25\n"}, after: map[string]string{".github/workflows/ci.yml": "go: 1.26\n"},
			opts: Options{Task: "Update the CI workflow to Go 1.26."},
			want: []string{"ci-changed .github/workflows/ci.yml:1 allowed"}},
		{name: "lint rule disabled on request", before: map[string]string{"x.go": goSrc},
			after: map[string]string{"x.go": sub(t, sub(t, goSrc, "_ = f() }", "_ = f() } //nolint:errcheck // f cannot fail"), "\treturn nil", "\treturn nil //nolint:gosec")},
			opts:  Options{Task: "Disable lint rule errcheck for g: f cannot fail."},
			want:  []string{"suppression-added x.go:4", "suppression-added x.go:7 allowed"}},
		{name: "golangci config change asked for", before: map[string]string{".golangci.yml": "linters:\n  enable: [errcheck]\n"},
			after: map[string]string{".golangci.yml": "linters:\n  enable: [errcheck, gosec]\n"},
			opts:  Options{Task: "Enable gosec in .golangci.yml."},
			want:  []string{"config-changed .golangci.yml:2 allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

func TestAllows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		task     string
		rule     Rule
		subjects []string
		want     bool
	}{
		{"Remove the flaky test TestFoo.", RuleTestRemoved, []string{"TestFoo"}, true},
		{"remove testfoo", RuleTestRemoved, []string{"TestFoo"}, true},
		{"Remove TestFoo2.", RuleTestRemoved, []string{"TestFoo"}, false},
		{"Remove the flaky test. TestFoo is fine.", RuleTestRemoved, []string{"TestFoo"}, false},
		{"Never delete TestFoo", RuleTestRemoved, []string{"TestFoo"}, false},
		{"Don't remove TestFoo", RuleTestRemoved, []string{"TestFoo"}, false},
		{"Finish the parser without removing TestFoo", RuleTestRemoved, []string{"TestFoo"}, false},
		{"Skip TestFoo on Windows", RuleTestRemoved, []string{"TestFoo"}, false},
		{"Skip TestFoo on Windows", RuleSkipAdded, []string{"TestFoo"}, true},
		{"Update TestFoo", RuleSkipAdded, []string{"TestFoo"}, false},
		{"Silence E501 in the generated module", RuleSuppressionAdded, suppressionCodes("# noqa", "x = 1  # noqa: E501"), true},
		{"Silence E501 in the generated module", RuleSuppressionAdded, suppressionCodes("# noqa", "x = 1  # noqa: F401"), false},
		{"Allow clippy::unwrap_used in main", RuleSuppressionAdded, suppressionCodes("#![allow(", "#![allow(clippy::unwrap_used)]"), true},
		{"Allow the new API", RuleSuppressionAdded, suppressionCodes("#![allow(", "#![allow(clippy::unwrap_used)]"), false},
		{"Ignore the types here", RuleSuppressionAdded, suppressionCodes("// @ts-ignore", "// @ts-ignore the types are wrong"), false},
		{"Disable no-console for the CLI entry", RuleSuppressionAdded, suppressionCodes("// eslint-disable", "// eslint-disable-next-line no-console, no-alert -- CLI output"), true},
		{"Suppress unchecked warnings in Calc", RuleSuppressionAdded, suppressionCodes("@SuppressWarnings", `@SuppressWarnings("unchecked")`), true},
		{"Update the CI pipeline", RuleCIChanged, nil, true},
		{"Update the docs", RuleCIChanged, nil, false},
		{"Update the plan", RulePlanChanged, nil, true},
		{"", RuleTestRemoved, []string{"TestFoo"}, false},
	} {
		_, got := newTaskText(tc.task).allows(tc.rule, tc.subjects)
		if got != tc.want {
			t.Errorf("task %q, %s %v: allowed = %v, want %v", tc.task, tc.rule, tc.subjects, got, tc.want)
		}
	}
}

func TestSuppressionCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ directive, text string }{
		{"//nolint", "x() //nolint:errcheck,gosec // why"},
		{"# noqa", "import os  # noqa: F401, E402"},
		{"# type: ignore", "x = y  # type: ignore[attr-defined]"},
		{"# pylint: disable", "# pylint: disable=missing-docstring,C0114"},
		{"#![allow(", "#![allow(clippy::unwrap_used, dead_code)]"},
		{"@SuppressWarnings", `@SuppressWarnings({"unchecked", "rawtypes"})`},
		{"// @ts-expect-error", "// @ts-expect-error the library's types are wrong"},
		{"// eslint-disable", "// eslint-disable-next-line no-console -- output"},
	} {
		t.Run(tc.directive, func(t *testing.T) {
			got := suppressionCodes(tc.directive, tc.text)
			want := map[string][]string{
				"//nolint":            {"nolint", "errcheck", "gosec"},
				"# noqa":              {"noqa", "F401", "E402"},
				"# type: ignore":      {"type: ignore", "attr-defined"},
				"# pylint: disable":   {"pylint: disable", "missing-docstring", "C0114"},
				"#![allow(":           {"clippy::unwrap_used", "unwrap_used", "dead_code"},
				"@SuppressWarnings":   {"unchecked", "rawtypes"},
				"// @ts-expect-error": {"ts-expect-error"},
				"// eslint-disable":   {"eslint-disable", "no-console"},
			}[tc.directive]
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
		})
	}
}
