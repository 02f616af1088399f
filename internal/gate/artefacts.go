package gate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// toolchain is a build or test tool and what it leaves in the working
// tree when it runs: caches, bytecode, build outputs, installed
// dependencies, none of them work to commit.
type toolchain struct {
	name string
	// files reveal the toolchain at the top of a project.
	files []string
	// programs reveal it in a gate command, by the program's name.
	programs []string
	// artefacts are .gitignore lines, each a name with no slash but a
	// trailing one for a directory: matched at any depth, as git does.
	artefacts []string
}

// toolchains is the one table of artefacts: ralph leaves untracked files
// matching them out of its commits, and names the lines for the user's
// .gitignore.
func toolchains() []toolchain {
	return []toolchain{
		{name: "python",
			files: []string{"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile",
				"pytest.ini", "conftest.py", "tox.ini", "uv.lock", "poetry.lock"},
			programs: []string{"python", "python3", "pytest", "py.test", "uv", "poetry", "pipenv", "tox", "nox",
				"hatch", "ruff", "mypy"},
			artefacts: []string{"__pycache__/", "*.pyc", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/"}},
		{name: "rust", files: []string{"Cargo.toml"}, programs: []string{"cargo", "rustc"},
			artefacts: []string{"target/"}},
		{name: "node", files: []string{"package.json"},
			programs:  []string{"npm", "npx", "pnpm", "yarn", "bun", "node", "jest", "vitest", "tsc", "eslint"},
			artefacts: []string{"node_modules/"}},
		{name: "c", files: []string{"GNUmakefile", "makefile", "Makefile"},
			programs: []string{"make", "cc", "gcc", "clang", "c++", "g++", "clang++"}, artefacts: []string{"*.o"}},
		{name: "maven", files: []string{"pom.xml"}, programs: []string{"mvn", "mvnw"},
			artefacts: []string{"target/"}},
		{name: "gradle", files: []string{"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"},
			programs: []string{"gradle", "gradlew"}, artefacts: []string{".gradle/", "build/"}},
	}
}

// Artefacts are the .gitignore lines of what the project's toolchains
// leave in its tree, in the table's order without duplicates. A
// toolchain is found by its files at the top of dir, as Detect finds
// checks, or by a program the gate commands run (python3 -m pytest in a
// project with no pyproject.toml is Python's all the same).
func Artefacts(dir string, commands []string) []string {
	progs := map[string]bool{}
	for _, c := range commands {
		for _, p := range programs(c) {
			// python3.12 is python's too.
			progs[p], progs[strings.TrimRight(p, "0123456789.")] = true, true
		}
	}
	var lines []string
	for _, tc := range toolchains() {
		found := slices.ContainsFunc(tc.programs, func(p string) bool { return progs[p] }) ||
			slices.ContainsFunc(tc.files, func(f string) bool {
				_, err := os.Stat(filepath.Join(dir, f))
				return err == nil
			})
		if !found {
			continue
		}
		for _, a := range tc.artefacts {
			if !slices.Contains(lines, a) {
				lines = append(lines, a)
			}
		}
	}
	return lines
}

// programs names the programs a shell command starts, as far as its
// words say: the first word of each simple command (after variable
// assignments), by its base name, and the program a runner starts (uv
// run pytest, npx jest, poetry run python). It reads, never runs: a
// wrong guess costs a pattern, not a commit.
func programs(command string) []string {
	var out []string
	for _, seg := range strings.FieldsFunc(command, func(r rune) bool { return strings.ContainsRune(";&|()\n", r) }) {
		words := strings.Fields(seg)
		for len(words) > 0 && isAssignment(words[0]) {
			words = words[1:]
		}
		for len(words) > 0 {
			name := filepath.Base(strings.Trim(words[0], `"'`))
			out = append(out, name)
			words = words[1:]
			// A runner's program follows it, maybe after "run" or "exec".
			if !slices.Contains([]string{"uv", "poetry", "pipenv", "npx", "pnpm", "yarn", "bun", "exec", "env"}, name) {
				break
			}
			for len(words) > 0 && (words[0] == "run" || words[0] == "exec" || strings.HasPrefix(words[0], "-") || isAssignment(words[0])) {
				words = words[1:]
			}
		}
	}
	return out
}

// isAssignment reports whether a shell word sets a variable (NAME=value).
func isAssignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
