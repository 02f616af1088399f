package gate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Check is a quality check found in a project: what a gate could run.
type Check struct {
	// Name is a short label: "go test", "npm test", "ruff".
	Name string `json:"name"`
	// Command is the shell command, as [gates] commands takes it.
	Command string `json:"command"`
	// Why names what revealed it: a file, and the part of it.
	Why string `json:"why"`
}

// DetectOptions tune Detect.
type DetectOptions struct {
	// OnPath reports whether a program is installed; nil means nothing
	// beyond the project's files is consulted.
	OnPath func(program string) bool
}

// Detect finds the checks a project already has, from its files alone: it
// never runs them (nor make, npm or a build tool to ask). The checks come
// in a fixed order (Go, package.json, Cargo, Python, Makefile, Gradle,
// Maven) without duplicates, and only from dir itself: a project's own
// entry points are at its top.
//
// A plan's "## Validation Commands" are not found here: they are read
// with the plan and run as every task's own gates.
func Detect(dir string, opts DetectOptions) []Check {
	d := detector{dir: dir, opts: opts}
	for _, find := range []func() []Check{d.golang, d.node, d.cargo, d.python, d.makefile, d.gradle, d.maven} {
		for _, c := range find() {
			if !slices.ContainsFunc(d.found, func(o Check) bool { return o.Command == c.Command }) {
				d.found = append(d.found, c)
			}
		}
	}
	return d.found
}

type detector struct {
	dir   string
	opts  DetectOptions
	found []Check
}

func (d detector) exists(name string) bool {
	_, err := os.Stat(filepath.Join(d.dir, name))
	return err == nil
}

func (d detector) read(name string) ([]byte, bool) {
	b, err := os.ReadFile(filepath.Join(d.dir, name))
	return b, err == nil
}

// first is the first of names that exists, or "".
func (d detector) first(names ...string) string {
	for _, n := range names {
		if d.exists(n) {
			return n
		}
	}
	return ""
}

func (d detector) golang() []Check {
	if !d.exists("go.mod") {
		return nil
	}
	return []Check{
		{Name: "go vet", Command: "go vet ./...", Why: "go.mod"},
		{Name: "go test", Command: "go test ./...", Why: "go.mod"},
	}
}

// npmDefaultTest is the test script `npm init` writes: it always fails.
const npmDefaultTest = "no test specified"

