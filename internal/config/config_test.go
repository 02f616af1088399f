package config

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pelletier/go-toml/v2"
)

// writeFile writes a config file in a temp dir and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// layerValues are three valid, distinct values per key, as the environment
// writes them, for the user file, the project file and the environment.
var layerValues = map[string][3]string{
	"tasks":               {"u.json", "p.json", "e.json"},
	"agent":               {"codex", "gemini", "amp"},
	"model":               {"m1", "m2", "m3"},
	"prompt":              {"u.md", "p.md", "e.md"},
	"max-iterations":      {"1", "2", "3"},
	"max-attempts":        {"4", "5", "6"},
	"timeout":             {"1m", "2m", "3m"},
	"idle-timeout":        {"1s", "2s", "3s"},
	"max-wait":            {"1h", "2h", "3h"},
	"delay":               {"1ms", "2ms", "3ms"},
	"budget":              {"1.5", "2.5", "3.5"},
	"ownership":           {"agent", "runner", "agent"},
	"completion":          {"heuristic", "relaxed-tag,promise-tag", "promise-tag,heuristic"},
	"no-commit":           {"true", "false", "true"},
	"parallel":            {"2", "3", "4"},
	"grace":               {"10s", "20s", "30s"},
	"stuck-threshold":     {"7", "8", "9"},
	"max-tokens":          {"1000", "2000", "3000"},
	"transcript-max":      {"10", "20", "30"},
	"transcript-max-run":  {"100", "200", "300"},
	"gates.commands":      {"make test", "go test ./...,go vet ./...", "make check"},
	"gates.timeout":       {"1m", "2m", "3m"},
	"commit-template":     {"feat: {{.ID}}", "{{.ID}}: {{.Title}}", "chore({{.ID}}): {{.Title}}"},
	"allow-dirty":         {"true", "false", "true"},
	"allow-no-repo":       {"true", "false", "true"},
	"allow-failing-gates": {"true", "false", "true"},
	"guard":               {"strict", "off", "warn"},
	"quota-reserve":       {"10", "20.5", "30"},
	"quota-windows":       {"seven_day", "five_hour,seven_day", "seven_day_opus"},
	"quota-action":        {"stop", "wait", "stop"},
	"fallback":            {"codex", "codex:gpt-5,gemini", "amp"},
	"fallback-after":      {"1m", "2m", "3m"},
	"escalate":            {"opus", "sonnet,opus", "codex:gpt-5"},
	"escalate-after":      {"2", "3", "4"},
	"allowed-agents":      {"codex", "gemini,amp", "kiro"},
	"allowed-models":      {"opus", "sonnet,opus", "gpt-5"},

	"review.when":         {"task", "end", "both"},
	"review.agent":        {"codex", "claude", "command"},
	"review.model":        {"r1", "r2", "r3"},
	"review.fallback":     {"codex", "gemini,amp:m", "claude:opus"},
	"review.prompt":       {"r1.md", "r2.md", "r3.md"},
	"review.max-attempts": {"1", "3", "4"},
	"review.timeout":      {"1m", "2m", "3m"},
	"review.focus":        {"tests", "security,tests", "documentation"},
	"review.rounds":       {"1", "3", "4"},

	"sandbox.mode":        {"bwrap", "none", "sandbox-exec"},
	"sandbox.allow-write": {"~/a", "~/b,/c", "/d"},
	"sandbox.deny":        {"~/x", "~/y,/z", ".env"},
	"sandbox.network":     {"off", "open", "off"},
	"sandbox.allow-hosts": {"a.example", "b.example,*.c.example", "10.0.0.0/8"},
	"sandbox.env":         {"A", "B,C*", "D"},
	"sandbox.caches":      {"~/.cache/bazel", "~/a,/b", "$X/c"},
	"sandbox.cache-max":   {"100", "200", "300"},
	"worker.remote":       {"up", "down", "side"},
	"worker.lease":        {"1m", "2m", "3m"},
	"worker.id":           {"w1", "w2", "w3"},

	"notify.events":           {"started", "task_done,completed", "stopped"},
	"notify.timeout":          {"1s", "2s", "3s"},
	"notify.retries":          {"0", "1", "2"},
	"notify.slack-webhook":    {"https://a.example/1", "https://a.example/2", "https://a.example/3"},
	"notify.discord-webhook":  {"https://b.example/1", "https://b.example/2", "https://b.example/3"},
	"notify.telegram-token":   {"1:a", "2:b", "3:c"},
	"notify.telegram-chat-id": {"1", "2", "3"},
	"notify.telegram-api":     {"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"},
	"notify.ntfy-server":      {"https://n1.example", "https://n2.example", "https://n3.example"},
	"notify.ntfy-topic":       {"t1", "t2", "t3"},
	"notify.ntfy-token":       {"tk1", "tk2", "tk3"},
	"notify.webhook-url":      {"https://w.example/1", "https://w.example/2", "https://w.example/3"},
	"notify.webhook-headers":  {"A: 1", "B: 2,C: 3", "D: 4"},
	"notify.command":          {"echo 1", "echo 2", "echo 3"},
	"notify.sandbox":          {"true", "false", "true"},
	"notify.env":              {"A", "B,C*", "D"},

	"github.label":     {"l1", "l2", "l3"},
	"github.milestone": {"m1", "2", "*"},
	"github.assignee":  {"a", "b", "none"},
	"github.api-url":   {"https://g1.example/api/v3/", "https://g2.example/api/v3/", "http://127.0.0.1:3/api/v3/"},
	"github.repo":      {"o/r1", "o/r2", "o/r3"},
	"github.remote":    {"up", "origin", "fork"},
	"github.base":      {"main", "dev", "next"},
	"github.pr":        {"true", "false", "true"},
}

