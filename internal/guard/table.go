package guard

import (
	"path"
	"regexp"
	"strings"
	"sync"
)

// This file is the rule table. Supporting a new language, test framework,
// linter or CI system is adding rows here; check.go only interprets them.

// event is what a row looks at.
type event int

const (
	// onDeleted: a file of the set is deleted, emptied, or renamed to a
	// name outside the set, unless its tests reappear elsewhere (a move).
	onDeleted event = iota
	// onDecl: a test declaration (re, name in group 1; or a marker such as
	// #[test] whose name next finds on the same or a following line) is
	// removed and no test file in the diff declares the same name.
	onDecl
	// onAdded: an added line of code (not a comment) matches re, beyond
	// the ones the same hunk removes and the ones moved from elsewhere.
	onAdded
	// onAddedRaw: like onAdded, comments included (lint directives are
	// comments).
	onAddedRaw
	// onRemoved: a removed line of code matches re, and the same hunk does
	// not add as many back (nor were they moved elsewhere).
	onRemoved
	// onCommented: an added comment line whose text, with the comment
	// marker taken away, matches re; also a block comment opened and not
	// closed within the change (what follows it is commented out).
	onCommented
	// onChanged: any change to a file of the set: each hunk that touches
	// lines in scope, and deletions, additions, renames and mode changes.
	onChanged
	// onUnreachable: an added line that leaves its block whatever happens
	// (return) or opens a branch never taken (if False:), and a line below
	// it in that block or branch that matches re (inert.go).
	onUnreachable
)

// scope narrows onChanged to part of a file; re then says which part.
type scope int

const (
	wholeFile scope = iota
	// inSection: lines under a [section] header (TOML, INI) whose name
	// matches re.
	inSection
	// withKey: changed lines whose own text matches re (a JSON key).
	withKey
	// inTarget: lines of a Makefile rule whose target matches re.
	inTarget
)

// row is one rule of the table.
type row struct {
	// id is the row's index in the checker's rows (set there).
	id    int
	files fileSet
	on    event
	rule  Rule
	re    *regexp.Regexp
	// next finds a marker's test name on the marker's line or one of the
	// few after it (onDecl rows only).
	next  *regexp.Regexp
	scope scope
	// why is the finding's explanation.
	why string
	// tool names what the change is about the way a task would say it
	// ("golangci-lint", "CI"); a task text naming it can allow the change.
	tool string
}

// fileSet is a set of files by pattern; see matchPath for the patterns.
type fileSet []string

// has reports whether p (slash separated, relative to the repository root)
// is in the set.
func (s fileSet) has(p string) bool {
	if p == "" {
		return false
	}
	for _, pat := range s {
		if matchPath(pat, p) {
			return true
		}
	}
	return false
}

// matchPath matches one pattern of a fileSet:
//   - "a|b" (a pattern of alternatives) matches when all its parts do:
//     "*.go|tests/" is a Go file under a tests directory;
//   - a pattern starting with "/" is that exact path from the root (the
//     rows made from Options use these);
//   - a pattern ending in "/" is a directory at any depth ("__tests__/",
//     "src/test/");
//   - a pattern holding "/" is a path.Match on the whole path, and one
//     ending in "/**" matches everything below that directory;
//   - any other pattern is a path.Match on the base name.
func matchPath(pat, p string) bool {
	if strings.Contains(pat, "|") {
		for part := range strings.SplitSeq(pat, "|") {
			if !matchPath(part, p) {
				return false
			}
		}
		return true
	}
	switch {
	case strings.HasPrefix(pat, "/"):
		return p == pat[1:]
	case strings.HasSuffix(pat, "/**"):
		return strings.HasPrefix(p, strings.TrimSuffix(pat, "**"))
	case strings.HasSuffix(pat, "/"):
		return strings.Contains("/"+path.Dir(p)+"/", "/"+pat)
	case strings.Contains(pat, "/"):
		ok, _ := path.Match(pat, p)
		return ok
	}
	ok, _ := path.Match(pat, path.Base(p))
	return ok
}

