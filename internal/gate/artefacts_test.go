package gate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArtefacts(t *testing.T) {
	t.Parallel()
	python := []string{"__pycache__/", "*.pyc", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/"}
	tests := []struct {
		name     string
		files    map[string]string
		commands []string
		want     []string
	}{
		{name: "nothing found", files: map[string]string{"README.md": "hi"}, commands: []string{"./check.sh"}},
		{name: "go has none", files: map[string]string{"go.mod": "module x"}, commands: []string{"go test ./..."}},
		{name: "python by its gate alone", files: map[string]string{"calc.py": ""},
			commands: []string{"python3 -m unittest discover -s tests"}, want: python},
		{name: "python by pyproject", files: map[string]string{"pyproject.toml": ""}, want: python},
		{name: "pytest through uv", commands: []string{"uv run --frozen pytest -q"}, want: python},
		{name: "an assignment before the program", commands: []string{"PYTHONPATH=src /usr/bin/python3.12 -m pytest"},
			want: python},
		{name: "env runs the program", commands: []string{"env CI=1 pytest"}, want: python},
		{name: "rust", files: map[string]string{"Cargo.toml": ""}, want: []string{"target/"}},
		{name: "node by npx", commands: []string{"npx jest"}, want: []string{"node_modules/"}},
		{name: "each segment of a command line", commands: []string{"make lint && cargo test"},
			want: []string{"target/", "*.o"}},
		{name: "maven's target once beside cargo's", files: map[string]string{"Cargo.toml": "", "pom.xml": ""},
			want: []string{"target/"}},
		{name: "gradle through its wrapper", commands: []string{"./gradlew test"}, want: []string{".gradle/", "build/"}},
		{name: "a word that only names a program is not one", commands: []string{"echo python"}},
		{name: "a name that only starts like one is not one", commands: []string{"makeup", "cargo-deny check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Artefacts(writeTree(t, tt.files), tt.commands)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Artefacts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrograms(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"python3 -m pytest":                 {"python3"},
		"FOO=1 BAR=2 pytest -q":             {"pytest"},
		"cd web; npm test || yarn run lint": {"cd", "npm", "yarn", "lint"},
		"poetry run python -m mypy .":       {"poetry", "python"},
		"(cargo test)":                      {"cargo"},
		"'./mvnw' -q test":                  {"mvnw"},
	}
	for cmd, want := range tests {
		if diff := cmp.Diff(want, programs(cmd)); diff != "" {
			t.Errorf("programs(%q) (-want +got):\n%s", cmd, diff)
		}
	}
}
