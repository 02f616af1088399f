package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/pflag"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/scaffold"
	"github.com/ralph-loop/ralph/internal/state"
)

// The docs are checked against the code they describe. The reference
// pages (docs/cli.md, docs/configuration.md) are generated and must be
// what the generator writes today; the hand-written pages' tables of
// agents, outcomes, exit codes and packages must list what the code has.

// docPage is the text of a page of docs/ (README.md for the README).
func docPage(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join("..", "..", "docs", name)
	if name == "README.md" {
		path = filepath.Join("..", "..", name)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReferencePagesUpToDate: the committed reference pages are what the
// commands and the key table make of them now.
func TestReferencePagesUpToDate(t *testing.T) {
	t.Parallel()
	pages, err := ReferencePages()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range pages {
		if got := docPage(t, name); got != string(want) {
			t.Errorf("docs/%s is stale: run `make docs` (go generate ./internal/cli) and commit it\n%s",
				name, cmp.Diff(string(want), got))
		}
	}
}

// TestReadmeAndDocsLinks: the README stays short (at most 300 lines), and
// every relative link of the README and docs/ names a file that exists.
func TestReadmeAndDocsLinks(t *testing.T) {
	t.Parallel()
	readme := docPage(t, "README.md")
	if n := strings.Count(readme, "\n"); n > 300 {
		t.Errorf("README.md has %d lines; at most 300: move the detail to docs/", n)
	}
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "..", "README.md"))
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)\s]*)?\)`)
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", filepath.Base(page), target)
			}
		}
	}
}

// mdTable returns the rows (header excluded) of the first table after the
// line heading, before the next heading. Cells are trimmed; `\|` is a
// pipe inside a cell.
func mdTable(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		t.Fatalf("no heading %q", heading)
	}
	var rows [][]string
	for _, line := range lines[start+1:] {
		switch {
		case strings.HasPrefix(line, "|"):
			rows = append(rows, mdCells(line))
		case len(rows) > 0:
			return rows[2:] // header and separator
		case strings.HasPrefix(line, "#"):
			t.Fatalf("no table under %q", heading)
		}
	}
	if len(rows) < 2 {
		t.Fatalf("no table under %q", heading)
	}
	return rows[2:]
}

func mdCells(line string) []string {
	const pipe = "\x00"
	line = strings.ReplaceAll(strings.TrimSpace(line), `\|`, pipe)
	cells := strings.Split(strings.Trim(line, "|"), "|")
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(strings.TrimSpace(c), pipe, "|")
	}
	return cells
}

// tomlString unquotes a TOML string default ("30m" → 30m); other values
// stay as they are.
func tomlString(v string) string {
	if s, err := strconv.Unquote(v); err == nil {
		return s
	}
	return v
}

// TestRunFlagsNotKeys: `ralph run --help`, and so docs/cli.md, names the
// flags that are not config keys.
func TestRunFlagsNotKeys(t *testing.T) {
	t.Parallel()
	f, _, _ := testFactory(t, t.TempDir())
	fl := newCmdRun(f, nil).Flags()
	var others []string
	fl.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !slices.ContainsFunc(config.Flags("run"), func(k config.FlagDoc) bool { return k.Name == f.Name }) {
			others = append(others, "--"+f.Name)
		}
	})
	m := regexp.MustCompile(`Every flag but (.*?) is also a key`).FindStringSubmatch(strings.Join(strings.Fields(runLong), " "))
	if m == nil {
		t.Fatal("ralph run --help does not say which flags are not config keys (Every flag but ... is also a key)")
	}
	named := regexp.MustCompile(`--[a-z-]+`).FindAllString(m[1], -1)
	slices.Sort(named)
	if diff := cmp.Diff(others, named); diff != "" {
		t.Errorf("ralph run --help: the flags that are not config keys (-code +doc):\n%s", diff)
	}
}

// Each key flag's help names every agent the --agent flag takes.
func TestAgentFlagNamesEveryAgent(t *testing.T) {
	t.Parallel()
	for _, k := range config.Flags("run") {
		if k.Key == "agent" {
			if want := "agent CLI: " + strings.Join(agent.Names(), ", "); k.Usage != want {
				t.Errorf("--agent usage %q, want %q (config's agentNames mirrors agent.Names)", k.Usage, want)
			}
			return
		}
	}
	t.Error("no --agent flag")
}

func TestDocsAgents(t *testing.T) {
	t.Parallel()
	var names []string
	for _, row := range mdTable(t, docPage(t, "agents.md"), "## The agents") {
		names = append(names, strings.Trim(row[0], "`"))
	}
	if diff := cmp.Diff(agent.Names(), names); diff != "" {
		t.Errorf("docs/agents.md's agents table does not list agent.Names() (-code +docs):\n%s", diff)
	}
}

// constants returns the string or integer constants of a Go file whose
// names start with prefix, by value.
func constants(t *testing.T, path, prefix string) map[string]string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if ok && strings.HasPrefix(name.Name, prefix) {
					out[tomlString(lit.Value)] = name.Name
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no constants %s*", path, prefix)
	}
	return out
}