// node finds package.json's test, lint and typecheck scripts, run with the
// project's package manager.
func (d detector) node() []Check {
	b, ok := d.read("package.json")
	if !ok {
		return nil
	}
	var pkg struct {
		Scripts        map[string]string `json:"scripts"`
		PackageManager string            `json:"packageManager"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return nil
	}
	pm, pmWhy := d.packageManager(pkg.PackageManager)
	var checks []Check
	for _, script := range []string{"test", "lint", "typecheck"} {
		body, ok := pkg.Scripts[script]
		if !ok || strings.TrimSpace(body) == "" || (script == "test" && strings.Contains(body, npmDefaultTest)) {
			continue
		}
		cmd := pm + " run " + script
		if script == "test" && pm != "bun" {
			// `bun test` is bun's own test runner, not the script.
			cmd = pm + " test"
		}
		why := "package.json scripts." + script
		if pmWhy != "" {
			why += ", " + pmWhy
		}
		checks = append(checks, Check{Name: pm + " " + script, Command: cmd, Why: why})
	}
	return checks
}

// packageManager picks npm, pnpm, yarn or bun: package.json's
// packageManager field first, then the lock file; why names the evidence
// ("" for npm by default).
func (d detector) packageManager(field string) (pm, why string) {
	if name, _, _ := strings.Cut(field, "@"); slices.Contains([]string{"npm", "pnpm", "yarn", "bun"}, name) {
		return name, "packageManager " + field
	}
	for _, l := range []struct{ file, pm string }{
		{"bun.lock", "bun"}, {"bun.lockb", "bun"}, {"pnpm-lock.yaml", "pnpm"}, {"yarn.lock", "yarn"},
		{"package-lock.json", "npm"}, {"npm-shrinkwrap.json", "npm"},
	} {
		if d.exists(l.file) {
			return l.pm, l.file
		}
	}
	return "npm", ""
}

// cargo finds cargo test, and clippy where the project shows it uses it
// (a clippy.toml, clippy lints in Cargo.toml, clippy in the toolchain
// file) or it is installed.
func (d detector) cargo() []Check {
	manifest, ok := d.read("Cargo.toml")
	if !ok {
		return nil
	}
	checks := []Check{{Name: "cargo test", Command: "cargo test", Why: "Cargo.toml"}}
	if why := d.clippyWhy(manifest); why != "" {
		checks = append(checks, Check{Name: "clippy", Command: "cargo clippy -- -D warnings", Why: why})
	}
	return checks
}

func (d detector) clippyWhy(manifest []byte) string {
	if f := d.first("clippy.toml", ".clippy.toml"); f != "" {
		return f
	}
	var m struct {
		Lints     map[string]any `toml:"lints"`
		Workspace struct {
			Lints map[string]any `toml:"lints"`
		} `toml:"workspace"`
	}
	if toml.Unmarshal(manifest, &m) == nil {
		if _, ok := m.Lints["clippy"]; ok {
			return "Cargo.toml [lints.clippy]"
		}
		if _, ok := m.Workspace.Lints["clippy"]; ok {
			return "Cargo.toml [workspace.lints.clippy]"
		}
	}
	for _, f := range []string{"rust-toolchain.toml", "rust-toolchain"} {
		if b, ok := d.read(f); ok && bytes.Contains(b, []byte("clippy")) {
			return f + " (clippy component)"
		}
	}
	if d.opts.OnPath != nil && d.opts.OnPath("cargo-clippy") {
		return "Cargo.toml, cargo-clippy installed"
	}
	return ""
}

// python finds pytest where it is configured and ruff where it is, run
// through uv or poetry when the project is managed by one.
func (d detector) python() []Check {
	var tool map[string]any
	if b, ok := d.read("pyproject.toml"); ok {
		var p struct {
			Tool map[string]any `toml:"tool"`
		}
		if toml.Unmarshal(b, &p) == nil {
			tool = p.Tool
		}
	}
	prefix := ""
	switch {
	case d.exists("uv.lock"):
		prefix = "uv run "
	case d.exists("poetry.lock"):
		prefix = "poetry run "
	}
	var checks []Check
	if why := d.pytestWhy(tool); why != "" {
		checks = append(checks, Check{Name: "pytest", Command: prefix + "pytest", Why: why})
	}
	ruff := d.first("ruff.toml", ".ruff.toml")
	if _, ok := tool["ruff"]; ok && ruff == "" {
		ruff = "pyproject.toml [tool.ruff]"
	}
	if ruff != "" {
		checks = append(checks, Check{Name: "ruff", Command: prefix + "ruff check .", Why: ruff})
	}
	return checks
}

func (d detector) pytestWhy(tool map[string]any) string {
	if f := d.first("pytest.ini", "conftest.py"); f != "" {
		return f
	}
	if p, ok := tool["pytest"].(map[string]any); ok {
		if _, ok := p["ini_options"]; ok {
			return "pyproject.toml [tool.pytest.ini_options]"
		}
	}
	for _, ini := range []struct{ file, section string }{{"setup.cfg", "[tool:pytest]"}, {"tox.ini", "[pytest]"}} {
		if b, ok := d.read(ini.file); ok && hasLine(b, ini.section) {
			return ini.file + " " + ini.section
		}
	}
	// A tests/ directory is common in every language: it counts when it
	// holds pytest's test files.
	var hit string
	_ = filepath.WalkDir(filepath.Join(d.dir, "tests"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || hit != "" {
			return filepath.SkipDir
		}
		n := e.Name()
		if !e.IsDir() && strings.HasSuffix(n, ".py") && (strings.HasPrefix(n, "test_") || strings.HasSuffix(n, "_test.py")) {
			rel, _ := filepath.Rel(d.dir, p)
			hit = filepath.ToSlash(rel)
			return filepath.SkipAll
		}
		return nil
	})
	return hit
}

// hasLine reports whether a line of b, trimmed, is line.
func hasLine(b []byte, line string) bool {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == line {
			return true
		}
	}
	return false
}

// makeRule matches a rule's targets: names before a colon that is not an
// assignment (:=, ::=).
var makeRule = regexp.MustCompile(`^([A-Za-z0-9_./-]+(?:[ \t]+[A-Za-z0-9_./-]+)*)[ \t]*::?(?:[^=:]|$)`)

// makefile finds the targets test, check and lint, by reading the rules'
// names (make itself is not run: it would run recipes).
func (d detector) makefile() []Check {
	name := d.first("GNUmakefile", "makefile", "Makefile")
	if name == "" {
		return nil
	}
	b, _ := d.read(name)
	targets := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '\t' || line[0] == '#' || line[0] == '.' {
			continue // a recipe, a comment, or a special target (.PHONY)
		}
		if m := makeRule.FindStringSubmatch(line); m != nil {
			for t := range strings.FieldsSeq(m[1]) {
				targets[t] = true
			}
		}
	}
	var checks []Check
	for _, t := range []string{"test", "check", "lint"} {
		if targets[t] {
			checks = append(checks, Check{Name: "make " + t, Command: "make " + t, Why: name + " target " + t})
		}
	}
	return checks
}

// gradle finds the test task, run through the project's wrapper (a
// system gradle may be another version than the build wants).
func (d detector) gradle() []Check {
	build := d.first("build.gradle.kts", "build.gradle", "settings.gradle.kts", "settings.gradle")
	if build == "" || !d.exists("gradlew") {
		return nil
	}
	return []Check{{Name: "gradle test", Command: "./gradlew test", Why: build + ", gradlew"}}
}

func (d detector) maven() []Check {
	if !d.exists("pom.xml") {
		return nil
	}
	if d.exists("mvnw") {
		return []Check{{Name: "maven test", Command: "./mvnw -q test", Why: "pom.xml, mvnw"}}
	}
	return []Check{{Name: "maven test", Command: "mvn -q test", Why: "pom.xml"}}
}

// Commands are the checks' commands, in order.
func Commands(checks []Check) []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.Command
	}
	return out
}
