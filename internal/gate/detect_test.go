package gate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeTree writes files (path → content) under a new temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDetect(t *testing.T) {
	t.Parallel()
	goChecks := []Check{
		{Name: "go vet", Command: "go vet ./...", Why: "go.mod"},
		{Name: "go test", Command: "go test ./...", Why: "go.mod"},
	}
	npmTest := Check{Name: "npm test", Command: "npm test", Why: "package.json scripts.test"}
	tests := []struct {
		name  string
		files map[string]string
		// onPath lists the installed programs (nil: PATH is not asked).
		onPath []string
		want   []Check
	}{
		{name: "empty", files: map[string]string{"README.md": "hi"}},
		{name: "go module", files: map[string]string{"go.mod": "module x\n"}, want: goChecks},
		{
			name:  "npm package with a test script",
			files: map[string]string{"package.json": `{"name": "x", "scripts": {"test": "node --test", "build": "tsc"}}`},
			want:  []Check{npmTest},
		},
		{
			name:  "npm's default test script is skipped",
			files: map[string]string{"package.json": `{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}`},
		},
		{
			name: "test, lint and typecheck with npm's lock file",
			files: map[string]string{
				"package.json":      `{"scripts": {"typecheck": "tsc --noEmit", "lint": "eslint .", "test": "vitest run"}}`,
				"package-lock.json": "{}",
			},
			want: []Check{
				{Name: "npm test", Command: "npm test", Why: "package.json scripts.test, package-lock.json"},
				{Name: "npm lint", Command: "npm run lint", Why: "package.json scripts.lint, package-lock.json"},
				{Name: "npm typecheck", Command: "npm run typecheck", Why: "package.json scripts.typecheck, package-lock.json"},
			},
		},
		{
			name:  "pnpm by its lock file",
			files: map[string]string{"package.json": `{"scripts": {"test": "jest", "lint": "eslint ."}}`, "pnpm-lock.yaml": ""},
			want: []Check{
				{Name: "pnpm test", Command: "pnpm test", Why: "package.json scripts.test, pnpm-lock.yaml"},
				{Name: "pnpm lint", Command: "pnpm run lint", Why: "package.json scripts.lint, pnpm-lock.yaml"},
			},
		},
		{
			name:  "yarn by its lock file",
			files: map[string]string{"package.json": `{"scripts": {"test": "jest"}}`, "yarn.lock": ""},
			want:  []Check{{Name: "yarn test", Command: "yarn test", Why: "package.json scripts.test, yarn.lock"}},
		},
		{
			name:  "bun runs the script, not its own test runner",
			files: map[string]string{"package.json": `{"scripts": {"test": "vitest run"}}`, "bun.lockb": ""},
			want:  []Check{{Name: "bun test", Command: "bun run test", Why: "package.json scripts.test, bun.lockb"}},
		},
		{
			name: "the packageManager field wins over a lock file",
			files: map[string]string{
				"package.json": `{"packageManager": "pnpm@9.1.0", "scripts": {"test": "jest"}}`, "package-lock.json": "{}",
			},
			want: []Check{{Name: "pnpm test", Command: "pnpm test", Why: "package.json scripts.test, packageManager pnpm@9.1.0"}},
		},
		{name: "an invalid package.json finds nothing", files: map[string]string{"package.json": `{"scripts": `}},
		{
			name:  "cargo without clippy",
			files: map[string]string{"Cargo.toml": "[package]\nname = \"x\"\n"},
			want:  []Check{{Name: "cargo test", Command: "cargo test", Why: "Cargo.toml"}},
		},
		{
			name:  "cargo with clippy lints",
			files: map[string]string{"Cargo.toml": "[package]\nname = \"x\"\n[lints.clippy]\npedantic = \"warn\"\n"},
			want: []Check{
				{Name: "cargo test", Command: "cargo test", Why: "Cargo.toml"},
				{Name: "clippy", Command: "cargo clippy -- -D warnings", Why: "Cargo.toml [lints.clippy]"},
			},
		},
		{
			name:  "cargo with clippy.toml",
			files: map[string]string{"Cargo.toml": "[workspace]\n", "clippy.toml": "msrv = \"1.70\"\n"},
			want: []Check{
				{Name: "cargo test", Command: "cargo test", Why: "Cargo.toml"},
				{Name: "clippy", Command: "cargo clippy -- -D warnings", Why: "clippy.toml"},
			},
		},
		{
			name:   "cargo with clippy installed",
			files:  map[string]string{"Cargo.toml": "[package]\nname = \"x\"\n"},
			onPath: []string{"cargo-clippy"},
			want: []Check{
				{Name: "cargo test", Command: "cargo test", Why: "Cargo.toml"},
				{Name: "clippy", Command: "cargo clippy -- -D warnings", Why: "Cargo.toml, cargo-clippy installed"},
			},
		},
		{
			name:  "pytest and ruff in pyproject.toml",
			files: map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n[tool.pytest.ini_options]\naddopts = \"-q\"\n[tool.ruff]\nline-length = 100\n"},
			want: []Check{
				{Name: "pytest", Command: "pytest", Why: "pyproject.toml [tool.pytest.ini_options]"},
				{Name: "ruff", Command: "ruff check .", Why: "pyproject.toml [tool.ruff]"},
			},
		},
		{
			name:  "pyproject.toml without pytest or ruff",
			files: map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n[tool.black]\n"},
		},
		{
			name:  "pytest.ini, ruff.toml, uv",
			files: map[string]string{"pytest.ini": "[pytest]\n", "ruff.toml": "", "uv.lock": ""},
			want: []Check{
				{Name: "pytest", Command: "uv run pytest", Why: "pytest.ini"},
				{Name: "ruff", Command: "uv run ruff check .", Why: "ruff.toml"},
			},
		},
		{
			name:  "conftest.py with poetry",
			files: map[string]string{"conftest.py": "", "poetry.lock": ""},
			want:  []Check{{Name: "pytest", Command: "poetry run pytest", Why: "conftest.py"}},
		},
		{
			name:  "setup.cfg's pytest section",
			files: map[string]string{"setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\ntestpaths = tests\n"},
			want:  []Check{{Name: "pytest", Command: "pytest", Why: "setup.cfg [tool:pytest]"}},
		},
		{
			name:  "a tests directory of pytest files",
			files: map[string]string{"tests/unit/test_greet.py": "def test_x(): pass\n"},
			want:  []Check{{Name: "pytest", Command: "pytest", Why: "tests/unit/test_greet.py"}},
		},
		{
			name:  "a tests directory of another language is not pytest",
			files: map[string]string{"tests/greet.bats": "", "tests/helper.py": ""},
		},
		{
			name: "Makefile targets",
			files: map[string]string{"Makefile": `.PHONY: test lint
VERSION := 1.0
CHECK ::= yes
build:
	go build ./...
test lint: build
	go test ./...
# check: a comment
	check: not a rule
check-all:
	true
`},
			want: []Check{
				{Name: "make test", Command: "make test", Why: "Makefile target test"},
				{Name: "make lint", Command: "make lint", Why: "Makefile target lint"},
			},
		},
		{
			name:  "Makefile without check targets",
			files: map[string]string{"Makefile": "all:\n\ttrue\ntesting:\n\ttrue\n"},
		},
		{
			name:  "gradle with its wrapper",
			files: map[string]string{"build.gradle.kts": "", "gradlew": "#!/bin/sh\n"},
			want:  []Check{{Name: "gradle test", Command: "./gradlew test", Why: "build.gradle.kts, gradlew"}},
		},
		{name: "gradle without a wrapper", files: map[string]string{"build.gradle": ""}},
		{
			name:  "maven",
			files: map[string]string{"pom.xml": "<project/>"},
			want:  []Check{{Name: "maven test", Command: "mvn -q test", Why: "pom.xml"}},
		},
		{
			name:  "maven with its wrapper",
			files: map[string]string{"pom.xml": "<project/>", "mvnw": ""},
			want:  []Check{{Name: "maven test", Command: "./mvnw -q test", Why: "pom.xml, mvnw"}},
		},
		{
			name: "monorepo: Go, a web app and a Makefile",
			files: map[string]string{
				"go.mod":         "module x\n",
				"package.json":   `{"scripts": {"test": "vitest run", "lint": "eslint web"}}`,
				"pnpm-lock.yaml": "",
				"Makefile":       "check:\n\tgo vet ./...\n",
			},
			want: append(append([]Check(nil), goChecks...),
				Check{Name: "pnpm test", Command: "pnpm test", Why: "package.json scripts.test, pnpm-lock.yaml"},
				Check{Name: "pnpm lint", Command: "pnpm run lint", Why: "package.json scripts.lint, pnpm-lock.yaml"},
				Check{Name: "make check", Command: "make check", Why: "Makefile target check"},
			),
		},
		{
			name: "monorepo: only the top is looked at",
			files: map[string]string{
				"go.mod":           "module x\n",
				"web/package.json": `{"scripts": {"test": "vitest run"}}`,
			},
			want: goChecks,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, tt.files)
			var opts DetectOptions
			if tt.onPath != nil {
				opts.OnPath = func(p string) bool {
					return slices.Contains(tt.onPath, p)
				}
			}
			got := Detect(dir, opts)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Detect (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	got := Commands([]Check{{Command: "go vet ./..."}, {Command: "npm test"}})
	if diff := cmp.Diff([]string{"go vet ./...", "npm test"}, got); diff != "" {
		t.Error(diff)
	}
}
