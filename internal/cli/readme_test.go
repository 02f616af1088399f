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
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/ralph-loop/ralph/internal/agent"
	"github.com/ralph-loop/ralph/internal/config"
	"github.com/ralph-loop/ralph/internal/state"
)

// The README's reference tables are checked against the code they
// describe: the config keys, `ralph run`'s flags, the agents, the outcomes
// and the exit codes. A change to one without the other fails here.

// readme is the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mdTable returns the rows (header excluded) of the first table after the
// line heading, before the next heading. Cells are trimmed; `\|` is a
// pipe inside a cell.
func mdTable(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		t.Fatalf("README.md has no heading %q", heading)
	}
	var rows [][]string
	for _, line := range lines[start+1:] {
		switch {
		case strings.HasPrefix(line, "|"):
			rows = append(rows, mdCells(line))
		case len(rows) > 0:
			return rows[2:] // header and separator
		case strings.HasPrefix(line, "#"):
			t.Fatalf("README.md: no table under %q", heading)
		}
	}
	if len(rows) < 2 {
		t.Fatalf("README.md: no table under %q", heading)
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

// checkDefault compares a README default cell with the code's default.
// A cell in backquotes, a number or a boolean is a value and must equal
// want (durations by their length; a trailing "(…)" is a comment); an empty
// cell says the default is the zero value; other words describe it.
func checkDefault(t *testing.T, what, cell, want string) {
	t.Helper()
	cell = strings.TrimSpace(regexp.MustCompile(`\s*\([^)]*\)$`).ReplaceAllString(cell, ""))
	got, literal := cell, false
	if m := regexp.MustCompile("^`(.*)`$").FindStringSubmatch(cell); m != nil {
		got, literal = m[1], true
	} else if _, err := strconv.ParseFloat(cell, 64); err == nil || cell == "true" || cell == "false" {
		literal = true
	}
	switch {
	case cell == "":
		if !slices.Contains([]string{"", "0", "false", "0s", "[]", "{}"}, want) {
			t.Errorf("README.md: %s: no default given, the code's is %s", what, want)
		}
	case !literal:
		// Prose: "embedded", "discovered", "all six".
	case got == want:
	default:
		gd, err1 := time.ParseDuration(got)
		wd, err2 := time.ParseDuration(want)
		if err1 != nil || err2 != nil || gd != wd {
			t.Errorf("README.md: %s: default %q, the code's is %q", what, got, want)
		}
	}
}

// tomlString unquotes a TOML string default ("30m" → 30m); other values
// stay as they are.
func tomlString(v string) string {
	if s, err := strconv.Unquote(v); err == nil {
		return s
	}
	return v
}

func TestReadmeConfigKeys(t *testing.T) {
	t.Parallel()
	doc := readme(t)
	keys := map[string]config.KeyDoc{}
	for _, k := range config.Keys() {
		keys[k.Key] = k
	}
	seen := map[string]bool{}
	for _, heading := range []string{"## Configuration", "### Notifications"} {
		for _, row := range mdTable(t, doc, heading) {
			if len(row) != 4 {
				t.Errorf("README.md %s: want key | type | default | meaning, got %q", heading, row)
				continue
			}
			cell := row[0]
			switch {
			case cell == "`[agents.NAME]`":
				cell = "`agents`"
			case cell == "`[prices.\"MODEL\"]`":
				cell = "`prices`"
			case strings.HasPrefix(cell, "`[") && strings.HasSuffix(cell, "]`"):
				// A section whose keys are in their own table.
				section := strings.Trim(cell, "`[]")
				if !slices.ContainsFunc(config.Keys(), func(k config.KeyDoc) bool { return strings.HasPrefix(k.Key, section+".") }) {
					t.Errorf("README.md: section %s has no keys in the code", cell)
				}
				continue
			}
			key := strings.Trim(cell, "`")
			k, ok := keys[key]
			if !ok {
				t.Errorf("README.md documents key %q, which the code does not have", key)
				continue
			}
			if seen[key] {
				t.Errorf("README.md documents key %q twice", key)
			}
			seen[key] = true
			if row[1] != k.Type {
				t.Errorf("README.md: key %s: type %q, the code's is %q", key, row[1], k.Type)
			}
			checkDefault(t, "key "+key, row[2], tomlString(k.Default))
		}
	}
	for key := range keys {
		if !seen[key] {
			t.Errorf("README.md does not document key %q", key)
		}
	}
}

func TestReadmeRunFlags(t *testing.T) {
	t.Parallel()
	doc := readme(t)
	f, _, _ := testFactory(t, t.TempDir())
	fl := newCmdRun(f, nil).Flags()
	flagCell := regexp.MustCompile(`^(?:-([a-zA-Z]), )?--([a-z][a-z-]*)(?: (\S+))?$`)
	seen := map[string]bool{}
	for _, row := range mdTable(t, doc, "### `ralph run` flags") {
		if len(row) != 3 {
			t.Errorf("README.md run flags: want flag | default | meaning, got %q", row)
			continue
		}
		m := flagCell.FindStringSubmatch(strings.Trim(row[0], "`"))
		if m == nil {
			t.Errorf("README.md run flags: cannot read flag %q", row[0])
			continue
		}
		short, name, value := m[1], m[2], m[3]
		seen[name] = true
		f := fl.Lookup(name)
		if f == nil {
			t.Errorf("README.md documents ralph run --%s, which the command does not have", name)
			continue
		}
		if short != f.Shorthand {
			t.Errorf("README.md: --%s: shorthand %q, the command's is %q", name, short, f.Shorthand)
		}
		if isBool := f.Value.Type() == "bool"; isBool != (value == "") {
			t.Errorf("README.md: --%s: value %q for a flag of type %s", name, value, f.Value.Type())
		}
		checkDefault(t, "--"+name, row[1], f.DefValue)
	}
	fl.VisitAll(func(f *pflag.Flag) {
		if !seen[f.Name] && f.Name != "help" {
			t.Errorf("README.md does not document ralph run --%s", f.Name)
		}
	})

	// The flags that are not config keys are the ones the README and
	// `ralph run --help` name as such.
	var others []string
	fl.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !slices.ContainsFunc(config.Flags("run"), func(k config.FlagDoc) bool { return k.Name == f.Name }) {
			others = append(others, "--"+f.Name)
		}
	})
	sentence := regexp.MustCompile(`Every flag but (.*?) is also a key`)
	for what, text := range map[string]string{"README.md": doc, "ralph run --help": runLong} {
		m := sentence.FindStringSubmatch(strings.Join(strings.Fields(text), " "))
		if m == nil {
			t.Errorf("%s does not say which flags are not config keys (Every flag but ... is also a key)", what)
			continue
		}
		named := regexp.MustCompile(`--[a-z-]+`).FindAllString(m[1], -1)
		slices.Sort(named)
		if diff := cmp.Diff(others, named); diff != "" {
			t.Errorf("%s: the flags that are not config keys (-code +doc):\n%s", what, diff)
		}
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

func TestReadmeAgents(t *testing.T) {
	t.Parallel()
	var names []string
	for _, row := range mdTable(t, readme(t), "## Agents") {
		names = append(names, strings.Trim(row[0], "`"))
	}
	if diff := cmp.Diff(agent.Names(), names); diff != "" {
		t.Errorf("README.md's agents table does not list agent.Names() (-code +README):\n%s", diff)
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

func TestReadmeOutcomes(t *testing.T) {
	t.Parallel()
	outcomes := constants(t, filepath.Join("..", "state", "outcome.go"), "Outcome")
	seen := map[string]bool{}
	for _, row := range mdTable(t, readme(t), "## How an iteration is judged") {
		if len(row) != 3 {
			t.Errorf("README.md outcomes: want outcome | when | attempt, got %q", row)
			continue
		}
		o := strings.Trim(row[0], "`")
		seen[o] = true
		if _, ok := outcomes[o]; !ok {
			t.Errorf("README.md documents outcome %q, which internal/state/outcome.go does not have", o)
			continue
		}
		attempt := strings.HasPrefix(row[2], "yes")
		if !attempt && !strings.HasPrefix(row[2], "no") {
			t.Errorf("README.md: outcome %s: attempt %q, want yes or no", o, row[2])
		}
		if counts := state.Outcome(o).CountsAsAttempt(); attempt != counts {
			t.Errorf("README.md: outcome %s: attempt %q, state's CountsAsAttempt is %v", o, row[2], counts)
		}
	}
	for o, name := range outcomes {
		if !seen[o] {
			t.Errorf("README.md does not document outcome %q (loop.%s)", o, name)
		}
	}
}

func TestReadmeExitCodes(t *testing.T) {
	t.Parallel()
	codes := constants(t, "main.go", "Exit")
	var got, want []string
	for _, row := range mdTable(t, readme(t), "### Exit codes") {
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
		t.Errorf("README.md's exit codes are not main.go's Exit* constants (-code +README):\n%s", diff)
	}
	// `ralph run --help` lists them too.
	for _, c := range want {
		if !regexp.MustCompile(`(?m)^  ` + c + ` +\S`).MatchString(runLong) {
			t.Errorf("ralph run --help does not list exit code %s", c)
		}
	}
}

// TestReadmeCodeLayout: every package under internal/ has a row in the
// README's code layout, and every package a row names exists.
func TestReadmeCodeLayout(t *testing.T) {
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
	for _, row := range mdTable(t, readme(t), "## Code layout") {
		for _, m := range regexp.MustCompile("`(internal/[a-z]+)`").FindAllStringSubmatch(row[0], -1) {
			named = append(named, m[1])
		}
	}
	slices.Sort(named)
	if diff := cmp.Diff(have, named); diff != "" {
		t.Errorf("README.md code layout vs internal/ (-packages +README):\n%s", diff)
	}
}