func re(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// File sets of each language: every source file, and the test files.
var (
	goFiles  = fileSet{"*.go"}
	goTests  = fileSet{"*_test.go"}
	jsExts   = []string{"js", "jsx", "ts", "tsx", "mjs", "cjs", "mts", "cts", "vue", "svelte"}
	jsFiles  = withExts("*.", jsExts)
	jsTests  = withExts("*.test.", jsExts).plus(withExts("*.spec.", jsExts)).plus(withExts("__tests__/|*.", jsExts))
	pyFiles  = fileSet{"*.py", "*.pyi"}
	pyTests  = fileSet{"test_*.py", "*_test.py", "conftest.py", "tests/|*.py", "test/|*.py"}
	rsFiles  = fileSet{"*.rs"}
	rsTests  = fileSet{"tests/|*.rs"}
	jvmFiles = fileSet{"*.java", "*.kt", "*.groovy", "*.scala"}
	jvmTests = fileSet{"src/test/|*.java", "src/test/|*.kt", "src/test/|*.groovy", "src/test/|*.scala", "*Test.java", "*Tests.java", "*Test.kt", "*Tests.kt"}
	shFiles  = fileSet{"*.sh", "*.bash"}
)

func withExts(prefix string, exts []string) fileSet {
	s := make(fileSet, len(exts))
	for i, e := range exts {
		s[i] = prefix + e
	}
	return s
}

func (s fileSet) plus(t fileSet) fileSet { return append(append(fileSet{}, s...), t...) }

// table is every rule, compiled on first use (its patterns cost more than
// a run that never checks a diff should pay at start-up). Rows are tried
// in order; for onChanged the first row
// that claims a file (and, when scoped, a line) wins, so the specific
// rows (gate files, from Options) come before the general ones.
var table = sync.OnceValue(func() []row {
	// Patterns shared by rows.
	goAssert := re(`\b(?:t|b|f|tb|tt|s)\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(|\b(?:assert|require|is|qt|check)\.\w+\(|\bcmp\.Diff\(|\breflect\.DeepEqual\(`)
	jsAssert := re(`\bexpect(?:\.\w+)?\s*\(|\bassert(?:\.\w+)*\s*\(|\.should\b|\bexpectTypeOf\s*\(`)
	pyAssert := re(`^\s*assert\b|\bself\.assert\w*\s*\(|\bself\.fail\w*\s*\(|\bpytest\.(?:raises|warns|approx)\b|\bassert_\w+\s*\(`)
	rsAssert := re(`\b(?:debug_)?assert(?:_eq|_ne|_matches)?!\s*[(\[{]|\bprop_assert\w*!`)
	jvAssert := re(`\bassert\w*\s*\(|\bassertThat\b|^\s*assert\s|\bverify\s*\(|\bfail\s*\(|\bAssertions\.\w+|\bshould\w*\b`)

	jsDecl := re("\\b[xf]?(?:it|test|describe|context|suite|specify|bench)(?:\\.\\w+)*(?:\\([^)]*\\))?\\s*\\(\\s*(?:'([^']*)'|\"([^\"]*)\"|`([^`]*)`)")
	return []row{
		// Go.
		{files: goTests, on: onDeleted, rule: RuleTestDeleted, why: "Go test file removed: its tests no longer run"},
		{files: goTests, on: onDecl, rule: RuleTestRemoved, re: re(`^\s*func\s+((?:Test|Benchmark|Fuzz|Example)\w*)\s*\(`), why: "Go test function removed"},
		{files: goTests, on: onDecl, rule: RuleTestRemoved, re: re(`\.Run\(\s*"([^"]+)"`), why: "Go subtest removed"},
		{files: goTests, on: onAdded, rule: RuleSkipAdded, re: re(`\.Skip(?:Now|f)?\(`), why: "Go test skipped"},
		{files: goTests, on: onAddedRaw, rule: RuleSkipAdded, re: re(`^//\s*go:build\s+ignore\b|^//\s*\+build\s+ignore\b`), why: "Go test file excluded from the build"},
		{files: goTests, on: onRemoved, rule: RuleAssertionRemoved, re: goAssert, why: "Go check removed"},
		{files: goTests, on: onCommented, rule: RuleAssertionCommented, re: goAssert, why: "Go check commented out"},
		{files: goTests, on: onUnreachable, rule: RuleAssertionUnreachable, re: goAssert, why: "Go check no longer runs"},
		{files: goFiles, on: onAddedRaw, rule: RuleSuppressionAdded, re: re(`//\s*nolint\b|//\s*lint:(?:file-)?ignore\b|//\s*#?nosec\b`), why: "lint check suppressed", tool: "golangci-lint"},

		// JavaScript and TypeScript (Jest, Vitest, Mocha, Jasmine, node:test).
		{files: jsTests, on: onDeleted, rule: RuleTestDeleted, why: "JS/TS test file removed: its tests no longer run"},
		{files: jsTests, on: onDecl, rule: RuleTestRemoved, re: jsDecl, why: "JS/TS test case removed"},
		{files: jsTests, on: onAdded, rule: RuleSkipAdded, re: re(`\b(?:it|test|describe|context|suite|specify)\.(?:skip|todo|only|skipIf|runIf|fails)\b|\b(?:xit|xtest|xdescribe|xcontext|xspecify|fit|fdescribe|ftest)\s*\(|\bthis\.skip\s*\(|\{\s*skip\s*:\s*true\b`), why: "JS/TS test skipped or the suite narrowed (.only)"},
		{files: jsTests, on: onRemoved, rule: RuleAssertionRemoved, re: jsAssert, why: "JS/TS assertion removed"},
		{files: jsTests, on: onCommented, rule: RuleAssertionCommented, re: jsAssert, why: "JS/TS assertion commented out"},
		{files: jsTests, on: onUnreachable, rule: RuleAssertionUnreachable, re: jsAssert, why: "JS/TS assertion no longer runs"},
		{files: jsFiles, on: onAddedRaw, rule: RuleSuppressionAdded, re: re(`(?://|/\*)\s*eslint-disable|@ts-(?:ignore|expect-error|nocheck)\b|(?://|/\*)\s*(?:istanbul|c8|v8)\s+ignore\b|(?://|/\*)\s*biome-ignore\b|(?://|/\*)\s*oxlint-disable`), why: "lint or type check suppressed", tool: "eslint"},

		// Python (pytest, unittest).
		{files: pyTests, on: onDeleted, rule: RuleTestDeleted, why: "Python test file removed: its tests no longer run"},
		{files: pyTests, on: onDecl, rule: RuleTestRemoved, re: re(`^\s*(?:async\s+)?def\s+(test\w*)\s*\(|^\s*class\s+(Test\w*)\b`), why: "Python test removed"},
		{files: pyFiles, on: onAdded, rule: RuleSkipAdded, re: re(`@pytest\.mark\.(?:skip|skipif|xfail)\b|\bpytest\.(?:skip|xfail|importorskip)\s*\(|@(?:unittest\.)?(?:skip|skipIf|skipUnless|expectedFailure)\b|\bself\.skipTest\s*\(|\braise\s+(?:unittest\.)?SkipTest\b`), why: "Python test skipped"},
		{files: pyTests, on: onRemoved, rule: RuleAssertionRemoved, re: pyAssert, why: "Python assertion removed"},
		{files: pyTests, on: onCommented, rule: RuleAssertionCommented, re: pyAssert, why: "Python assertion commented out"},
		{files: pyTests, on: onUnreachable, rule: RuleAssertionUnreachable, re: pyAssert, why: "Python assertion no longer runs"},
		{files: pyFiles, on: onAddedRaw, rule: RuleSuppressionAdded, re: re(`#\s*noqa\b|#\s*type:\s*ignore\b|#\s*pylint:\s*disable|#\s*pragma:\s*no\s*cover\b|#\s*mypy:\s*ignore-errors\b|#\s*ruff:\s*noqa\b|#\s*pyright:\s*ignore\b|#\s*nosec\b|#\s*fmt:\s*off\b`), why: "lint, type or coverage check suppressed", tool: "ruff"},

		// Rust: tests live in tests/ and in #[cfg(test)] modules of any file.
		{files: rsTests, on: onDeleted, rule: RuleTestDeleted, why: "Rust integration test file removed: its tests no longer run"},
		{files: rsFiles, on: onDecl, rule: RuleTestRemoved, re: re(`#\[(?:\w+::)*test\b[^\]]*\]`), next: re(`\bfn\s+(\w+)`), why: "Rust #[test] function removed"},
		{files: rsFiles, on: onDecl, rule: RuleTestRemoved, re: re(`#\[cfg\(test\)\]`), next: re(`\bmod\s+(\w+)`), why: "Rust #[cfg(test)] module removed"},
		{files: rsFiles, on: onAdded, rule: RuleSkipAdded, re: re(`#\[ignore\b`), why: "Rust test ignored"},
		{files: rsFiles, on: onRemoved, rule: RuleAssertionRemoved, re: rsAssert, why: "Rust assertion removed"},
		{files: rsFiles, on: onCommented, rule: RuleAssertionCommented, re: rsAssert, why: "Rust assertion commented out"},
		{files: rsFiles, on: onUnreachable, rule: RuleAssertionUnreachable, re: rsAssert, why: "Rust assertion no longer runs"},
		{files: rsFiles, on: onAddedRaw, rule: RuleSuppressionAdded, re: re(`#!?\[(?:allow|expect)\s*\(|#!?\[cfg_attr\(.*\b(?:allow|expect)\s*\(`), why: "compiler or clippy lint suppressed", tool: "clippy"},

		// Java and Kotlin (JUnit 4 and 5, TestNG).
		{files: jvmTests, on: onDeleted, rule: RuleTestDeleted, why: "JVM test file removed: its tests no longer run"},
		{files: jvmTests, on: onDecl, rule: RuleTestRemoved, re: re(`@(?:Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate)\b`), next: re("\\b(?:void|fun)\\s+(\\w+|`[^`]+`)"), why: "JVM @Test method removed"},
		{files: jvmTests, on: onAdded, rule: RuleSkipAdded, re: re(`@(?:Disabled\w*|Ignore)\b|\bAssume(?:ptions)?\.assume\w*\s*\(|\bassume(?:True|False|That)\s*\(|@Test\s*\(\s*enabled\s*=\s*false`), why: "JVM test disabled"},
		{files: jvmTests, on: onRemoved, rule: RuleAssertionRemoved, re: jvAssert, why: "JVM assertion removed"},
		{files: jvmTests, on: onCommented, rule: RuleAssertionCommented, re: jvAssert, why: "JVM assertion commented out"},
		{files: jvmTests, on: onUnreachable, rule: RuleAssertionUnreachable, re: jvAssert, why: "JVM assertion no longer runs"},
		{files: jvmFiles, on: onAddedRaw, rule: RuleSuppressionAdded, re: re(`@SuppressWarnings\b|@Suppress\s*\(|@SuppressFBWarnings\b|//\s*NOSONAR\b|//\s*CHECKSTYLE\s*:?\s*OFF\b|//\s*noinspection\b`), why: "compiler or lint warning suppressed", tool: "lint"},

		// Shell.
		{files: shFiles, on: onAddedRaw, rule: RuleSuppressionAdded, re: re(`#\s*shellcheck\s+disable\b`), why: "shellcheck check suppressed", tool: "shellcheck"},

		// CI.
		{files: fileSet{".github/workflows/*", ".github/actions/**", ".gitlab-ci.yml", ".gitlab-ci/**", ".ci/**", "Jenkinsfile", ".circleci/**", "azure-pipelines.yml", ".travis.yml", "bitbucket-pipelines.yml", ".buildkite/**", ".drone.yml", ".woodpecker.yml", ".woodpecker/**"},
			on: onChanged, rule: RuleCIChanged, why: "CI configuration changed", tool: "CI"},

		// Lint, format and type-check configuration.
		{files: fileSet{".golangci.yml", ".golangci.yaml", ".golangci.toml", ".golangci.json"}, on: onChanged, rule: RuleConfigChanged, why: "golangci-lint configuration changed", tool: "golangci-lint"},
		{files: fileSet{".eslintrc", ".eslintrc.*", "eslint.config.*", ".eslintignore"}, on: onChanged, rule: RuleConfigChanged, why: "ESLint configuration changed", tool: "eslint"},
		{files: fileSet{".prettierrc", ".prettierrc.*", "prettier.config.*", ".prettierignore"}, on: onChanged, rule: RuleConfigChanged, why: "Prettier configuration changed", tool: "prettier"},
		{files: fileSet{"biome.json", "biome.jsonc", ".oxlintrc.json"}, on: onChanged, rule: RuleConfigChanged, why: "lint configuration changed", tool: "lint"},
		{files: fileSet{"ruff.toml", ".ruff.toml", ".flake8", ".pylintrc", "pylintrc", "mypy.ini", ".mypy.ini", "pyrightconfig.json"}, on: onChanged, rule: RuleConfigChanged, why: "Python lint or type-check configuration changed", tool: "lint"},
		{files: fileSet{"pyproject.toml"}, on: onChanged, scope: inSection, re: re(`^tool\.(?:ruff|pytest|coverage|mypy|pylint|pyright|flake8|black|isort)\b`), rule: RuleConfigChanged, why: "pyproject.toml lint, test or coverage section changed", tool: "pyproject"},
		{files: fileSet{"setup.cfg", "tox.ini", "pytest.ini", ".coveragerc", "noxfile.py"}, on: onChanged, rule: RuleConfigChanged, why: "Python test, lint or coverage configuration changed", tool: "pytest"},
		{files: fileSet{"jest.config.*", "vitest.config.*", "vitest.workspace.*", ".mocharc*", "karma.conf.*", "playwright.config.*", ".nycrc", ".nycrc.*", ".c8rc", ".c8rc.*", "codecov.yml", ".codecov.yml"}, on: onChanged, rule: RuleConfigChanged, why: "JS test runner or coverage configuration changed", tool: "test config"},
		{files: fileSet{"tsconfig*.json", "jsconfig*.json"}, on: onChanged, scope: withKey, re: re(`"(?:strict\w*|noImplicit\w*|noUnused\w*|noUnchecked\w*|noFallthrough\w*|noPropertyAccessFromIndexSignature|exactOptionalPropertyTypes|useUnknownInCatchVariables|alwaysStrict|skipLibCheck|checkJs|noEmitOnError|allowUnreachableCode|allowUnusedLabels)"\s*:`), rule: RuleConfigChanged, why: "TypeScript strictness flag changed", tool: "tsconfig"},
		{files: fileSet{"package.json"}, on: onChanged, scope: withKey, re: re(`"(?:test|lint|check|typecheck|type-check|tsc|coverage|ci|verify|validate|format:check|pretest|posttest|prelint)(?::[^"]*)?"\s*:|"(?:jest|eslintConfig|prettier|c8|nyc|vitest|mocha|ava)"\s*:`), rule: RuleConfigChanged, why: "package.json test or lint entry changed", tool: "package.json"},
		{files: fileSet{"Cargo.toml"}, on: onChanged, scope: inSection, re: re(`^(?:workspace\.)?lints\b`), rule: RuleConfigChanged, why: "Cargo.toml [lints] changed", tool: "clippy"},
		{files: fileSet{"clippy.toml", ".clippy.toml", "rustfmt.toml", ".rustfmt.toml", "deny.toml"}, on: onChanged, rule: RuleConfigChanged, why: "Rust lint configuration changed", tool: "clippy"},
		{files: fileSet{"Makefile", "makefile", "GNUmakefile", "*.mk"}, on: onChanged, scope: inTarget, re: re(`^(?:test|tests|check|lint|vet|ci|verify|coverage|cover)(?:[-_.:/]\S*)?$`), rule: RuleConfigChanged, why: "Makefile check target changed", tool: "Makefile"},
		{files: fileSet{"checkstyle*.xml", "detekt*.yml", "pmd*.xml", "spotbugs*.xml", ".editorconfig-checker.json", ".shellcheckrc", ".pre-commit-config.yaml", ".markdownlint*", ".stylelintrc*", ".hadolint.yaml"}, on: onChanged, rule: RuleConfigChanged, why: "lint configuration changed", tool: "lint"},
	}
})