func TestDocsOutcomes(t *testing.T) {
	t.Parallel()
	outcomes := constants(t, filepath.Join("..", "state", "outcome.go"), "Outcome")
	seen := map[string]bool{}
	for _, row := range mdTable(t, docPage(t, "concepts.md"), "## Outcomes") {
		if len(row) != 3 {
			t.Errorf("docs/concepts.md outcomes: want outcome | when | attempt, got %q", row)
			continue
		}
		o := strings.Trim(row[0], "`")
		seen[o] = true
		if _, ok := outcomes[o]; !ok {
			t.Errorf("docs/concepts.md documents outcome %q, which internal/state/outcome.go does not have", o)
			continue
		}
		attempt := strings.HasPrefix(row[2], "yes")
		if !attempt && !strings.HasPrefix(row[2], "no") {
			t.Errorf("docs/concepts.md: outcome %s: attempt %q, want yes or no", o, row[2])
		}
		if counts := state.Outcome(o).CountsAsAttempt(); attempt != counts {
			t.Errorf("docs/concepts.md: outcome %s: attempt %q, state's CountsAsAttempt is %v", o, row[2], counts)
		}
	}
	for o, name := range outcomes {
		if !seen[o] {
			t.Errorf("docs/concepts.md does not document outcome %q (loop.%s)", o, name)
		}
	}
}

func TestDocsExitCodes(t *testing.T) {
	t.Parallel()
	codes := constants(t, "main.go", "Exit")
	var got, want []string
	for _, row := range mdTable(t, docPage(t, "concepts.md"), "## Exit codes") {
		got = append(got, row[0])
	}
	for c := range codes {
		want = append(want, c)
	}
	byNumber := func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	}
	slices.SortFunc(want, byNumber)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/concepts.md's exit codes are not main.go's Exit* constants (-code +docs):\n%s", diff)
	}
	// `ralph run --help` lists them too.
	for _, c := range want {
		if !regexp.MustCompile(`(?m)^  ` + c + ` +\S`).MatchString(runLong) {
			t.Errorf("ralph run --help does not list exit code %s", c)
		}
	}
}

// TestDocsCodeLayout: every package under internal/ has a row in the
// code layout of docs/contributing.md, and every package a row names exists.
func TestDocsCodeLayout(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(filepath.Join("..", "..", "internal"))
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range entries {
		if e.IsDir() {
			have = append(have, "internal/"+e.Name())
		}
	}
	var named []string
	for _, row := range mdTable(t, docPage(t, "contributing.md"), "## Code layout") {
		for _, m := range regexp.MustCompile("`(internal/[a-z]+)`").FindAllStringSubmatch(row[0], -1) {
			named = append(named, m[1])
		}
	}
	slices.Sort(named)
	if diff := cmp.Diff(have, named); diff != "" {
		t.Errorf("docs/contributing.md code layout vs internal/ (-packages +docs):\n%s", diff)
	}
}

// TestDocsTOMLParses: what the README and docs/ give to paste into
// ralph.toml parses as TOML: every ```toml block, and every inline `key =
// value` mention (dotted keys, gates.commands = ["go test ./..."], never
// "[gates] commands = ..." on one line).
func TestDocsTOMLParses(t *testing.T) {
	t.Parallel()
	pages := []string{"README.md"}
	entries, err := os.ReadDir(filepath.Join("..", "..", "docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			pages = append(pages, e.Name())
		}
	}
	block := regexp.MustCompile("(?ms)^[ \t]*```toml\n(.*?)^[ \t]*```")
	// An inline span that sets a key: `key = value` or `[table] key = value`.
	inline := regexp.MustCompile("`((?:\\[[a-z][a-z0-9.\"_-]*\\] )?[a-z][a-z0-9._-]* = [^`]+)`")
	for _, name := range pages {
		text := docPage(t, name)
		for _, m := range block.FindAllStringSubmatchIndex(text, -1) {
			src := text[m[2]:m[3]]
			var v map[string]any
			if err := toml.Unmarshal([]byte(src), &v); err != nil {
				line := strings.Count(text[:m[2]], "\n") + 1
				t.Errorf("%s:%d: a toml block that does not parse: %v\n%s", name, line, err, src)
			}
		}
		for _, m := range inline.FindAllStringSubmatchIndex(text, -1) {
			src := text[m[2]:m[3]]
			var v map[string]any
			if err := toml.Unmarshal([]byte(src), &v); err != nil {
				line := strings.Count(text[:m[2]], "\n") + 1
				t.Errorf("%s:%d: `%s` is not a TOML line: %v", name, line, src, err)
			}
		}
	}
}

// TestPrintedConfigLinesParse: the config lines ralph prints for the user
// to paste parse as TOML.
func TestPrintedConfigLinesParse(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		scaffold.GatesSnippet([]string{"go vet ./...", `go test -run "Test.*" ./...`}),
		scaffold.GatesSnippet(nil),
	} {
		var v map[string]any
		if err := toml.Unmarshal([]byte(line), &v); err != nil {
			t.Errorf("%q does not parse as TOML: %v", line, err)
		}
	}
}