// tomlLine writes key = value in TOML, from the environment form.
func tomlLine(t *testing.T, key, value string) string {
	t.Helper()
	f, ok := lookupField(key)
	if !ok {
		t.Fatalf("no key %q", key)
	}
	d := Defaults()
	ptr := f.ptr(&d)
	if problem := parseValue(ptr, value); problem != "" {
		t.Fatalf("%s = %q: %s", key, value, problem)
	}
	return key + " = " + formatValue(ptr) + "\n"
}

func TestLoadPrecedencePerKey(t *testing.T) {
	t.Parallel()
	const user, project, env = 0, 1, 2
	for _, kd := range Keys() {
		if kd.Key == "agents" || kd.Key == "prices" {
			continue
		}
		vals, ok := layerValues[kd.Key]
		if !ok {
			t.Fatalf("no test values for key %q", kd.Key)
		}
		// want returns the defaults with key set to the value of one layer;
		// -1 means the defaults.
		want := func(layer int) Config {
			c := Defaults()
			if layer >= 0 {
				if err := c.Set(kd.Key, vals[layer]); err != nil {
					t.Fatal(err)
				}
			}
			return c
		}
		other := "# another key, so the file is not empty\nmodel = \"other\"\n"
		if kd.Key == "model" {
			other = "tasks = \"other\"\n"
		}
		withOther := func(c Config) Config {
			if kd.Key == "model" {
				c.Tasks = "other"
			} else {
				c.Model = "other"
			}
			return c
		}
		tests := []struct {
			name          string
			user, project string
			environ       []string
			want          Config
		}{
			{"defaults", "", "", nil, want(-1)},
			{"user", tomlLine(t, kd.Key, vals[user]), "", nil, want(user)},
			{"project over user", tomlLine(t, kd.Key, vals[user]), tomlLine(t, kd.Key, vals[project]), nil, want(project)},
			{"env over project", tomlLine(t, kd.Key, vals[user]), tomlLine(t, kd.Key, vals[project]),
				[]string{kd.Env + "=" + vals[env]}, want(env)},
			{"env over defaults", "", "", []string{kd.Env + "=" + vals[env]}, want(env)},
			{"absent in project keeps user", tomlLine(t, kd.Key, vals[user]), other, nil, withOther(want(user))},
			{"absent in user, set in project", other, tomlLine(t, kd.Key, vals[project]), nil, withOther(want(project))},
			{"empty env keeps project", "", tomlLine(t, kd.Key, vals[project]), []string{kd.Env + "="}, want(project)},
		}
		for _, tt := range tests {
			t.Run(kd.Key+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				opts := LoadOptions{Environ: tt.environ}
				if tt.user != "" {
					opts.UserFile = writeFile(t, "config.toml", tt.user)
				}
				if tt.project != "" {
					opts.ProjectFile = writeFile(t, "ralph.toml", tt.project)
				}
				got, err := Load(opts)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Load mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestLoadLayers(t *testing.T) {
	t.Parallel()
	user := writeFile(t, "config.toml", `
model = "u"
max-iterations = 10
timeout = "1m"
completion = ["relaxed-tag"]
no-commit = true
budget = 1.5
`)
	project := writeFile(t, "ralph.toml", `
max-iterations = 20
timeout = "2m"
no-commit = false
`)
	got, err := Load(LoadOptions{
		UserFile:    user,
		ProjectFile: project,
		Environ:     []string{"RALPH_TIMEOUT=3m", "RALPH_BUDGET=2", "RALPH_BUDGET=2.25", "HOME=/x", "RALPH_UNRELATED=1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.Model = "u"
	want.MaxIterations = 20
	want.Timeout = Duration(3 * time.Minute)
	want.Completion = []string{"relaxed-tag"}
	want.NoCommit = false
	want.Budget = 2.25
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadAgentsMerge(t *testing.T) {
	t.Parallel()
	user := writeFile(t, "config.toml", `
[agents.codex]
command = "/u/codex"
args = ["exec", "--json"]
env = { A = "1", B = "1" }

[agents.claude]
extra-args = ["--x"]

[agents.codex.error-patterns]
fatal = ["not logged in"]
usage_limit = ["quota"]
`)
	project := writeFile(t, "ralph.toml", `
[agents.codex]
extra-args = ["--y"]
error-patterns.usage_limit = ["plan limit", "credits"]

[agents.codex.env]
B = "2"

[agents]
gemini.command = "g"
claude = { output = "claude-stream-json" }
"my.agent" = {}
`)
	got, err := Load(LoadOptions{UserFile: user, ProjectFile: project, Environ: []string{"RALPH_AGENTS=x"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]AgentConfig{
		"codex": {
			Command:   "/u/codex",
			Args:      []string{"exec", "--json"},
			ExtraArgs: []string{"--y"},
			Env:       map[string]string{"A": "1", "B": "2"},
			ErrorPatterns: map[string][]string{
				"fatal":       {"not logged in"},
				"usage_limit": {"plan limit", "credits"},
			},
		},
		"claude":   {ExtraArgs: []string{"--x"}, Output: "claude-stream-json"},
		"gemini":   {Command: "g"},
		"my.agent": {},
	}
	if diff := cmp.Diff(want, got.Agents); diff != "" {
		t.Errorf("agents mismatch (-want +got):\n%s", diff)
	}
}

func TestFileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, want string
	}{
		{"unknown key", "\n# comment\nmax_iteration = 3\n",
			`ralph.toml:3: unknown key "max_iteration" (did you mean "max-iterations"?)`},
		{"unknown key, no suggestion", "colour = 1\n",
			`ralph.toml:1: unknown key "colour"`},
		{"unknown key, contained", "iterations = 1\n",
			`ralph.toml:1: unknown key "iterations" (did you mean "max-iterations"?)`},
		{"unknown table", "[zzz]\nq = 1\n",
			`ralph.toml:1: unknown key "zzz"`},
		{"network, not a mode", "[sandbox]\nnetwork = \"closed\"\n",
			`ralph.toml:2: sandbox.network: want proxy, open or off, got "closed"`},
		{"network, a number", "[sandbox]\nnetwork = 1\n",
			`ralph.toml:2: sandbox.network: want "proxy", "open" or "off" (or true, false), got an integer`},
		{"allow-hosts, a bad entry", "[sandbox]\nallow-hosts = [\"ok.example\", \"a b\"]\n",
			`ralph.toml:2: sandbox.allow-hosts: "a b": "a b" is not a host name (' ' is not allowed; write names in other scripts in their xn-- form)`},
		{"unknown agent key", "[agents.codex]\ncomand = \"x\"\n",
			`ralph.toml:2: unknown key "agents.codex.comand" (did you mean "command"?)`},
		{"key in capitals", "MODEL = \"x\"\n",
			`ralph.toml:1: unknown key "MODEL" (did you mean "model"?)`},
		{"key in capitals with a type error", "Timeout = 5\n",
			`ralph.toml:1: unknown key "Timeout" (did you mean "timeout"?)`},
		{"agents in capitals", "[Agents.codex]\ncommand = \"x\"\n",
			`ralph.toml:1: unknown key "Agents" (did you mean "agents"?)`},
		{"agent key in capitals", "[agents.codex]\nCommand = \"x\"\n",
			`ralph.toml:2: unknown key "agents.codex.Command" (did you mean "command"?)`},
		{"several unknown keys", "modle = \"x\"\n\nparralel = 2\n",
			"ralph.toml:1: unknown key \"modle\" (did you mean \"model\"?)\n" +
				"ralph.toml:3: unknown key \"parralel\" (did you mean \"parallel\"?)"},
		{"wrong type", "agent = \"claude\"\n\n\n\nmax-iterations = \"ten\"\n",
			`ralph.toml:5: max-iterations: want an integer, got a string`},
		{"float for integer", "parallel = 1.5\n",
			`ralph.toml:1: parallel: want an integer, got a float`},
		{"string for bool", "no-commit = \"yes\"\n",
			`ralph.toml:1: no-commit: want true or false, got a string`},
		{"array for string", "tasks = [\"a\"]\n",
			`ralph.toml:1: tasks: want a string, got an array`},
		{"string for list", "completion = \"promise-tag\"\n",
			`ralph.toml:1: completion: want a list of strings, got a string`},
		{"list of integers", "completion = [\n  \"promise-tag\",\n  1,\n]\n",
			`ralph.toml:1: completion: want a list of strings, got a list holding an integer`},
		{"date for string", "model = 1979-05-27\n",
			`ralph.toml:1: model: want a string, got a date`},
		{"table for string", "[agent]\nname = \"x\"\n",
			`ralph.toml:1: agent: want a string, got a table`},
		{"dotted key below a string", "agent.name = \"x\"\n",
			`ralph.toml:1: agent: want a string, got a table`},
		{"bad duration", "\n\n\n\n\ntimeout = \"5 minutes\"\n",
			`ralph.toml:6: timeout: "5 minutes" is not a duration (use 90s, 15m, 1h)`},
		{"integer duration", "idle-timeout = 90\n",
			`ralph.toml:1: idle-timeout: want a duration string (90s, 15m, 1h), got an integer`},
		{"negative duration", "grace = \"-1s\"\n",
			`ralph.toml:1: grace: want 0 or more, got -1s`},
		{"bad ownership", "ownership = \"me\"\n",
			`ralph.toml:1: ownership: want runner or agent, got "me"`},
		{"bad strategy", "completion = [\"promise-tag\", \"regex\"]\n",
			`ralph.toml:1: completion: unknown strategy "regex" (valid: promise-tag, relaxed-tag, heuristic)`},
		{"no strategy", "completion = []\n",
			`ralph.toml:1: completion: want at least one of promise-tag, relaxed-tag, heuristic`},
		{"zero attempts", "max-attempts = 0\n",
			`ralph.toml:1: max-attempts: want at least 1, got 0`},
		{"negative iterations", "max-iterations = -1\n",
			`ralph.toml:1: max-iterations: want 0 or more, got -1`},
		{"zero parallel", "parallel = 0\n",
			`ralph.toml:1: parallel: want at least 1, got 0`},
		{"negative budget", "budget = -0.5\n",
			`ralph.toml:1: budget: want 0 or more, got -0.5`},
		{"nan budget", "budget = nan\n",
			`ralph.toml:1: budget: want 0 or more, got NaN`},
		{"empty agent", "agent = \"\"\n",
			`ralph.toml:1: agent: must not be empty`},
		{"bad output", "[agents.codex]\noutput = \"json\"\n",
			`ralph.toml:2: agents.codex.output: want text, claude-stream-json, codex-json, gemini-stream-json, opencode-json, droid-stream-json, copilot-json or cursor-stream-json, got "json"`},
		{"agent output type", "[agents.codex]\noutput = 3\n",
			`ralph.toml:2: agents.codex.output: want a string, got an integer`},
		{"agent env type", "[agents]\ncodex.env.KEY = 1\n",
			`ralph.toml:2: agents.codex.env.KEY: want a string, got an integer`},
		{"error pattern kind", "[agents.codex.error-patterns]\nslow = [\"x\"]\n",
			`ralph.toml:2: agents.codex.error-patterns.slow: unknown error kind "slow" (valid: usage_limit, rate_limit, transient, fatal)`},
		{"error pattern regexp", "[agents.codex.error-patterns]\nfatal = [\"a(\"]\n",
			"ralph.toml:2: agents.codex.error-patterns.fatal: \"a(\" is not a regular expression: error parsing regexp: missing closing ): `a(`"},
		{"error pattern type", "[agents.codex]\nerror-patterns.fatal = \"x\"\n",
			`ralph.toml:2: agents.codex.error-patterns.fatal: want a list of strings, got a string`},
		{"agent not a table", "agents.codex = \"x\"\n",
			`ralph.toml:1: agents.codex: want a table, got a string`},
		{"agents array of tables", "[[agents]]\ncommand = \"x\"\n",
			`ralph.toml:1: agents: want a table, got an array of tables`},
		{"agent name with a dot", "[agents.\"a.b\"]\nargs = \"x\"\n",
			`ralph.toml:2: agents."a.b".args: want a list of strings, got a string`},
		{"several problems, in line order", "timeout = 5\nmodel = 2\n",
			"ralph.toml:1: timeout: want a duration string (90s, 15m, 1h), got an integer\n" +
				"ralph.toml:2: model: want a string, got an integer"},
		{"syntax error", "model = \"x\"\nagent = = 1\n",
			`ralph.toml:2: unexpected character U+003D '=' at start of value`},
		{"unterminated string", "model = 'x\n",
			`ralph.toml:1: literal strings cannot have new lines`},
		{"key defined twice", "model = \"a\"\nmodel = \"b\"\n",
			`ralph.toml:2: key model is already defined`},
		{"table defined twice", "[agents.codex]\n[agents.codex]\n",
			`ralph.toml:2: table codex already exists`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Defaults()
			err := c.applyFile("ralph.toml", []byte(tt.doc)).err()
			if diff := cmp.Diff(tt.want, errString(err)); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(Defaults(), c); diff != "" {
				t.Errorf("config changed despite the error (-want +got):\n%s", diff)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "ralph.toml" || e.Line < 1 {
				t.Errorf("errors.As(%v) = %+v, want an *Error with file and line", err, e)
			}
		})
	}
}

// sandbox.network reads a TOML boolean as the modes it meant: true the
// network on (through the proxy), false off.
func TestNetworkAcceptsBooleans(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]Network{
		"[sandbox]\nnetwork = true\n":      NetworkProxy,
		"[sandbox]\nnetwork = false\n":     NetworkOff,
		"sandbox = { network = 'open' }\n": NetworkOpen,
		"[sandbox]\nnetwork = \"proxy\"\n": NetworkProxy,
	} {
		c := Defaults()
		c.Sandbox.Network = ""
		if err := c.applyFile("ralph.toml", []byte(doc)).err(); err != nil || c.Sandbox.Network != want {
			t.Errorf("%q: network %q (%v), want %q", doc, c.Sandbox.Network, err, want)
		}
	}
}

func TestFileAccepts(t *testing.T) {
	t.Parallel()
	doc := "\uFEFF" + `# every form a user may write
tasks = 'prd.json'
"model" = "opus"
budget = 3
completion = ["Relaxed-Tag", "promise-tag"]
timeout = "1h30m"
max-wait = "0s"
agents = { codex = { env = { K = "v" } } }
`
	c := Defaults()
	if err := c.applyFile("ralph.toml", []byte(doc)).err(); err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.Tasks = "prd.json"
	want.Model = "opus"
	want.Budget = 3
	want.Completion = []string{"Relaxed-Tag", "promise-tag"}
	want.Timeout = Duration(90 * time.Minute)
	want.MaxWait = 0
	want.Agents = map[string]AgentConfig{"codex": {Env: map[string]string{"K": "v"}}}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	user := writeFile(t, "config.toml", "parallel = 0\n")
	project := writeFile(t, "ralph.toml", "\nmodel = 1\n")
	_, err := Load(LoadOptions{
		UserFile:    user,
		ProjectFile: project,
		Environ:     []string{"RALPH_MAX_ITERATIONS=ten"},
	})
	want := []string{
		user + ":1: parallel: want at least 1, got 0",
		project + ":2: model: want a string, got an integer",
		`RALPH_MAX_ITERATIONS: want an integer, got "ten"`,
	}
	got := strings.Split(errString(err), "\n")
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadMissingFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.toml")

	got, err := Load(LoadOptions{UserFile: missing, ProjectFile: missing})
	if err != nil {
		t.Fatalf("missing optional files: %v", err)
	}
	if diff := cmp.Diff(Defaults(), got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}

	_, err = Load(LoadOptions{ProjectFile: missing, ProjectFileRequired: true})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(errString(err), missing) {
		t.Errorf("missing required file: got %v, want a not-exist error naming %s", err, missing)
	}

	_, err = Load(LoadOptions{ProjectFile: dir})
	if err == nil {
		t.Errorf("directory as config file: no error")
	}
}

func TestEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		environ []string
		set     func(*Config)
		wantErr string
	}{
		{"string", []string{"RALPH_AGENT=codex", "RALPH_MODEL=gpt-5 high"}, func(c *Config) { c.Agent = "codex"; c.Model = "gpt-5 high" }, ""},
		{"integer", []string{"RALPH_MAX_ITERATIONS= 7 "}, func(c *Config) { c.MaxIterations = 7 }, ""},
		{"duration", []string{"RALPH_IDLE_TIMEOUT=90s"}, func(c *Config) { c.IdleTimeout = Duration(90 * time.Second) }, ""},
		{"bool 1", []string{"RALPH_NO_COMMIT=1"}, func(c *Config) { c.NoCommit = true }, ""},
		{"bool yes", []string{"RALPH_NO_COMMIT=YES"}, func(c *Config) { c.NoCommit = true }, ""},
		{"bool false", []string{"RALPH_NO_COMMIT=false"}, func(c *Config) {}, ""},
		{"number", []string{"RALPH_BUDGET=$2.50"}, func(c *Config) { c.Budget = 2.5 }, ""},
		{"list", []string{"RALPH_COMPLETION= relaxed-tag, heuristic ,"}, func(c *Config) { c.Completion = []string{"relaxed-tag", "heuristic"} }, ""},
		{"last wins", []string{"RALPH_PARALLEL=2", "RALPH_PARALLEL=3"}, func(c *Config) { c.Parallel = 3 }, ""},
		{"empty is unset", []string{"RALPH_PARALLEL=2", "RALPH_PARALLEL="}, func(c *Config) {}, ""},
		{"dash key", []string{"RALPH_STUCK_THRESHOLD=0"}, func(c *Config) { c.Stuck = 0 }, ""},
		{"not a config key", []string{"RALPH_DEBUG=1", "RALPH_ITERATION=3", "ralph_agent=x"}, func(c *Config) {}, ""},

		{"bad integer", []string{"RALPH_MAX_ITERATIONS=ten"}, nil, `RALPH_MAX_ITERATIONS: want an integer, got "ten"`},
		{"bad bool", []string{"RALPH_NO_COMMIT=maybe"}, nil, `RALPH_NO_COMMIT: want true or false, got "maybe"`},
		{"bad number", []string{"RALPH_BUDGET=lots"}, nil, `RALPH_BUDGET: want a number, got "lots"`},
		{"bare number duration", []string{"RALPH_TIMEOUT=5"}, nil, `RALPH_TIMEOUT: "5" is not a duration (use 90s, 15m, 1h)`},
		{"bad duration", []string{"RALPH_MAX_WAIT=5 minutes"}, nil, `RALPH_MAX_WAIT: "5 minutes" is not a duration (use 90s, 15m, 1h)`},
		{"bad strategy", []string{"RALPH_COMPLETION=promise-tag,regex"}, nil, `RALPH_COMPLETION: unknown strategy "regex" (valid: promise-tag, relaxed-tag, heuristic)`},
		{"only commas", []string{"RALPH_COMPLETION=,"}, nil, `RALPH_COMPLETION: want at least one of promise-tag, relaxed-tag, heuristic`},
		{"bad ownership", []string{"RALPH_OWNERSHIP=me"}, nil, `RALPH_OWNERSHIP: want runner or agent, got "me"`},
		{"out of range", []string{"RALPH_MAX_ATTEMPTS=0"}, nil, `RALPH_MAX_ATTEMPTS: want at least 1, got 0`},
		{"several", []string{"RALPH_PARALLEL=x", "RALPH_AGENT= "}, nil,
			"RALPH_AGENT: must not be empty\nRALPH_PARALLEL: want an integer, got \"x\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Load(LoadOptions{Environ: tt.environ})
			gotErr := errString(err)
			if tt.wantErr != "" {
				// Errors come in key order; compare them as a set.
				w, g := strings.Split(tt.wantErr, "\n"), strings.Split(gotErr, "\n")
				slices.Sort(w)
				slices.Sort(g)
				if diff := cmp.Diff(w, g); diff != "" {
					t.Errorf("error mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Defaults()
			tt.set(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSet(t *testing.T) {
	t.Parallel()
	c := Defaults()
	if err := c.Set("max-iterations", "12"); err != nil {
		t.Fatal(err)
	}
	if c.MaxIterations != 12 {
		t.Errorf("MaxIterations = %d, want 12", c.MaxIterations)
	}
	tests := []struct{ key, value, want string }{
		{"max_iterations", "3", `unknown key "max_iterations" (did you mean "max-iterations"?)`},
		{"attempts", "3", `unknown key "attempts" (did you mean "max-attempts"?)`},
		{"agents", "x", `agents: set in a config file only`},
		{"max-iterations", "ten", `max-iterations: want an integer, got "ten"`},
		{"timeout", "-1s", `timeout: want 0 or more, got -1s`},
		{"ownership", "both", `ownership: want runner or agent, got "both"`},
	}
	for _, tt := range tests {
		before := c
		if diff := cmp.Diff(tt.want, errString(c.Set(tt.key, tt.value))); diff != "" {
			t.Errorf("Set(%q, %q) error mismatch (-want +got):\n%s", tt.key, tt.value, diff)
		}
		if diff := cmp.Diff(before, c); diff != "" {
			t.Errorf("Set(%q, %q) changed the config despite the error:\n%s", tt.key, tt.value, diff)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"defaults", func(c *Config) {}, ""},
		{"all strategies", func(c *Config) { c.Completion = []string{"heuristic", "relaxed-tag", "promise-tag"} }, ""},
		{"agent ownership", func(c *Config) { c.Ownership = "agent" }, ""},
		{"zero limits", func(c *Config) { c.MaxIterations, c.Stuck, c.Timeout, c.Budget = 0, 0, 0, 0 }, ""},
		{"agent outputs", func(c *Config) {
			c.Agents = map[string]AgentConfig{"a": {Output: "text"}, "b": {Output: "claude-stream-json"}, "c": {}}
		}, ""},
		{"ownership", func(c *Config) { c.Ownership = "" }, `ownership: want runner or agent, got ""`},
		{"strategy", func(c *Config) { c.Completion = []string{"promise"} }, `completion: unknown strategy "promise" (valid: promise-tag, relaxed-tag, heuristic)`},
		{"no strategy", func(c *Config) { c.Completion = nil }, `completion: want at least one of promise-tag, relaxed-tag, heuristic`},
		{"negative iterations", func(c *Config) { c.MaxIterations = -1 }, `max-iterations: want 0 or more, got -1`},
		{"attempts", func(c *Config) { c.MaxAttempts = 0 }, `max-attempts: want at least 1, got 0`},
		{"parallel", func(c *Config) { c.Parallel = 0 }, `parallel: want at least 1, got 0`},
		{"stuck", func(c *Config) { c.Stuck = -2 }, `stuck-threshold: want 0 or more, got -2`},
		{"idle timeout", func(c *Config) { c.IdleTimeout = Duration(-time.Minute) }, `idle-timeout: want 0 or more, got -1m`},
		{"budget", func(c *Config) { c.Budget = -1 }, `budget: want 0 or more, got -1`},
		{"agent", func(c *Config) { c.Agent = "" }, `agent: must not be empty`},
		{"output", func(c *Config) { c.Agents = map[string]AgentConfig{"x": {Output: "json"}} },
			`agents.x.output: want text, claude-stream-json, codex-json, gemini-stream-json, opencode-json, droid-stream-json, copilot-json or cursor-stream-json, got "json"`},
		{"error patterns", func(c *Config) {
			c.Agents = map[string]AgentConfig{"x": {ErrorPatterns: map[string][]string{"fatal": {"ok", "("}, "slow": {"x"}}}}
		}, "agents.x.error-patterns.fatal: \"(\" is not a regular expression: error parsing regexp: missing closing ): `(`\n" +
			`agents.x.error-patterns.slow: unknown error kind "slow" (valid: usage_limit, rate_limit, transient, fatal)`},
		{"several", func(c *Config) { c.Parallel, c.MaxAttempts = 0, 0 },
			"max-attempts: want at least 1, got 0\nparallel: want at least 1, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Defaults()
			tt.change(&c)
			if diff := cmp.Diff(tt.want, errString(c.Validate())); diff != "" {
				t.Errorf("Validate mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUserFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		environ []string
		want    string
	}{
		{[]string{"HOME=/home/u"}, "/home/u/.config/ralph/config.toml"},
		{[]string{"HOME=/home/u", "XDG_CONFIG_HOME=/cfg"}, "/cfg/ralph/config.toml"},
		{[]string{"HOME=/home/u", "XDG_CONFIG_HOME=relative"}, "/home/u/.config/ralph/config.toml"},
		{[]string{"HOME=/a", "HOME=/b"}, "/b/.config/ralph/config.toml"},
		{[]string{"XDG_CONFIG_HOME="}, ""},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := UserFile(tt.environ); got != tt.want {
			t.Errorf("UserFile(%q) = %q, want %q", tt.environ, got, tt.want)
		}
	}
}

// TestKeysCoverConfig pins that every field of Config is a documented key
// with its default, so a new field cannot be forgotten in the schema.
func TestKeysCoverConfig(t *testing.T) {
	t.Parallel()
	var tags []string
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("toml")
		if f.Type.Kind() != reflect.Struct {
			tags = append(tags, tag)
			continue
		}
		// A section: its keys are written section.key.
		for j := range f.Type.NumField() {
			tags = append(tags, tag+"."+f.Type.Field(j).Tag.Get("toml"))
		}
	}
	slices.Sort(tags)
	var keys []string
	for _, k := range Keys() {
		keys = append(keys, k.Key)
		if k.Doc == "" || k.Type == "" {
			t.Errorf("key %q: missing doc or type: %+v", k.Key, k)
		}
	}
	slices.Sort(keys)
	if diff := cmp.Diff(tags, keys); diff != "" {
		t.Errorf("Keys() does not match Config's toml tags (-tags +keys):\n%s", diff)
	}

	byKey := map[string]KeyDoc{}
	for _, k := range Keys() {
		byKey[k.Key] = k
	}
	want := map[string]KeyDoc{
		"max-iterations": {Key: "max-iterations", Env: "RALPH_MAX_ITERATIONS", Type: "integer", Default: "50"},
		"timeout":        {Key: "timeout", Env: "RALPH_TIMEOUT", Type: "duration", Default: `"30m"`},
		"max-wait":       {Key: "max-wait", Env: "RALPH_MAX_WAIT", Type: "duration", Default: `"6h"`},
		"completion":     {Key: "completion", Env: "RALPH_COMPLETION", Type: "list", Default: `["promise-tag"]`},
		"no-commit":      {Key: "no-commit", Env: "RALPH_NO_COMMIT", Type: "bool", Default: "false"},
		"budget":         {Key: "budget", Env: "RALPH_BUDGET", Type: "number", Default: "0"},
		"agent":          {Key: "agent", Env: "RALPH_AGENT", Type: "string", Default: `"claude"`},
		"agents":         {Key: "agents", Type: "table", Default: "{}"},
	}
	for key, w := range want {
		got := byKey[key]
		got.Doc = ""
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("Keys()[%q] mismatch (-want +got):\n%s", key, diff)
		}
	}

	// The defaults, written as a file, load back to the defaults.
	var doc strings.Builder
	for _, k := range Keys() {
		doc.WriteString(k.Key + " = " + k.Default + "\n")
	}
	c := Config{}
	if err := c.applyFile("defaults.toml", []byte(doc.String())).err(); err != nil {
		t.Fatalf("%v\n%s", err, doc.String())
	}
	if diff := cmp.Diff(Defaults(), c); diff != "" {
		t.Errorf("defaults round trip mismatch (-want +got):\n%s", diff)
	}
}

func TestDurationString(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                                     "0s",
		90 * time.Second:                      "1m30s",
		30 * time.Minute:                      "30m",
		6 * time.Hour:                         "6h",
		90 * time.Minute:                      "1h30m",
		time.Hour + time.Second:               "1h0m1s",
		1500 * time.Millisecond:               "1.5s",
		10*time.Minute + 500*time.Millisecond: "10m0.5s",
	} {
		if got := Duration(d).String(); got != want {
			t.Errorf("Duration(%v).String() = %q, want %q", d, got, want)
		}
		var back Duration
		if err := back.UnmarshalText([]byte(want)); err != nil || back != Duration(d) {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", want, back, err, d)
		}
	}
}

func FuzzLoadConfig(f *testing.F) {
	f.Add([]byte("max-iterations = 3\ntimeout = \"5m\"\n[agents.codex]\nargs = [\"x\"]\nenv = { A = \"b\" }\n"))
	f.Add([]byte("max_iteration = 3\n[zzz]\n"))
	f.Add([]byte("agents = { a = { b = { c = 1 } } }\n[[agents]]\n"))
	f.Add([]byte("completion = [1, \"a\"]\nbudget = nan\ntimeout = 5\n"))
	f.Add([]byte("x = = \n'unterminated"))
	f.Add([]byte("\uFEFFagent.x.y = 1979-05-27T07:32:00Z\n"))
	f.Add([]byte("MODEL = 'x'\n[Agents.A]\nCommand = 'y'\n[agents.b.Env]\nK = 'v'\n"))
	// Load reads the project file with os.ReadFile and hands the bytes to
	// applyFile; the fuzzer calls applyFile directly to stay in memory.
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Defaults()
		errs := c.applyFile("ralph.toml", data)
		if err := errs.err(); err != nil {
			// Every problem is located in the file, and nothing was applied.
			for _, e := range errs {
				if e.File != "ralph.toml" || e.Line < 0 {
					t.Fatalf("error %+v does not name the file", e)
				}
			}
			if diff := cmp.Diff(Defaults(), c); diff != "" {
				t.Fatalf("config changed despite %v:\n%s", err, diff)
			}
			return
		}
		// What loads is valid.
		if err := c.Validate(); err != nil {
			t.Fatalf("loaded config is invalid: %v\n%q", err, data)
		}
		// And it is what go-toml decodes onto the defaults: no key the
		// decoder understands is dropped.
		want := Defaults()
		if err := toml.Unmarshal(bytes.TrimPrefix(data, []byte("\uFEFF")), &want); err != nil {
			t.Fatalf("go-toml rejects what Load accepts: %v\n%q", err, data)
		}
		if diff := cmp.Diff(want, c, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("Load differs from go-toml (-toml +load):\n%s\n%q", diff, data)
		}
	})
}

func TestCommitTemplateChecked(t *testing.T) {
	t.Parallel()
	c := Defaults()
	if err := c.Set("commit-template", "feat: {{.ID"); err == nil || !strings.Contains(err.Error(), "commit-template: ") {
		t.Errorf("Set(bad template) = %v, want an error naming the key", err)
	}
	if err := c.Set("commit-template", " "); err == nil {
		t.Error("Set(empty template): no error")
	}
	if c.CommitTemplate != "feat: {{.ID}} - {{.Title}}" {
		t.Errorf("a rejected value changed the template to %q", c.CommitTemplate)
	}
}

func TestNotifyErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, want string }{
		{"unknown event", "[notify]\nevents = [\"started\", \"done\"]\n",
			`ralph.toml:2: notify.events: unknown event "done" (valid: started, task_done, task_failed, waiting_for_limit, agent_switched, question, completed, stopped)`},
		{"not a URL, not repeated", "[notify]\nslack-webhook = \"hooks.slack.com/services/SECRET\"\n",
			`ralph.toml:2: notify.slack-webhook: want an http:// or https:// URL`},
		{"unknown key", "[notify]\nslack = \"x\"\n",
			`ralph.toml:2: unknown key "notify.slack"`},
		{"header", "[notify]\nwebhook-headers = [\"no colon\"]\n",
			`ralph.toml:2: notify.webhook-headers: want "Name: value", got "no colon"`},
		{"negative retries", "[notify]\nretries = -1\n",
			`ralph.toml:2: notify.retries: want 0 or more, got -1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(LoadOptions{ProjectFile: writeFile(t, "ralph.toml", tc.file)})
			if got := errString(err); !strings.Contains(got, tc.want) {
				t.Errorf("error:\n got %s\nwant %s", got, tc.want)
			}
			if strings.Contains(errString(err), "SECRET") {
				t.Errorf("the error repeats the secret: %v", err)
			}
		})
	}
	// Secrets come from the environment too.
	c, err := Load(LoadOptions{Environ: []string{"RALPH_NOTIFY_TELEGRAM_TOKEN=123:abc", "RALPH_NOTIFY_EVENTS=completed,stopped"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Notify.TelegramToken != "123:abc" || !slices.Equal(c.Notify.Events, []string{"completed", "stopped"}) {
		t.Errorf("notify from the environment: %+v", c.Notify)
	}
}

func TestPricesMergePerModelAndKey(t *testing.T) {
	t.Parallel()
	user := writeFile(t, "user.toml", `
[prices."gpt-5.5"]
input = 4
output = 25
`)
	project := writeFile(t, "ralph.toml", `
[prices."gpt-5.5"]
output = 30

[prices.my-model]
input = 1
cache-read = 0.1
`)
	got, err := Load(LoadOptions{UserFile: user, ProjectFile: project})
	if err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	want := map[string]Price{
		"gpt-5.5":  {Input: f(4), Output: f(30)},
		"my-model": {Input: f(1), CacheRead: f(0.1)},
	}
	if diff := cmp.Diff(want, got.Prices); diff != "" {
		t.Errorf("prices mismatch (-want +got):\n%s", diff)
	}
}

func TestPricesErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, want string }{
		{"[prices.m]\ninputs = 1\n", `ralph.toml:2: unknown key "prices.m.inputs"`},
		{"[prices.m]\ninput = -1\n", "ralph.toml:2: prices.m: input: want 0 or more"},
		{"[prices.m]\ninput = \"1\"\n", "ralph.toml:2: prices.m.input: want a number"},
		{"quota-action = \"pause\"\n", "quota-action: want wait or stop"},
		{"quota-reserve = 100\n", "quota-reserve: want a percentage from 0 to below 100"},
	} {
		_, err := Load(LoadOptions{ProjectFile: writeFile(t, "ralph.toml", tc.file)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.file, err, tc.want)
		}
	}
}

// TestCheckFile: one file is checked as Load reads it, its problems with
// file and line.
func TestCheckFile(t *testing.T) {
	t.Parallel()
	if err := CheckFile("ralph.toml", []byte("agent = \"codex\"\n[gates]\ncommands = [\"go test ./...\"]\n")); err != nil {
		t.Errorf("a valid file: %v", err)
	}
	err := CheckFile("ralph.toml", []byte("agent = \"codex\"\nmax-iterations = \n"))
	if err == nil || !strings.HasPrefix(err.Error(), "ralph.toml:2:") {
		t.Errorf("a syntax error on line 2: %v, want it to start ralph.toml:2:", err)
	}
}

// TestCheckSecrets: a credential in a config file is named with its line
// and the variable to set instead; an empty one, or none, is no error.
func TestCheckSecrets(t *testing.T) {
	t.Parallel()
	err := CheckSecrets("ralph.toml", []byte("agent = \"codex\"\n[notify]\nslack-webhook = \"https://hooks.example/x\"\nntfy-token = \"\"\n"))
	want := "ralph.toml:3: notify.slack-webhook holds a secret: set it in the environment (RALPH_NOTIFY_SLACK_WEBHOOK) instead, and remove it from the file"
	if err == nil || err.Error() != want {
		t.Errorf("CheckSecrets = %v, want %q", err, want)
	}
	if err := CheckSecrets("ralph.toml", []byte("[notify]\nntfy-token = \"\"\nntfy-server = \"https://ntfy.sh\"\n")); err != nil {
		t.Errorf("no secret: %v", err)
	}
}
