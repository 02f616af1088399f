package guard

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReport(t *testing.T) {
	t.Parallel()
	findings := []Finding{
		{Rule: RuleTestDeleted, File: "x_test.go", Text: "file deleted; tests: TestA", Why: "Go test file removed: its tests no longer run"},
		{Rule: RuleSkipAdded, File: "a.test.js", Line: 4, Text: "it.skip('adds',\n() => {", Why: "JS/TS test skipped", Allowed: true, Reason: `the task says: "Skip adds"`},
	}
	want := "x_test.go: test-deleted: file deleted; tests: TestA (Go test file removed: its tests no longer run)\n" +
		"a.test.js:4: skip-added: it.skip('adds', () => { (JS/TS test skipped) [allowed: the task says: \"Skip adds\"]\n"
	if diff := cmp.Diff(want, Report(findings, 0)); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if got := Report(nil, 0); got != "" {
		t.Errorf("Report(nil) = %q, want empty", got)
	}
}

func TestReportBounded(t *testing.T) {
	t.Parallel()
	var findings []Finding
	for i := range 100 {
		findings = append(findings, Finding{Rule: RuleAssertionRemoved, File: "x_test.go", Line: i + 1, Text: strings.Repeat("x", maxText), Why: "Go check removed"})
	}
	for _, max := range []int{0, 100, 1000, 5000} {
		got := Report(findings, max)
		limit := max
		if limit <= 0 {
			limit = DefaultReportSize
		}
		if len(got) > limit {
			t.Errorf("Report(_, %d) is %d bytes", max, len(got))
		}
		if max >= 1000 && !strings.Contains(got, "more findings") {
			t.Errorf("Report(_, %d) does not say findings were left out:\n%s", max, got)
		}
		if strings.Count(got, "\n") < 1 {
			t.Errorf("Report(_, %d) = %q, want some lines", max, got)
		}
	}
}

func TestGateRefs(t *testing.T) {
	t.Parallel()
	files, targets, scripts := gateRefs([]string{
		"make -C sub -j4 test lint V=1",
		"CI=1 npm test && npm run lint:ci -- --max-warnings=0",
		"yarn typecheck; pnpm run e2e",
		"bash ./scripts/check.sh --config=.checks.yml",
		"go test ./...",
		"bun test",
	})
	wantFiles := []string{"make", "sub", "test", "lint", "npm", "test", "npm", "run", "lint:ci", "yarn", "typecheck", "pnpm", "run", "e2e",
		"bash", "./scripts/check.sh", ".checks.yml", "go", "test", "./...", "bun", "test"}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"test", "lint"}, targets); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"test", "lint:ci", "typecheck", "e2e"}, scripts); diff != "" {
		t.Errorf("scripts (-want +got):\n%s", diff)
	}
}

func TestMatchPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pat, path string
		want      bool
	}{
		{"*_test.go", "a/b/x_test.go", true},
		{"*_test.go", "x_test.go.bak", false},
		{"__tests__/|*.js", "src/__tests__/deep/a.js", true},
		{"__tests__/|*.js", "src/__tests__.js", false},
		{"src/test/|*.java", "mod/src/test/java/ATest.java", true},
		{"src/test/|*.java", "src/testing/A.java", false},
		{".github/workflows/*", ".github/workflows/ci.yml", true},
		{".github/workflows/*", "sub/.github/workflows/ci.yml", false},
		{".ci/**", ".ci/run", true},
		{"/ralph.toml", "ralph.toml", true},
		{"/ralph.toml", "sub/ralph.toml", false},
	} {
		if got := matchPath(tc.pat, tc.path); got != tc.want {
			t.Errorf("matchPath(%q, %q) = %v, want %v", tc.pat, tc.path, got, tc.want)
		}
	}
}
